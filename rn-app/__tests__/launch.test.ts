/**
 * One launch end to end off-device: runLaunch with real onnxruntime-node sessions on the
 * real model set, checking every phase line against the kit's protocol and the shape of
 * concurrent vs serial creates.
 */
import type { InferenceSession } from 'onnxruntime-common';
import { runLaunch, reportRefused, type CreateSession, type PhaseReport } from '../src/launch';
import { parseLine, type Fields } from '../src/protocol';
import { parseScenario, PHASES, toUrl, type Scenario } from '../src/scenario';
import { FakeNativeCrash } from './doubles/FakeNativeCrash';
import { nodeCreateSession, nodePlatform, readExpected } from './support/nodePlatform';

// onnxruntime-node has no XNNPACK backend: onnxruntime-common warns and drops it. Keep the
// warnings (one test asserts them) out of the output.
let warnings: string[] = [];
beforeEach(() => {
  warnings = [];
  jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
    warnings.push(args.map(String).join(' '));
  });
});
afterEach(() => jest.restoreAllMocks());

function scenario(url: string): Scenario {
  const r = parseScenario(url);
  if (!r.ok) {
    throw new Error(r.reason);
  }
  return r.scenario;
}

interface CreateCall {
  path: string;
  options: InferenceSession.SessionOptions;
}

/** Runs one launch; returns the reports, the create calls seen, and the crash double. */
async function launch(url: string, wrap?: (real: CreateSession) => CreateSession) {
  const reports: PhaseReport[] = [];
  const calls: CreateCall[] = [];
  const crash = new FakeNativeCrash();
  const recording: CreateSession = (path, options) => {
    calls.push({ path, options });
    return nodeCreateSession(path, options);
  };
  const platform = nodePlatform({ crash: crash.crash, createSession: wrap ? wrap(recording) : recording });
  const last = await runLaunch(scenario(url), platform, r => reports.push(r));
  return { reports, calls, crash, last };
}

function byPhase(reports: PhaseReport[], phase: string): Fields {
  const r = reports.find(x => x.phase === phase);
  if (!r) {
    throw new Error(`no ${phase} in ${reports.map(x => x.phase).join(',')}`);
  }
  return r.fields;
}

interface Timing {
  i: number;
  model: string;
  start_ms: number;
  end_ms: number;
}

test('the default scenario reports every phase, in order, as valid protocol lines', async () => {
  const { reports, calls, last } = await launch('coldstart://run?id=J-00001');
  expect(reports.map(r => r.phase)).toEqual([...PHASES]);
  expect(last.phase).toBe('done');
  let previous = -1;
  for (const r of reports) {
    const parsed = parseLine(r.line);
    expect(parsed.reason).toBeNull();
    expect(parsed.event).toEqual({ v: 1, id: 'J-00001', phase: r.phase, t_ms: expect.any(Number), fields: r.fields });
    expect(parsed.event!.t_ms).toBeGreaterThanOrEqual(previous);
    previous = parsed.event!.t_ms;
  }
  expect(byPhase(reports, 'start')).toEqual({
    scenario: toUrl(scenario('coldstart://run?id=J-00001')),
    platform: 'node',
  });
  expect(byPhase(reports, 'models-ready')).toEqual({
    models: ['melspectrogram', 'embedding_model', 'hey_jarvis_v0.1'],
    load: 'path',
  });

  const created = byPhase(reports, 'sessions-created');
  expect(created.eps).toEqual(['xnnpack', 'cpu']);
  expect(created.ort_version).toBe('1.24.3');
  expect(created.mode).toBe('concurrent');
  const sessions = created.sessions as unknown as Timing[];
  expect(sessions.map(s => [s.i, s.model])).toEqual([
    [0, 'melspectrogram'],
    [1, 'embedding_model'],
    [2, 'hey_jarvis_v0.1'],
  ]);
  // Promise.all: every create began before any finished.
  const lastStart = Math.max(...sessions.map(s => s.start_ms));
  const firstEnd = Math.min(...sessions.map(s => s.end_ms));
  expect(lastStart).toBeLessThanOrEqual(firstEnd);

  // each create got the scenario's EPs and threads, and a file path (never bytes)
  expect(calls).toHaveLength(3);
  for (const c of calls) {
    expect(typeof c.path).toBe('string');
    expect(c.path).toMatch(/\.onnx$/);
    expect(c.options).toEqual({ executionProviders: ['xnnpack', 'cpu'], intraOpNumThreads: 1 });
  }

  expect(warnings).toContain(
    'removing requested execution provider "xnnpack" from session options because it is not available: backend not found.',
  );

  const inference = byPhase(reports, 'inference-done');
  const expected = readExpected();
  console.log(`launch scores: ${JSON.stringify(inference.scores)} (expected ${JSON.stringify(expected.scores)})`);
  expect(inference.ok).toBe(true);
  expect(inference.scores).toHaveLength(6);
  // within expected.json's own tolerance (fp32 kernels differ between CPUs), never tighter
  (inference.scores as number[]).forEach((s, i) =>
    expect(Math.abs(s - expected.scores[i])).toBeLessThanOrEqual(expected.tolerance.abs),
  );
  expect(inference.score).toBe((inference.scores as number[])[5]);
  expect(inference.max_diff as number).toBeGreaterThanOrEqual(0);
  expect(inference.max_diff as number).toBeLessThanOrEqual(expected.tolerance.abs);
});

