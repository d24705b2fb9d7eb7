/**
 * The openWakeWord pipeline on the model set, as specified in `kit/modelset.py`
 * (openWakeWord 0.4.0 `utils.AudioFeatures` and `model.Model.predict`):
 *
 * 1. `melspectrogram.onnx` on the int16 samples as float32 `[1, N]` gives
 *    `[frames, 1, ?, 32]`, read as `[frames, 32]`;
 * 2. `spec = spec / 10 + 2` (float32 arithmetic, as numpy does on a float32 array);
 * 3. windows of 76 frames every 8 frames (short tail windows dropped), batched as
 *    `[B, 76, 32, 1]` through `embedding_model.onnx`, giving `[B, 96]`;
 * 4. every run of 16 consecutive embeddings `[1, 16, 96]` through the keyword head gives
 *    one score in [0, 1]; the last run's is *the* score.
 *
 * The sessions come from the caller, so the same code runs on a phone
 * (onnxruntime-react-native) and under Jest (onnxruntime-node).
 */
import { Tensor } from 'onnxruntime-common';
import type { InferenceSession } from 'onnxruntime-common';

export const MEL_BINS = 32;
export const MEL_WINDOW = 76;
export const MEL_STEP = 8;
export const EMBEDDING_SIZE = 96;
export const KEYWORD_WINDOW = 16;

export type Role = 'mel' | 'embedding' | 'keyword';
export const ROLES: readonly Role[] = ['mel', 'embedding', 'keyword'];

/** The subset of `InferenceSession` the pipeline uses. */
export type PipelineSession = Pick<InferenceSession, 'inputNames' | 'outputNames' | 'run'>;

export interface PipelineResult {
  readonly melFrames: number;
  readonly embeddings: number;
  /** One score per run of 16 embeddings, oldest first. */
  readonly scores: readonly number[];
  /** The last score. */
  readonly score: number;
}

/** `expected.json` as written by `coldstart models expected`. */
export interface Expected {
  readonly scores: readonly number[];
  readonly score: number;
  readonly tolerance: { readonly abs: number };
}

async function runOne(session: PipelineSession, input: Tensor): Promise<Tensor> {
  const outputs = await session.run({ [session.inputNames[0]]: input });
  const out = outputs[session.outputNames[0]];
  if (!(out.data instanceof Float32Array)) {
    throw new Error(`model output ${session.outputNames[0]} is ${out.type}, expected float32`);
  }
  return out;
}

/**
 * Run the pipeline once.
 *
 * @param sessions one session per role.
 * @param samples int16 samples `[N]`, 16 kHz mono.
 * @throws Error when the clip gives fewer than 16 embeddings (needs about 2 s), or a model
 *   returns something other than float32; errors of `session.run` pass through.
 */
export async function runPipeline(
  sessions: Readonly<Record<Role, PipelineSession>>,
  samples: Int16Array,
): Promise<PipelineResult> {
  const audio = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    audio[i] = samples[i];
  }
  const mel = await runOne(sessions.mel, new Tensor('float32', audio, [1, samples.length]));
  const melData = mel.data as Float32Array;
  const frames = Math.floor(melData.length / MEL_BINS);
  const spec = new Float32Array(frames * MEL_BINS);
  for (let i = 0; i < spec.length; i++) {
    spec[i] = Math.fround(Math.fround(melData[i] / 10) + 2);
  }

  const starts: number[] = [];
  for (let i = 0; i + MEL_WINDOW <= frames; i += MEL_STEP) {
    starts.push(i);
  }
  if (starts.length < KEYWORD_WINDOW) {
    throw new Error(
      `the clip gives ${starts.length} embeddings, fewer than ${KEYWORD_WINDOW}: use a clip of at least 2 seconds`,
    );
  }
  const windowSize = MEL_WINDOW * MEL_BINS;
  const batch = new Float32Array(starts.length * windowSize);
  starts.forEach((start, b) => {
    batch.set(spec.subarray(start * MEL_BINS, start * MEL_BINS + windowSize), b * windowSize);
  });
  const emb = await runOne(
    sessions.embedding,
    new Tensor('float32', batch, [starts.length, MEL_WINDOW, MEL_BINS, 1]),
  );
  const embData = emb.data as Float32Array;
  if (embData.length !== starts.length * EMBEDDING_SIZE) {
    throw new Error(
      `embedding model gave ${embData.length} values for ${starts.length} windows, expected ${EMBEDDING_SIZE} each`,
    );
  }

  const scores: number[] = [];
  for (let end = KEYWORD_WINDOW; end <= starts.length; end++) {
    const run = embData.slice((end - KEYWORD_WINDOW) * EMBEDDING_SIZE, end * EMBEDDING_SIZE);
    const out = await runOne(
      sessions.keyword,
      new Tensor('float32', run, [1, KEYWORD_WINDOW, EMBEDDING_SIZE]),
    );
    scores.push((out.data as Float32Array)[0]);
  }
  return { melFrames: frames, embeddings: starts.length, scores, score: scores[scores.length - 1] };
}

/**
 * Compare scores with `expected.json` (kit `modelset.scores_match`).
 *
 * @returns `ok` false when the counts differ or any score is further than
 *   `tolerance.abs` from its expected value; `maxAbsDiff` is `Infinity` when counts differ.
 */
export function scoresMatch(
  expected: Expected,
  scores: readonly number[],
): { ok: boolean; maxAbsDiff: number } {
  if (scores.length !== expected.scores.length) {
    return { ok: false, maxAbsDiff: Infinity };
  }
  let maxAbsDiff = 0;
  scores.forEach((s, i) => {
    maxAbsDiff = Math.max(maxAbsDiff, Math.abs(s - expected.scores[i]));
  });
  return { ok: maxAbsDiff <= expected.tolerance.abs, maxAbsDiff };
}
