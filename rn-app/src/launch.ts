/**
 * One launch: the production shape that meets onnxruntime#32461, phase by phase.
 *
 * `runLaunch` is plain TypeScript: the platform (how sessions are created, where the
 * models are, how to crash natively, the clock) is a parameter, so the same code runs in
 * the app (onnxruntime-react-native) and under Jest (onnxruntime-node).
 *
 * Phases and their fields (the protocol of `kit/protocol.py`; the host workload
 * `kit/workload/coldstart_workload.cpp` reports the same shape):
 *
 * - `start`: `scenario` (canonical URL), plus the platform's own fields (e.g. `platform`,
 *   `poison`);
 * - `models-ready`: `models` (names), `load` — after the model files were resolved to
 *   paths (copied out of the APK on Android) and the clip was read;
 * - `sessions-created`: `sessions` `[{i, model, start_ms, end_ms}]`, `eps`, `ort_version`
 *   (the native ORT that loaded), `mode`, `threads`, and `warmup` `{model, start_ms,
 *   end_ms}` for `warmup=cpu`;
 * - `inference-done` (`infer=1`): `scores`, `score`, `ok`, `max_diff`;
 * - `sessions-released` (`release=1`); `done`;
 * - `error`: `message` and `after` (the last phase reached) when anything fails.
 *
 * Scenario keys: `mode=concurrent` creates every session with `Promise.all` in one JS
 * turn (onnxruntime-react-native >= 1.24.1 runs each create on its own native thread);
 * `mode=serial` awaits them one by one (the known workaround, the negative control).
 * `load=bytes` is refused with an `error`: onnxruntime-react-native 1.24.x drops every
 * session option on buffer loads, so XNNPACK would silently not be used. `warmup=cpu`
 * creates one CPU-only session of the first model before the race and keeps it until
 * the release, as the host workload does. `log=verbose` sets the ORT environment's log level
 * to verbose before the first create (the binding reads it once, at its first session).
 * `inject=KIND@PHASE` crashes natively (`segv`,
 * `abort`) or stalls (`hang`) right after reporting PHASE: positive controls only.
 */
import type { InferenceSession } from 'onnxruntime-common';
import { formatEvent, type Fields, type JsonValue } from './protocol';
import { runPipeline, scoresMatch, ROLES, type Expected, type Role } from './pipeline';
import { toUrl, type Phase, type Scenario } from './scenario';

/** `InferenceSession.create(path, options)` of one ORT JavaScript binding. */
export type CreateSession = (
  path: string,
  options: InferenceSession.SessionOptions,
) => Promise<InferenceSession>;

/** What the launch needs from the platform it runs on. */
export interface Platform {
  /** Creates a session from a model file path. */
  readonly createSession: CreateSession;
  /** The native ORT version that actually loaded (`OrtApi.version` in the app). */
  ortVersion(): string;
  /** The model file's path on this device (copied out of the app bundle when needed). */
  resolveModel(name: string): Promise<string>;
  /** The clip's int16 samples `[N]`, 16 kHz mono. */
  loadClip(): Promise<Int16Array>;
  /** Model name -> pipeline role, from `models/manifest.json`. */
  readonly roles: Readonly<Record<string, Role>>;
  /** `models/expected.json`. */
  readonly expected: Expected;
  /**
   * Set the ORT environment's log level before the first session (`env.logLevel` of
   * onnxruntime-common, which the binding passes to `initOrtOnce`).
   */
  setOrtLogLevel(level: 'warning' | 'verbose'): void;
  /** Crash the process natively with SIGSEGV or abort(); does not return. */
  crash(kind: 'segv' | 'abort'): void;
  /** Milliseconds since the app's start (monotonic). */
  now(): number;
  /** Extra `start` fields, e.g. `{platform: 'android', poison: {...}}`. */
  readonly startFields?: Fields;
}

/** One reported phase: the parsed fields and the exact line printed. */
export interface PhaseReport {
  readonly id: string;
  readonly phase: Phase | 'error';
  readonly t_ms: number;
  readonly fields: Fields;
  readonly line: string;
}