test('serial mode awaits each create before the next one starts', async () => {
  const { reports } = await launch('coldstart://run?id=J-2&mode=serial&sessions=4&threads=2&infer=0');
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready', 'sessions-created', 'sessions-released', 'done']);
  const sessions = byPhase(reports, 'sessions-created').sessions as unknown as Timing[];
  expect(sessions.map(s => s.model)).toEqual(['melspectrogram', 'embedding_model', 'hey_jarvis_v0.1', 'melspectrogram']);
  for (let i = 1; i < sessions.length; i++) {
    expect(sessions[i].start_ms).toBeGreaterThanOrEqual(sessions[i - 1].end_ms);
  }
  expect(byPhase(reports, 'sessions-created').threads).toBe(2);
});

test('sessions cycle through the models, and options carry the scenario threads', async () => {
  const { reports, calls } = await launch('coldstart://run?id=J-3&sessions=8&ep=cpu&threads=3&infer=0&release=0');
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready', 'sessions-created', 'done']);
  expect(calls.map(c => c.path.split('/').pop())).toEqual([
    'melspectrogram.onnx', 'embedding_model.onnx', 'hey_jarvis_v0.1.onnx',
    'melspectrogram.onnx', 'embedding_model.onnx', 'hey_jarvis_v0.1.onnx',
    'melspectrogram.onnx', 'embedding_model.onnx',
  ]);
  expect(new Set(calls.map(c => JSON.stringify(c.options)))).toEqual(
    new Set([JSON.stringify({ executionProviders: ['cpu'], intraOpNumThreads: 3 })]),
  );
});

test('load=bytes is refused with the reason, after start', async () => {
  const { reports, calls } = await launch('coldstart://run?id=J-4&load=bytes');
  expect(reports.map(r => r.phase)).toEqual(['start', 'error']);
  expect(reports[1].fields.message).toContain('onnxruntime-react-native 1.24.x drops every session option on buffer loads');
  expect(reports[1].fields.after).toBe('start');
  expect(calls).toHaveLength(0);
});

test('warmup=cpu creates one CPU-only session of the first model before the race', async () => {
  const { reports, calls } = await launch('coldstart://run?id=J-5&warmup=cpu');
  expect(reports.map(r => r.phase)).toEqual([...PHASES]);
  expect(calls[0]).toEqual({ path: expect.stringMatching(/melspectrogram\.onnx$/), options: { executionProviders: ['cpu'], intraOpNumThreads: 1 } });
  expect(calls.slice(1).map(c => c.options.executionProviders)).toEqual([['xnnpack', 'cpu'], ['xnnpack', 'cpu'], ['xnnpack', 'cpu']]);
  const created = byPhase(reports, 'sessions-created');
  const warm = created.warmup as unknown as Timing;
  const sessions = created.sessions as unknown as Timing[];
  expect(warm.model).toBe('melspectrogram');
  expect(warm.end_ms).toBeLessThanOrEqual(Math.min(...sessions.map(s => s.start_ms)));
});

