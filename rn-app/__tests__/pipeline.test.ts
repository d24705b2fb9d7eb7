/**
 * The openWakeWord pipeline run for real: the three models of the model set through
 * onnxruntime-node on models/clip.wav, loaded with Promise.all and one by one, must give
 * the scores of models/expected.json within its tolerance.
 */
import * as ort from 'onnxruntime-node';
import { runPipeline, scoresMatch, ROLES, type PipelineSession, type Role } from '../src/pipeline';
import { readClipSamples, readExpected, readManifest, nodeCreateSession } from './support/nodePlatform';
import * as path from 'path';
import { MODELS_DIR } from './support/paths';

const manifest = readManifest();
const expected = readExpected();
const samples = readClipSamples();
const pathOf = (role: Role) => path.join(MODELS_DIR, manifest.models.find(m => m.role === role)!.file);
const options = { executionProviders: ['cpu'], intraOpNumThreads: 1 };

async function releaseAll(sessions: Record<Role, ort.InferenceSession>) {
  await Promise.all(ROLES.map(r => sessions[r].release()));
}

test('the clip is the one expected.json was computed on', () => {
  expect(samples.length).toBe(38957);
  expect(manifest.models.map(m => m.role)).toEqual(['mel', 'embedding', 'keyword']);
});

test('sessions created with Promise.all give the expected scores', async () => {
  const created = await Promise.all(ROLES.map(r => nodeCreateSession(pathOf(r), options)));
  const sessions = { mel: created[0], embedding: created[1], keyword: created[2] };
  const result = await runPipeline(sessions, samples);
  console.log(`Promise.all pipeline scores: ${JSON.stringify(result.scores)}`);
  expect(result.melFrames).toBe(241);
  expect(result.embeddings).toBe(21);
  expect(result.scores).toHaveLength(expected.scores.length);
  result.scores.forEach((s, i) => expect(Math.abs(s - expected.scores[i])).toBeLessThanOrEqual(expected.tolerance.abs));
  expect(result.score).toBe(result.scores[result.scores.length - 1]);
  expect(result.score).toBeGreaterThan(0.99); // the clip says "hey jarvis"
  const match = scoresMatch(expected, result.scores);
  expect(match.ok).toBe(true);
  // the CPU EP's fp32 kernels differ between CPUs (about 1e-6 here from the machine that
  // wrote expected.json): the bound is expected.json's own tolerance, never a tighter literal
  expect(match.maxAbsDiff).toBe(Math.max(...result.scores.map((s, i) => Math.abs(s - expected.scores[i]))));
  expect(match.maxAbsDiff).toBeLessThanOrEqual(expected.tolerance.abs);
  await releaseAll(sessions);
});

test('sessions created one by one give the same scores', async () => {
  const sessions = {} as Record<Role, ort.InferenceSession>;
  for (const r of ROLES) {
    sessions[r] = await nodeCreateSession(pathOf(r), options);
  }
  const result = await runPipeline(sessions, samples);
  console.log(`serial pipeline scores: ${JSON.stringify(result.scores)}`);
  expect(scoresMatch(expected, result.scores).ok).toBe(true);
  await releaseAll(sessions);
});

test('a clip shorter than one keyword window is refused', async () => {
  const created = await Promise.all(ROLES.map(r => nodeCreateSession(pathOf(r), options)));
  const sessions = { mel: created[0], embedding: created[1], keyword: created[2] };
  await expect(runPipeline(sessions, samples.subarray(0, 16000))).rejects.toThrow(
    /the clip gives \d+ embeddings, fewer than 16/,
  );
  await releaseAll(sessions);
});

test('scoresMatch refuses a count mismatch and a score out of tolerance', () => {
  expect(scoresMatch(expected, expected.scores.slice(1))).toEqual({ ok: false, maxAbsDiff: Infinity });
  const off = [...expected.scores];
  off[2] += 0.01;
  const m = scoresMatch(expected, off);
  expect(m.ok).toBe(false);
  expect(m.maxAbsDiff).toBeCloseTo(0.01, 6);
  expect(scoresMatch(expected, expected.scores)).toEqual({ ok: true, maxAbsDiff: 0 });
});

test('a model whose output is not float32 is reported', async () => {
  const notFloat: PipelineSession = {
    inputNames: ['input'],
    outputNames: ['out'],
    run: async () => ({ out: new ort.Tensor('int32', new Int32Array(4), [4]) }),
  };
  await expect(runPipeline({ mel: notFloat, embedding: notFloat, keyword: notFloat }, samples)).rejects.toThrow(
    'model output out is int32, expected float32',
  );
});
