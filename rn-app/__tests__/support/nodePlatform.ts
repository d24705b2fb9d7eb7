/**
 * The launch platform under Node: onnxruntime-node creates real sessions from the real
 * model files in the checkout's models/ (fetched by `coldstart models fetch`).
 *
 * onnxruntime-node has no XNNPACK backend: onnxruntime-common drops `xnnpack` from
 * `executionProviders` with a warning and the sessions run on the CPU EP, which is what
 * models/expected.json was computed with. The native crash is the caller's (a test
 * double under __tests__/doubles/), since a real one would end Jest.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ort from 'onnxruntime-node';
import type { CreateSession, Platform } from '../../src/launch';
import type { Expected, Role } from '../../src/pipeline';
import { readClip } from '../../src/wav';
import { MODELS_DIR } from './paths';

export interface Manifest {
  models: Array<{ name: string; role: Role; file: string }>;
  clip: { file: string };
}

export function readManifest(): Manifest {
  return JSON.parse(fs.readFileSync(path.join(MODELS_DIR, 'manifest.json'), 'utf8'));
}

export function readExpected(): Expected {
  return JSON.parse(fs.readFileSync(path.join(MODELS_DIR, 'expected.json'), 'utf8'));
}

export function readClipSamples(): Int16Array {
  const manifest = readManifest();
  const clip = readClip(new Uint8Array(fs.readFileSync(path.join(MODELS_DIR, manifest.clip.file))));
  if (!clip.ok) {
    throw new Error(`models/${manifest.clip.file}: ${clip.reason}`);
  }
  return clip.samples;
}

/** `InferenceSession.create` of onnxruntime-node. */
export const nodeCreateSession: CreateSession = (modelPath, options) =>
  ort.InferenceSession.create(modelPath, options);

export interface NodePlatformOptions {
  /** Replaces `createSession` (e.g. to record calls around the real one). */
  createSession?: CreateSession;
  crash: (kind: 'segv' | 'abort') => void;
  /** Told the level each time the launch sets the ORT log level. */
  onLogLevel?: (level: string) => void;
}

export function nodePlatform(options: NodePlatformOptions): Platform {
  const manifest = readManifest();
  const roles: Record<string, Role> = {};
  const files: Record<string, string> = {};
  for (const m of manifest.models) {
    roles[m.name] = m.role;
    files[m.name] = path.join(MODELS_DIR, m.file);
  }
  const t0 = performance.now();
  return {
    createSession: options.createSession ?? nodeCreateSession,
    ortVersion: () => ort.env.versions.node ?? 'unknown',
    resolveModel: async name => {
      if (!fs.existsSync(files[name])) {
        throw new Error(`${files[name]} is missing: run \`coldstart models fetch\``);
      }
      return files[name];
    },
    loadClip: async () => readClipSamples(),
    roles,
    expected: readExpected(),
    setOrtLogLevel: level => {
      ort.env.logLevel = level;
      options.onLogLevel?.(level);
    },
    crash: options.crash,
    now: () => performance.now() - t0,
    startFields: { platform: 'node' },
  };
}
