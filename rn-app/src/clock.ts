/**
 * The app's clock: `t_ms` in every protocol line is milliseconds since this module was
 * first evaluated, which index.js makes the first thing the JS bundle does.
 * `performance.now()` is monotonic (React Native and Node both provide it).
 */
const perf = (globalThis as unknown as { performance: { now(): number } }).performance;
const START_MS = perf.now();

/** Milliseconds since the JS bundle began to run (monotonic, >= 0). */
export function sinceStartMs(): number {
  return perf.now() - START_MS;
}
