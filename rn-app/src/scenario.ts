/**
 * Scenarios: what one launch does, read from the deep link the app was started with.
 *
 * The format is defined once, in the kit (`kit/scenario.py`, DESIGN.md "Vocabulary"):
 * `coldstart://run?id=<launch-id>&mode=concurrent&sessions=3&ep=xnnpack,cpu&...`.
 * This module parses the URL form and the bare query form (`mode=serial&sessions=8`);
 * the kit's third spelling (`mode=serial,sessions=8`) is for people typing on a command
 * line and never reaches the app. Every rule below mirrors `kit/scenario.py`, and the
 * shared vectors in `kit/data/protocol_vectors.json` ("scenario") check both sides.
 *
 * Parsing never throws: it returns the scenario or the reason it was refused, plus the
 * launch id when one could be read, so the app can still report `error` under that id.
 */

/** The phases every app reports, in order (DESIGN.md). */
export const PHASES = [
  'start',
  'models-ready',
  'sessions-created',
  'inference-done',
  'sessions-released',
  'done',
] as const;
export type Phase = (typeof PHASES)[number];

export const INJECT_KINDS = ['segv', 'abort', 'hang'] as const;
export type InjectKind = (typeof INJECT_KINDS)[number];

export const DEFAULT_MODELS: readonly string[] = [
  'melspectrogram',
  'embedding_model',
  'hey_jarvis_v0.1',
];
export const KNOWN_EPS = ['xnnpack', 'cpu'] as const;

/** Launch ids: 1-64 characters from `A-Z a-z 0-9 . _ -` (kit `LAUNCH_ID_RE`). */
export const LAUNCH_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;
const MODEL_NAME_RE = /^[A-Za-z0-9._-]{1,64}$/;
const KEYS = [
  'id',
  'mode',
  'sessions',
  'models',
  'ep',
  'threads',
  'infer',
  'release',
  'inject',
  'load',
  'warmup',
  'log',
] as const;
/**
 * Keys added after protocol version 1, with their defaults (kit `EXTENSION_DEFAULTS`): the
 * canonical URL carries them only when they differ, so older apps accept default scenarios.
 */
export const EXTENSION_DEFAULTS = Object.freeze({ log: 'warning' as const });

export interface Inject {
  readonly kind: InjectKind;
  /** Fires right after this phase is reported (`start` .. `sessions-released`). */
  readonly phase: Phase;
}

/** One launch's instructions; field meanings as in `kit/scenario.py` `Scenario`. */
export interface Scenario {
  readonly id: string | null;
  readonly mode: 'concurrent' | 'serial';
  /** Number of `InferenceSession.create` calls (1..64), cycling through `models`. */
  readonly sessions: number;
  readonly models: readonly string[];
  /** Execution providers in append order, e.g. `['xnnpack', 'cpu']`. */
  readonly ep: readonly string[];
  /** Intra-op threads per session (1..64). */
  readonly threads: number;
  readonly infer: boolean;
  readonly release: boolean;
  readonly inject: Inject | null;
  readonly load: 'path' | 'bytes';
  readonly warmup: 'none' | 'cpu';
  /** ORT environment log level: `warning` (production) or `verbose` (widens the race window). */
  readonly log: 'warning' | 'verbose';
}

export const DEFAULT_SCENARIO: Scenario = Object.freeze({
  id: null,
  mode: 'concurrent',
  sessions: 3,
  models: DEFAULT_MODELS,
  ep: ['xnnpack', 'cpu'],
  threads: 1,
  infer: true,
  release: true,
  inject: null,
  load: 'path',
  warmup: 'none',
  log: EXTENSION_DEFAULTS.log,
});

export type ScenarioResult =
  | { readonly ok: true; readonly scenario: Scenario }
  | {
      readonly ok: false;
      /** One line saying what is wrong, in the kit's words. */
      readonly reason: string;
      /** The launch id, when the text carried a valid one. */
      readonly id: string | null;
    };

class ScenarioRefused extends Error {}

