/**
 * Waits for a condition of a rendered launch, polling inside React's `act()` so that the
 * launch's state updates are applied between looks.
 *
 * `timeoutMs` is a bound, not a speed: a launch through the real models takes about a second
 * on an idle machine and several on a loaded 2-core CI box, and a fixed number of polls
 * (200 x 25 ms) gave it only 5 s. It stays under Jest's `testTimeout` (jest.config.js), so a
 * launch that never ends fails the test's own assertions, which say what was seen.
 */
import ReactTestRenderer from 'react-test-renderer';

export async function waitUntil(done: () => boolean, timeoutMs = 90000, stepMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) {
    await ReactTestRenderer.act(async () => {
      await new Promise<void>(res => setTimeout(res, stepMs));
    });
  }
  return done();
}
