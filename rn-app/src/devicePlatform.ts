/**
 * The launch platform on a phone: onnxruntime-react-native creates the sessions, the
 * ColdstartNative module resolves the bundled files and crashes on purpose.
 */
import { toByteArray } from 'base64-js';
import { env } from 'onnxruntime-common';
import { Image, Platform as RNPlatform } from 'react-native';
import { CLIP_ASSET, EXPECTED, MANIFEST, MODEL_ASSETS } from './bundled';
import { sinceStartMs } from './clock';
import type { Platform } from './launch';
import type { Fields } from './protocol';
import { coldstartNative } from './native';
import type { Role } from './pipeline';
import { readClip } from './wav';

declare global {
  // Installed by onnxruntime-react-native's native module (JsiMain.cpp); `version` is
  // OrtGetApiBase()->GetVersionString() of the libonnxruntime that loaded.
  var OrtApi: { readonly version: string } | undefined; // eslint-disable-line no-var
}

async function resolveBundled(asset: number, fileName: string): Promise<string> {
  const source = Image.resolveAssetSource(asset);
  if (!source || !source.uri) {
    throw new Error(`${fileName} is not in the app bundle: run scripts/copy-models.js and rebuild`);
  }
  return coldstartNative().resolveAsset(source.uri, fileName);
}

/**
 * The platform for `runLaunch` on Android and iOS.
 *
 * @throws Error when a native module is missing from the build; the screen reports it as
 *   `error` (onnxruntime-react-native is required here, not at bundle load, because its
 *   import installs the JSI API and throws without the native module).
 */
export function devicePlatform(): Platform {
  const native = coldstartNative();
  const { InferenceSession } =
    require('onnxruntime-react-native') as typeof import('onnxruntime-react-native');
  const roles: Record<string, Role> = {};
  const files: Record<string, string> = {};
  for (const m of MANIFEST.models) {
    roles[m.name] = m.role;
    files[m.name] = m.file;
  }
  return {
    createSession: (path, options) => InferenceSession.create(path, options),
    ortVersion: () => globalThis.OrtApi?.version ?? 'unknown',
    resolveModel: name => resolveBundled(MODEL_ASSETS[name], files[name]),
    loadClip: async () => {
      const path = await resolveBundled(CLIP_ASSET, MANIFEST.clip.file);
      const clip = readClip(toByteArray(await native.readFileBase64(path)));
      if (!clip.ok) {
        throw new Error(`${MANIFEST.clip.file}: ${clip.reason}`);
      }
      return clip.samples;
    },
    roles,
    expected: EXPECTED,
    setOrtLogLevel: level => {
      env.logLevel = level;
    },
    crash: kind => {
      native.crash(kind);
    },
    now: sinceStartMs,
    startFields: {
      platform: RNPlatform.OS,
      poison: { ...native.launchEnv } as Fields,
    },
  };
}
