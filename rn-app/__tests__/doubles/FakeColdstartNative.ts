/**
 * Test double for NativeModules.ColdstartNative (rn-app/modules/coldstart-native), imitating
 * what the iOS module does with a release bundle's asset (ios/ColdstartNative.mm): a
 * `file://` URL becomes its path when the file exists, anything else is rejected with the
 * module's message; `readFileBase64` returns the file's bytes in base64. `crash` records the
 * kind instead of killing Jest (the real crash is checked by scripts/test-rn.sh).
 */
import * as fs from 'fs';

export class FakeColdstartNative {
  readonly crashes: string[] = [];
  readonly resolved: Array<{ uri: string; fileName: string }> = [];
  readonly launchEnv = { MallocScribble: '1' };
  readonly launchUrl: string | null = null;

  async resolveAsset(uri: string, fileName: string): Promise<string> {
    this.resolved.push({ uri, fileName });
    if (!uri.startsWith('file://')) {
      throw new Error(`${fileName}: unsupported asset URI ${uri}`);
    }
    const path = decodeURIComponent(uri.slice('file://'.length));
    if (!fs.existsSync(path)) {
      throw new Error(`${fileName}: ${path} does not exist`);
    }
    return path;
  }

  async readFileBase64(path: string): Promise<string> {
    return fs.readFileSync(path).toString('base64');
  }

  crash(kind: string): boolean {
    this.crashes.push(kind);
    return false;
  }
}