test('inject=segv@sessions-created crashes natively right after that phase', async () => {
  const { reports, crash } = await launch('coldstart://run?id=J-6&inject=segv@sessions-created');
  expect(crash.kinds).toEqual(['segv']);
  // the double returns instead of killing the process: the launch says so
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready', 'sessions-created', 'error']);
  expect(reports[3].fields).toEqual({ message: 'inject=segv@sessions-created did not end the process', after: 'sessions-created' });
});

test('inject=abort@start asks for abort()', async () => {
  const { crash, reports } = await launch('coldstart://run?id=J-7&inject=abort@start');
  expect(crash.kinds).toEqual(['abort']);
  expect(reports[0].phase).toBe('start');
});

test('inject=hang@models-ready stalls after that phase', async () => {
  const reports: PhaseReport[] = [];
  const crash = new FakeNativeCrash();
  let reachedHang!: () => void;
  const hangPhase = new Promise<void>(res => (reachedHang = res));
  const pending = runLaunch(scenario('coldstart://run?id=J-8&inject=hang@models-ready'), nodePlatform({ crash: crash.crash }), r => {
    reports.push(r);
    if (r.phase === 'models-ready') {
      reachedHang();
    }
  });
  // wait for the phase itself (however long a loaded machine takes to get there), then
  // give the launch time to go on: a launch that does not stall ends or crashes meanwhile
  const outcome = await Promise.race([
    pending.then(() => 'finished'),
    hangPhase.then(() => new Promise(res => setTimeout(() => res('stalled'), 300))),
  ]);
  expect(outcome).toBe('stalled');
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready']);
  expect(crash.kinds).toEqual([]);
});

test('a rejected create is reported as error after models-ready, with the ORT message', async () => {
  const { reports } = await launch('coldstart://run?id=J-9', real => (path, options) =>
    path.endsWith('embedding_model.onnx') ? real(`${path}.missing`, options) : real(path, options),
  );
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready', 'error']);
  expect(reports[2].fields.after).toBe('models-ready');
  expect(String(reports[2].fields.message)).toMatch(/embedding_model\.onnx\.missing/);
});

test('infer=1 with a model set lacking a role is refused', async () => {
  const { reports } = await launch('coldstart://run?id=J-10&models=melspectrogram,embedding_model');
  expect(reports.map(r => r.phase)).toEqual(['start', 'models-ready', 'sessions-created', 'error']);
  expect(reports[3].fields.message).toBe("infer=1 needs a keyword model among the scenario's models");
});

test('an unknown model name is refused before any create', async () => {
  const { reports, calls } = await launch('coldstart://run?id=J-11&models=alexa');
  expect(reports.map(r => r.phase)).toEqual(['start', 'error']);
  expect(reports[1].fields.message).toContain('unknown model "alexa"');
  expect(calls).toHaveLength(0);
});

test('reportRefused gives start then error under the launch id', () => {
  const reports: PhaseReport[] = [];
  const last = reportRefused('L-1', 'bad deep link', 5.5, r => reports.push(r));
  expect(reports.map(r => r.line)).toEqual([
    'COLDSTART {"v":1,"id":"L-1","phase":"start","t_ms":5.5}',
    'COLDSTART {"v":1,"id":"L-1","phase":"error","t_ms":5.5,"message":"bad deep link","after":"start"}',
  ]);
  expect(last.phase).toBe('error');
});

test('log=verbose sets the ORT log level before the first create; the default is warning', async () => {
  for (const [url, level] of [
    ['coldstart://run?id=J-12&log=verbose&infer=0', 'verbose'],
    ['coldstart://run?id=J-13&infer=0', 'warning'],
  ] as const) {
    const order: string[] = [];
    const crash = new FakeNativeCrash();
    const platform = nodePlatform({
      crash: crash.crash,
      onLogLevel: l => order.push(`log:${l}`),
      createSession: (path, options) => {
        order.push('create');
        return nodeCreateSession(path, options);
      },
    });
    const reports: PhaseReport[] = [];
    await runLaunch(scenario(url), platform, r => reports.push(r));
    expect(order).toEqual([`log:${level}`, 'create', 'create', 'create']);
    expect(reports[reports.length - 1].phase).toBe('done');
    expect(String(reports[0].fields.scenario).endsWith('&log=verbose')).toBe(level === 'verbose');
  }
});
