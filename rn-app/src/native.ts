/**
 * The app's own native module, `ColdstartNative` (rn-app/modules/coldstart-native):
 * Java on Android, Objective-C++ on iOS, with the crash code in shared C++
 * (`cpp/coldstart_native.cpp`).
 */
import { NativeModules } from 'react-native';

/** The launch environment the heap-poisoning switches act through. */
export interface LaunchEnv {
  /** iOS: `MallocScribble` from the launch environment (`SIMCTL_CHILD_MallocScribble=1`). */
  readonly MallocScribble?: string | null;
  /** Android: set by `lib/<abi>/wrap.sh` in the debuggable build (`fill_on_free`). */
  readonly LIBC_DEBUG_MALLOC_OPTIONS?: string | null;
  /** Android 11+: the app's GWP-ASan mode (`always`, `default`, `never`). */
  readonly gwpAsanMode?: string | null;
}

export interface ColdstartNativeModule {
  /**
   * A file path for a bundled asset's `uri` (from `Image.resolveAssetSource`): raw resource
   * names are copied out of the APK to the app's files dir, `file://` URLs are returned as
   * paths, `http(s)://` URLs (dev server) are downloaded. Rejects with a message naming the
   * asset.
   */
  resolveAsset(uri: string, fileName: string): Promise<string>;
  /** The whole file, base64-encoded. */
  readFileBase64(path: string): Promise<string>;
  /** Crash natively on purpose: `segv` (SIGSEGV) or `abort` (SIGABRT). Does not return. */
  crash(kind: string): boolean;
  readonly launchEnv: LaunchEnv;
  /**
   * iOS: a `coldstart://` URL given as a process argument (`simctl launch UDID BUNDLE URL`),
   * for launchers that must set the environment and so cannot use `simctl openurl`.
   */
  readonly launchUrl?: string | null;
}

/** The module, or a clear error when the native side is missing from this build. */
export function coldstartNative(): ColdstartNativeModule {
  const mod = NativeModules.ColdstartNative as ColdstartNativeModule | undefined;
  if (!mod) {
    throw new Error(
      'the native module ColdstartNative is missing: rebuild the app (autolinking of rn-app/modules/coldstart-native)',
    );
  }
  return mod;
}
