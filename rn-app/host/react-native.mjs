/**
 * The host's stand-in for `react-native` (docs/rn-host.md): exactly what the app and
 * onnxruntime-react-native's lib/ take from it, backed by the host program
 * (rn-app/host/rn_host.cpp, `globalThis.__coldstartHost`). tests/test_rnhost.py fails when the
 * app starts to use a name or a member that is not here.
 *
 * - `NativeModules.Onnxruntime.install()`: the binding's blocking install, which calls
 *   `onnxruntimejsi::install(runtime, callInvoker)` as the Android and iOS adapters do;
 * - `NativeModules.ColdstartNative`: the app's module (src/native.ts); `crash` runs the
 *   app's own modules/coldstart-native/cpp/coldstart_native.cpp;
 * - `Linking.getInitialURL()`: the scenario URL the kit launched with (the deep link);
 * - `Image.resolveAssetSource(asset)`: a `file://` URL of the model set file (the bundle's
 *   asset modules carry the paths the kit passed, see build.cjs);
 * - `AppRegistry`, `Platform`, `StyleSheet`, and host components `View`, `Text`,
 *   `ScrollView`, rendered by react-test-renderer.
 */
const host = () => globalThis.__coldstartHost;
const registry = new Map();

export const AppRegistry = {
  registerComponent(name, provider) {
    registry.set(name, provider);
    return name;
  },
};

/** The component `AppRegistry.registerComponent(name, ...)` registered (the host entry). */
export function registeredComponent(name) {
  const provider = registry.get(name);
  if (!provider) {
    throw new Error(`no component registered as ${name}`);
  }
  return provider();
}

export const NativeModules = {
  Onnxruntime: {
    install: () => host().installOrt(),
  },
  ColdstartNative: {
    resolveAsset: async (uri, fileName) => {
      if (typeof uri !== 'string' || !uri.startsWith('file://')) {
        throw new Error(`${fileName}: ${uri} is not a file:// URL`);
      }
      return uri.slice('file://'.length);
    },
    readFileBase64: async path => host().readFileBase64(path),
    crash: kind => host().crash(kind),
    launchEnv: {},
    get launchUrl() {
      return host().scenarioUrl;
    },
  },
};

export const Linking = {
  getInitialURL: async () => host().scenarioUrl,
};

export const Image = {
  resolveAssetSource: asset =>
    asset && typeof asset.path === 'string' ? { uri: `file://${asset.path}` } : null,
};

export const Platform = {
  OS: 'linux',
  select: spec => ('linux' in spec ? spec.linux : spec.default),
};

export const StyleSheet = {
  create: styles => styles,
};

export const View = 'View';
export const Text = 'Text';
export const ScrollView = 'ScrollView';
