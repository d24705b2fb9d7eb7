/**
 * The app <-> driver protocol: one `COLDSTART {json}` line per phase (version 1).
 *
 * The format is defined once, in the kit (`kit/protocol.py`, DESIGN.md "App <-> driver
 * protocol"); this is its TypeScript twin, checked against the same vectors
 * (`kit/data/protocol_vectors.json`, "format" and "parse"):
 *
 * - the line is the marker `COLDSTART ` and one JSON object, keys `v, id, phase, t_ms`
 *   first and then the phase's own fields in insertion order, without spaces
 *   (`JSON.stringify`, which the kit's `json.dumps(separators=(',', ':'))` matches);
 * - `t_ms` (ms since the app's start) is rounded to 3 decimals, ties to even like
 *   Python's `round`, and written as an integer when whole;
 * - `sessions-created` carries `sessions` `[{i, model, start_ms, end_ms}]`, `eps` and
 *   `ort_version`; `inference-done` carries `scores`, `score`, `ok`; `error` carries
 *   `message`. Other keys are allowed.
 *
 * Only `t_ms` is normalised: other numbers are written as `JSON.stringify` writes them,
 * which differs from Python for whole floats (`2` vs `2.0`) and tiny ones (`1e-7` vs
 * `1e-07`); parsers read both the same.
 */
import { PHASES } from './scenario';

export const MARKER = 'COLDSTART ';
export const VERSION = 1;
export const PHASES_AND_ERROR: readonly string[] = [...PHASES, 'error'];

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };
export type Fields = { [key: string]: JsonValue };

/** One parsed protocol line (kit `ProtocolEvent`). */
export interface ProtocolEvent {
  readonly v: number;
  readonly id: string;
  /** A phase name or `error`. */
  readonly phase: string;
  readonly t_ms: number;
  /** Every other key of the JSON object, e.g. `sessions`, `scores`. */
  readonly fields: Fields;
}

/** What `parseLine` found: an event, or `null` and the reason (kit `ParseResult`). */
export interface ParseResult {
  readonly event: ProtocolEvent | null;
  readonly reason: string | null;
}

/**
 * Round to 3 decimals as Python's `round(x, 3)`: the nearest multiple of 0.001 to the
 * exact binary value, ties to even. A decimal tie (k + 0.5) / 1000 is exactly
 * representable only when x * 16 is an odd integer, so that is the only case where
 * `toFixed` (ties away from zero) can differ; it is handled exactly.
 */
export function roundMs(x: number): number {
  const sixteenths = x * 16; // exact: a power-of-two scaling
  if (Number.isInteger(sixteenths) && Math.abs(sixteenths % 2) === 1) {
    const thousandths = x * 1000; // j * 62.5, exact
    const down = Math.floor(thousandths);
    const even = down % 2 === 0 ? down : down + 1;
    return even / 1000;
  }
  return Number(x.toFixed(3));
}

/**
 * Format one protocol line (no newline).
 *
 * @throws RangeError for an unknown phase or a negative / non-finite `t_ms` (a bug in
 *   the caller, not bad input).
 */
export function formatEvent(id: string, phase: string, tMs: number, fields: Fields = {}): string {
  if (!PHASES_AND_ERROR.includes(phase)) {
    throw new RangeError(`unknown phase ${JSON.stringify(phase)}`);
  }
  if (!Number.isFinite(tMs) || tMs < 0) {
    throw new RangeError('t_ms must be a non-negative number');
  }
  const obj = { v: VERSION, id, phase, t_ms: roundMs(tMs), ...fields };
  return MARKER + JSON.stringify(obj);
}

/** Python's `repr` of a JSON value, as the kit's reasons print it (`True`, `'warmup'`). */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (value === true) {
    return 'True';
  }
  if (value === false) {
    return 'False';
  }
  if (typeof value === 'string') {
    const quoteChar = value.includes("'") && !value.includes('"') ? '"' : "'";
    const body = value
      .replace(/\\/g, '\\\\')
      .replace(/\n/g, '\\n')
      .replace(/\r/g, '\\r')
      .replace(/\t/g, '\\t')
      .split(quoteChar)
      .join(`\\${quoteChar}`);
    return quoteChar + body + quoteChar;
  }
  if (Array.isArray(value)) {
    return `[${value.map(pyRepr).join(', ')}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
  }
  return String(value);
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * Parse one line of app output; whatever precedes the marker (a logcat or unified-log
 * prefix) is ignored. Never throws: returns the event or the reason, worded as the kit's.
 */
export function parseLine(line: string): ParseResult {
  const pos = line.indexOf(MARKER);
  if (pos < 0) {
    return { event: null, reason: 'no marker' };
  }
  const payload = line.slice(pos + MARKER.length).trim();
  let obj: unknown;
  try {
    obj = JSON.parse(payload);
  } catch {
    return { event: null, reason: 'payload is not valid JSON' };
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    return { event: null, reason: 'payload is not a JSON object' };
  }
  const { v, id, phase, t_ms: tMs, ...fields } = obj as Record<string, JsonValue>;
  if (v !== VERSION) {
    return { event: null, reason: `unsupported protocol version ${pyRepr(v)}` };
  }
  if (typeof id !== 'string' || id === '') {
    return { event: null, reason: 'missing or empty id' };
  }
  if (typeof phase !== 'string' || !PHASES_AND_ERROR.includes(phase)) {
    return { event: null, reason: `unknown phase ${pyRepr(phase)}` };
  }
  if (!isNumber(tMs) || tMs < 0) {
    return { event: null, reason: 't_ms is not a non-negative number' };
  }
  return { event: { v, id, phase, t_ms: tMs, fields }, reason: null };
}