function check(ok: boolean, key: string, value: string, expected: string): void {
  if (!ok) {
    throw new ScenarioRefused(
      `scenario key ${key}=${JSON.stringify(value)} is invalid: expected ${expected}`,
    );
  }
}

/** Decode one `application/x-www-form-urlencoded` component as Python's `unquote_plus`. */
function unquotePlus(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    throw new ScenarioRefused(`scenario text ${JSON.stringify(text)} has a malformed %-escape`);
  }
}

function splitPairs(text: string): Array<[string, string]> {
  let query = text.trim();
  if (query.startsWith('coldstart:')) {
    const match = /^coldstart:(?:\/\/([^/?#]*))?[^?#]*(?:\?([^#]*))?(?:#.*)?$/.exec(query);
    const netloc = match?.[1] ?? '';
    if (!match || (netloc !== 'run' && netloc !== '')) {
      throw new ScenarioRefused(
        `scenario URL ${JSON.stringify(text)} is not a coldstart://run?... URL`,
      );
    }
    query = match[2] ?? '';
  }
  if (query === '') {
    return [];
  }
  // Python's parse_qsl(strict_parsing=True): every '&'-separated field is KEY=VALUE.
  return query.split('&').map(field => {
    const eq = field.indexOf('=');
    if (eq < 0) {
      throw new ScenarioRefused(`scenario ${JSON.stringify(text)} is not KEY=VALUE pairs joined by &`);
    }
    return [unquotePlus(field.slice(0, eq)), unquotePlus(field.slice(eq + 1))];
  });
}

function asInt(key: string, value: string): number {
  check(/^[0-9]{1,3}$/.test(value), key, value, 'a whole number');
  return Number(value);
}

function asFlag(key: string, value: string): boolean {
  check(value === '0' || value === '1', key, value, '0 or 1');
  return value === '1';
}

function asList(value: string): string[] {
  return value
    .split(',')
    .map(v => v.trim())
    .filter(v => v !== '');
}

function validate(s: Scenario): void {
  check(s.mode === 'concurrent' || s.mode === 'serial', 'mode', s.mode, 'concurrent or serial');
  check(s.sessions >= 1 && s.sessions <= 64, 'sessions', String(s.sessions),
    'a whole number from 1 to 64');
  check(s.threads >= 1 && s.threads <= 64, 'threads', String(s.threads),
    'a whole number from 1 to 64');
  check(s.models.length > 0 && s.models.every(m => MODEL_NAME_RE.test(m)), 'models',
    s.models.join(','), 'comma-separated model names');
  check(
    s.ep.length > 0 &&
      s.ep.every(e => (KNOWN_EPS as readonly string[]).includes(e)) &&
      new Set(s.ep).size === s.ep.length,
    'ep', s.ep.join(','), 'a comma list of xnnpack, cpu');
  check(s.load === 'path' || s.load === 'bytes', 'load', s.load, 'path or bytes');
  check(s.warmup === 'none' || s.warmup === 'cpu', 'warmup', s.warmup, 'none or cpu');
  check(s.log === 'warning' || s.log === 'verbose', 'log', s.log, 'warning or verbose');
  if (s.inject !== null) {
    const phaseOk = (PHASES.slice(0, -1) as readonly string[]).includes(s.inject.phase);
    check((INJECT_KINDS as readonly string[]).includes(s.inject.kind) && phaseOk, 'inject',
      `${s.inject.kind}@${s.inject.phase}`,
      'none or KIND@PHASE with KIND segv|abort|hang and PHASE start..sessions-released');
  }
  if (s.id !== null) {
    check(LAUNCH_ID_RE.test(s.id), 'id', s.id, '1-64 characters from A-Z a-z 0-9 . _ -');
  }
}

/**
 * Parse a scenario from a deep link (`coldstart://run?...`) or a bare query string.
 *
 * @param text the URL or query; `null`/empty gives the defaults (with `id` null).
 * @returns `{ok: true, scenario}` or `{ok: false, reason, id}`; never throws.
 */
export function parseScenario(text: string | null | undefined): ScenarioResult {
  let id: string | null = null;
  try {
    const pairs = splitPairs(text ?? '');
    const idPair = pairs.find(([k]) => k === 'id');
    if (idPair && LAUNCH_ID_RE.test(idPair[1])) {
      id = idPair[1];
    }
    const seen = new Set<string>();
    const fields: { -readonly [K in keyof Scenario]?: Scenario[K] } = {};
    for (const [key, value] of pairs) {
      if (!(KEYS as readonly string[]).includes(key)) {
        throw new ScenarioRefused(
          `unknown scenario key ${JSON.stringify(key)} (known keys: ${KEYS.join(', ')})`,
        );
      }
      if (seen.has(key)) {
        throw new ScenarioRefused(`scenario key ${JSON.stringify(key)} is given twice`);
      }
      seen.add(key);
      switch (key) {
        case 'sessions':
        case 'threads':
          fields[key] = asInt(key, value);
          break;
        case 'infer':
        case 'release':
          fields[key] = asFlag(key, value);
          break;
        case 'models':
        case 'ep':
          fields[key] = asList(value);
          break;
        case 'inject': {
          if (value === 'none') {
            fields.inject = null;
          } else {
            const at = value.indexOf('@');
            check(at >= 0, 'inject', value, 'KIND@PHASE, e.g. segv@sessions-created');
            fields.inject = {
              kind: value.slice(0, at) as InjectKind,
              phase: value.slice(at + 1) as Phase,
            };
          }
          break;
        }
        case 'mode':
          fields.mode = value as Scenario['mode'];
          break;
        case 'load':
          fields.load = value as Scenario['load'];
          break;
        case 'warmup':
          fields.warmup = value as Scenario['warmup'];
          break;
        case 'log':
          fields.log = value as Scenario['log'];
          break;
        case 'id':
          fields.id = value;
          break;
      }
    }
    const scenario: Scenario = { ...DEFAULT_SCENARIO, ...fields };
    validate(scenario);
    return { ok: true, scenario };
  } catch (err) {
    if (err instanceof ScenarioRefused) {
      return { ok: false, reason: err.message, id };
    }
    throw err;
  }
}

/** Python's `urllib.parse.quote(value, safe=',@')`. */
function quote(value: string): string {
  return encodeURIComponent(value)
    .replace(/[!'()*]/g, c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2C/g, ',')
    .replace(/%40/g, '@');
}

/**
 * The scenario as `(key, value)` pairs in canonical order (kit `Scenario.query_items`); an
 * extension key only when it is not at its default.
 */
export function queryItems(s: Scenario, withId = true): Array<[string, string]> {
  const items: Array<[string, string]> = [
    ['mode', s.mode],
    ['sessions', String(s.sessions)],
    ['models', s.models.join(',')],
    ['ep', s.ep.join(',')],
    ['threads', String(s.threads)],
    ['infer', s.infer ? '1' : '0'],
    ['release', s.release ? '1' : '0'],
    ['inject', s.inject === null ? 'none' : `${s.inject.kind}@${s.inject.phase}`],
    ['load', s.load],
    ['warmup', s.warmup],
  ];
  if (s.log !== EXTENSION_DEFAULTS.log) {
    items.push(['log', s.log]);
  }
  if (withId && s.id !== null) {
    items.unshift(['id', s.id]);
  }
  return items;
}

/** The canonical `coldstart://run?...` URL, byte-identical to the kit's `Scenario.to_url`. */
export function toUrl(s: Scenario, withId = true): string {
  return `coldstart://run?${queryItems(s, withId)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join('&')}`;
}

/**
 * A launch id for a launch started without a deep link (by hand, from the launcher icon):
 * `app-<ms since epoch, base 36>-<4 random base-36 characters>`, valid per `LAUNCH_ID_RE`.
 */
export function generateLaunchId(nowMs: number = Date.now(), random: () => number = Math.random): string {
  const suffix = Math.floor(random() * 36 ** 4)
    .toString(36)
    .padStart(4, '0');
  return `app-${Math.floor(nowMs).toString(36)}-${suffix}`;
}