/** Rounded to the microsecond, like the protocol's `t_ms`. */
function ms(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** Thrown for a scenario the app refuses; reported as `error`. */
export class LaunchRefused extends Error {}

interface Created {
  readonly model: string;
  readonly session: InferenceSession;
  readonly startMs: number;
  readonly endMs: number;
}

/**
 * Run one launch of `scenario` on `platform`, reporting every phase through `report`.
 *
 * Resolves after `done` or `error`; never resolves for `inject=hang@...`; for
 * `inject=segv|abort@...` the process dies inside `platform.crash`. Never rejects:
 * failures become an `error` report.
 *
 * @param scenario the parsed scenario; its `id` must be set (the launch id).
 * @param report receives each phase in order (the app prints `line` and shows it).
 * @returns the last report.
 */
export async function runLaunch(
  scenario: Scenario,
  platform: Platform,
  report: (r: PhaseReport) => void,
): Promise<PhaseReport> {
  const id = scenario.id ?? 'unknown';
  let last: PhaseReport | null = null;
  let reached: Phase | null = null;

  const emit = async (phase: Phase | 'error', fields: Fields = {}): Promise<void> => {
    const tMs = Math.max(0, platform.now());
    const line = formatEvent(id, phase, tMs, fields);
    last = { id, phase, t_ms: tMs, fields, line };
    report(last);
    if (phase === 'error') {
      return;
    }
    reached = phase;
    const inject = scenario.inject;
    if (inject !== null && inject.phase === phase) {
      if (inject.kind === 'hang') {
        await new Promise<never>(() => {});
      }
      platform.crash(inject.kind === 'segv' ? 'segv' : 'abort');
      throw new Error(`inject=${inject.kind}@${phase} did not end the process`);
    }
  };

  const created: Created[] = [];
  let warm: Created | null = null;
  try {
    await emit('start', { scenario: toUrl(scenario), ...(platform.startFields ?? {}) });
    if (scenario.load === 'bytes') {
      throw new LaunchRefused(
        'load=bytes is refused: onnxruntime-react-native 1.24.x drops every session option on ' +
          'buffer loads (executionProviders included), so XNNPACK would never be used; use load=path',
      );
    }

    const names = scenario.models;
    const paths: Record<string, string> = {};
    for (const name of names) {
      if (!(name in platform.roles)) {
        throw new LaunchRefused(
          `unknown model ${JSON.stringify(name)}: the app bundles ${Object.keys(platform.roles).join(', ')}`,
        );
      }
      paths[name] = await platform.resolveModel(name);
    }
    const samples = scenario.infer ? await platform.loadClip() : new Int16Array(0);
    await emit('models-ready', { models: [...names], load: scenario.load });

    platform.setOrtLogLevel(scenario.log);
    const options = (eps: readonly string[]): InferenceSession.SessionOptions => ({
      executionProviders: [...eps],
      intraOpNumThreads: scenario.threads,
    });
    const createOne = async (model: string, eps: readonly string[]): Promise<Created> => {
      const startMs = platform.now();
      const session = await platform.createSession(paths[model], options(eps));
      return { model, session, startMs, endMs: platform.now() };
    };
    if (scenario.warmup === 'cpu') {
      warm = await createOne(names[0], ['cpu']);
    }
    const order = Array.from({ length: scenario.sessions }, (_, i) => names[i % names.length]);
    if (scenario.mode === 'concurrent') {
      // The production shape: Promise.all over the creates, all started in this JS turn.
      // Each create's rejection is caught so the sessions that did load are still known.
      const results = await Promise.all(
        order.map(model =>
          createOne(model, scenario.ep).then(
            (c): { c: Created } | { err: unknown } => ({ c }),
            (err: unknown) => ({ err }),
          ),
        ),
      );
      for (const r of results) {
        if ('c' in r) {
          created.push(r.c);
        }
      }
      const failed = results.find((r): r is { err: unknown } => 'err' in r);
      if (failed) {
        throw failed.err;
      }
    } else {
      for (const model of order) {
        created.push(await createOne(model, scenario.ep));
      }
    }
    const createdFields: Fields = {
      sessions: created.map((c, i) => ({
        i,
        model: c.model,
        start_ms: ms(c.startMs),
        end_ms: ms(c.endMs),
      })),
      eps: [...scenario.ep],
      ort_version: platform.ortVersion(),
      mode: scenario.mode,
      threads: scenario.threads,
    };
    if (warm !== null) {
      const w: Created = warm;
      createdFields.warmup = { model: w.model, start_ms: ms(w.startMs), end_ms: ms(w.endMs) };
    }
    await emit('sessions-created', createdFields);

    if (scenario.infer) {
      const byRole = {} as Record<Role, InferenceSession>;
      for (const role of ROLES) {
        const c = created.find(x => platform.roles[x.model] === role);
        if (!c) {
          throw new LaunchRefused(`infer=1 needs a ${role} model among the scenario's models`);
        }
        byRole[role] = c.session;
      }
      const result = await runPipeline(byRole, samples);
      const match = scoresMatch(platform.expected, result.scores);
      const round7 = (x: number): number => Number(x.toFixed(7));
      await emit('inference-done', {
        scores: result.scores.map(round7),
        score: round7(result.score),
        ok: match.ok,
        max_diff: Number.isFinite(match.maxAbsDiff) ? Number(match.maxAbsDiff.toExponential(3)) : null,
      });
    }

    if (scenario.release) {
      const all = warm !== null ? [...created, warm] : [...created];
      created.length = 0;
      warm = null;
      if (scenario.mode === 'concurrent') {
        await Promise.all(all.map(c => c.session.release()));
      } else {
        for (const c of all) {
          await c.session.release();
        }
      }
      await emit('sessions-released');
    }
    await emit('done');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await emit('error', { message, after: (reached as JsonValue) ?? null });
  }
  return last as unknown as PhaseReport;
}

/**
 * Report a launch that cannot run at all (a refused deep link, a missing native module):
 * `start` then `error` with `message`, under launch id `id`.
 *
 * @param nowMs milliseconds since the app's start.
 * @returns the `error` report.
 */
export function reportRefused(
  id: string,
  message: string,
  nowMs: number,
  report: (r: PhaseReport) => void,
): PhaseReport {
  const tMs = Math.max(0, nowMs);
  const start: PhaseReport = {
    id, phase: 'start', t_ms: tMs, fields: {}, line: formatEvent(id, 'start', tMs),
  };
  report(start);
  const fields: Fields = { message, after: 'start' };
  const error: PhaseReport = {
    id, phase: 'error', t_ms: tMs, fields, line: formatEvent(id, 'error', tMs, fields),
  };
  report(error);
  return error;
}
