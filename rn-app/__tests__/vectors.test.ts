/**
 * The shared test vectors of kit/data/protocol_vectors.json, which the Python kit checks
 * too (tests/test_protocol.py, tests/test_scenario.py): the TypeScript formatter must
 * reproduce every "format" line byte for byte, the parser must accept/refuse every
 * "parse" line with the kit's reason, and every "scenario" URL must parse to the same
 * fields and canonical URL.
 */
import * as fs from 'fs';
import { formatEvent, parseLine, roundMs, pyRepr, MARKER, type Fields } from '../src/protocol';
import {
  parseScenario, toUrl, generateLaunchId, LAUNCH_ID_RE, DEFAULT_SCENARIO, EXTENSION_DEFAULTS,
} from '../src/scenario';
import { VECTORS_PATH } from './support/paths';

interface Vectors {
  protocol_version: number;
  format: Array<{ name: string; id: string; phase: string; t_ms: number; fields: Fields; line: string }>;
  parse: Array<{ name: string; line: string; valid: boolean; event?: Fields; reason?: string }>;
  scenario: Array<{
    name: string; url: string; valid: boolean; scenario?: Fields; canonical?: string;
    // a host-only key (e.g. hold=MS): the kit accepts it, the app refuses it with this reason
    app?: { valid: boolean; reason_starts: string };
  }>;
}

const vectors: Vectors = JSON.parse(fs.readFileSync(VECTORS_PATH, 'utf8'));

test('the vectors file is the protocol version this app speaks, with every section non-empty', () => {
  expect(vectors.protocol_version).toBe(1);
  expect(vectors.format.length).toBeGreaterThanOrEqual(6);
  expect(vectors.parse.length).toBeGreaterThanOrEqual(20);
  expect(vectors.scenario.length).toBeGreaterThanOrEqual(14);
});

describe('format vectors', () => {
  test.each(vectors.format.map(v => [v.name, v] as const))('%s', (_name, v) => {
    expect(formatEvent(v.id, v.phase, v.t_ms, v.fields)).toBe(v.line);
  });
});

describe('parse vectors', () => {
  test.each(vectors.parse.map(v => [v.name, v] as const))('%s', (_name, v) => {
    const result = parseLine(v.line);
    if (v.valid) {
      expect(result.reason).toBeNull();
      const e = result.event!;
      expect({ v: e.v, id: e.id, phase: e.phase, t_ms: e.t_ms, ...e.fields }).toEqual(v.event);
    } else {
      expect(result.event).toBeNull();
      expect(result.reason).toBe(v.reason);
    }
  });
});

describe('scenario vectors', () => {
  test.each(vectors.scenario.map(v => [v.name, v] as const))('%s', (_name, v) => {
    const result = parseScenario(v.url);
    if (v.app) {
      // the app's own answer for a key only the host workload knows: its usual refusal
      expect(result.ok).toBe(v.app.valid);
      expect(!result.ok && result.reason.startsWith(v.app.reason_starts)).toBe(true);
      return;
    }
    expect(result.ok).toBe(v.valid);
    if (result.ok) {
      // vectors written before an extension key existed leave it out: it is at its default
      expect({ ...result.scenario }).toEqual({ ...EXTENSION_DEFAULTS, ...v.scenario });
      expect(toUrl(result.scenario)).toBe(v.canonical);
      // the canonical URL is a fixed point
      const again = parseScenario(v.canonical!);
      expect(again.ok && toUrl(again.scenario)).toBe(v.canonical);
    } else {
      expect(result.reason).toMatch(/scenario|unknown/);
    }
  });
});

