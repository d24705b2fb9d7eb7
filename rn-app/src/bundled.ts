/**
 * The model set as bundled into the app by Metro (scripts/copy-models.js copies it from
 * the checkout's models/ into assets/models/ first; the folder is git-ignored).
 *
 * Each `require` of a binary file gives a Metro asset id; `Image.resolveAssetSource(id).uri`
 * is then a raw resource name on Android release builds, a `file://` URL inside the .app on
 * iOS release builds, and an `http://` URL of the dev server in debug builds
 * (react-native `AssetSourceResolver`). The native module turns each into a file path.
 */
import type { Expected, Role } from './pipeline';

export interface ManifestModel {
  readonly name: string;
  readonly role: Role;
  readonly file: string;
  readonly size: number;
  readonly sha256: string;
}

export interface Manifest {
  readonly models: readonly ManifestModel[];
  readonly clip: { readonly file: string; readonly sha256: string };
}

/** Model name -> Metro asset id. Keep in step with models/manifest.json (a Jest test checks). */
export const MODEL_ASSETS: Readonly<Record<string, number>> = {
  melspectrogram: require('../assets/models/melspectrogram.onnx'),
  embedding_model: require('../assets/models/embedding_model.onnx'),
  'hey_jarvis_v0.1': require('../assets/models/hey_jarvis_v0.1.onnx'),
};

/** The 16 kHz mono int16 clip (`models/clip.wav`). */
export const CLIP_ASSET: number = require('../assets/models/clip.wav');

export const MANIFEST: Manifest = require('../assets/models/manifest.json');
export const EXPECTED: Expected = require('../assets/models/expected.json');