describe('formatter details beyond the vectors', () => {
  test('t_ms rounds to 3 decimals with ties to even, like Python round()', () => {
    // exact binary ties: x * 16 odd
    expect(roundMs(1.0625)).toBe(1.062); // Python: round(1.0625, 3) == 1.062
    expect(roundMs(1.1875)).toBe(1.188); // Python: round(1.1875, 3) == 1.188
    expect(roundMs(0.0625)).toBe(0.062);
    // not ties: the binary value decides
    expect(roundMs(0.0005)).toBe(0.001); // Python: round(0.0005, 3) == 0.001
    expect(roundMs(2.675)).toBe(2.675);
    expect(roundMs(340.2504)).toBe(340.25);
    expect(formatEvent('a', 'start', 12.0)).toBe(`${MARKER}{"v":1,"id":"a","phase":"start","t_ms":12}`);
  });

  test('bad calls are refused', () => {
    expect(() => formatEvent('a', 'warmup', 1)).toThrow(RangeError);
    expect(() => formatEvent('a', 'start', -1)).toThrow(RangeError);
    expect(() => formatEvent('a', 'start', NaN)).toThrow(RangeError);
  });

  test('a formatted line parses back to the same event', () => {
    const fields: Fields = { sessions: [{ i: 0, model: 'm', start_ms: 1.5, end_ms: 2 }], eps: ['cpu'] };
    const { event } = parseLine(`I ReactNativeJS: ${formatEvent('L-1', 'sessions-created', 3.25, fields)}`);
    expect(event).toEqual({ v: 1, id: 'L-1', phase: 'sessions-created', t_ms: 3.25, fields });
  });

  test('pyRepr writes values as the kit prints them in reasons', () => {
    expect(pyRepr(true)).toBe('True');
    expect(pyRepr(null)).toBe('None');
    expect(pyRepr('warmup')).toBe("'warmup'");
    expect(pyRepr("it's")).toBe('"it\'s"');
    expect(pyRepr([1, 'a'])).toBe("[1, 'a']");
  });
});

describe('scenario details beyond the vectors', () => {
  test('no deep link gives the defaults without an id', () => {
    expect(parseScenario(null)).toEqual({ ok: true, scenario: DEFAULT_SCENARIO });
    expect(parseScenario('')).toEqual({ ok: true, scenario: DEFAULT_SCENARIO });
  });

  test('a bare query string is accepted, with +/%-escapes decoded', () => {
    const r = parseScenario('mode=serial&sessions=8&ep=cpu%2Cxnnpack');
    expect(r.ok && [r.scenario.mode, r.scenario.sessions, r.scenario.ep]).toEqual(['serial', 8, ['cpu', 'xnnpack']]);
  });

  test('a refused scenario keeps a valid launch id so the error is reported under it', () => {
    const r = parseScenario('coldstart://run?id=L-7&sessions=0');
    expect(r).toEqual({
      ok: false,
      id: 'L-7',
      reason: 'scenario key sessions="0" is invalid: expected a whole number from 1 to 64',
    });
    const bad = parseScenario('coldstart://run?id=a%20b');
    expect(bad.ok === false && bad.id).toBeNull();
  });

  test('other schemes, hosts and malformed pairs are refused with a reason', () => {
    expect(parseScenario('https://run?mode=serial').ok).toBe(false);
    expect(parseScenario('coldstart://load?mode=serial')).toMatchObject({ ok: false, reason: expect.stringContaining('coldstart://run') });
    expect(parseScenario('coldstart://run?mode')).toMatchObject({ ok: false, reason: expect.stringContaining('KEY=VALUE') });
    expect(parseScenario('coldstart://run?id=%E0%A4%A')).toMatchObject({ ok: false, reason: expect.stringContaining('%-escape') });
    expect(parseScenario('coldstart://run?inject=segv')).toMatchObject({ ok: false, reason: expect.stringContaining('KIND@PHASE') });
  });

  test('generated launch ids are valid launch ids', () => {
    const id = generateLaunchId(1764437401123, () => 0.5);
    expect(id).toBe(`app-${(1764437401123).toString(36)}-${Math.floor(0.5 * 36 ** 4).toString(36)}`);
    expect(id).toMatch(LAUNCH_ID_RE);
    expect(generateLaunchId(0, () => 0)).toBe('app-0-0000');
  });
});
