package org.coldstart.nativemodule;

import android.content.Context;
import android.content.pm.ApplicationInfo;
import android.content.res.Resources;
import android.os.Build;
import android.util.Base64;
import androidx.annotation.NonNull;
import com.facebook.react.bridge.Promise;
import com.facebook.react.bridge.ReactApplicationContext;
import com.facebook.react.bridge.ReactContextBaseJavaModule;
import com.facebook.react.bridge.ReactMethod;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.util.HashMap;
import java.util.Map;

/**
 * NativeModules.ColdstartNative on Android (the JS side is rn-app/src/native.ts).
 *
 * <p>Bundled model files reach the app as Metro assets, which a release APK stores as raw
 * resources ({@code res/raw/assets_models_*.onnx}); ONNX Runtime needs a file path, so
 * {@link #resolveAsset} copies each one out of the APK into {@code files/coldstart-models/}.
 */
public class ColdstartNativeModule extends ReactContextBaseJavaModule {
  static {
    System.loadLibrary("coldstartnative");
  }

  private static native int nativeCrash(String kind);

  public ColdstartNativeModule(ReactApplicationContext context) {
    super(context);
  }

  @NonNull
  @Override
  public String getName() {
    return "ColdstartNative";
  }

  /** {@code launchEnv}: what the heap-poisoning switches set for this process. */
  @Override
  public Map<String, Object> getConstants() {
    Map<String, Object> env = new HashMap<>();
    // Set by lib/<abi>/wrap.sh in the debuggable "mallocdebug" build.
    env.put("LIBC_DEBUG_MALLOC_OPTIONS", System.getenv("LIBC_DEBUG_MALLOC_OPTIONS"));
    String gwpAsan = null;
    if (Build.VERSION.SDK_INT >= 30) {
      int mode = getReactApplicationContext().getApplicationInfo().getGwpAsanMode();
      gwpAsan = mode == ApplicationInfo.GWP_ASAN_ALWAYS ? "always"
          : mode == ApplicationInfo.GWP_ASAN_NEVER ? "never" : "default";
    }
    env.put("gwpAsanMode", gwpAsan);
    Map<String, Object> constants = new HashMap<>();
    constants.put("launchEnv", env);
    return constants;
  }

  /** Crashes natively (SIGSEGV or SIGABRT) on the JS thread; returns only for an unknown kind. */
  @ReactMethod(isBlockingSynchronousMethod = true)
  public boolean crash(String kind) {
    return nativeCrash(kind) == 0;
  }

  @ReactMethod
  public void resolveAsset(String uri, String fileName, Promise promise) {
    try {
      promise.resolve(resolve(uri, fileName));
    } catch (IOException | RuntimeException e) {
      promise.reject("E_COLDSTART_ASSET", fileName + ": " + e.getMessage(), e);
    }
  }

  @ReactMethod
  public void readFileBase64(String path, Promise promise) {
    try (InputStream in = new FileInputStream(path)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      copy(in, out);
      promise.resolve(Base64.encodeToString(out.toByteArray(), Base64.NO_WRAP));
    } catch (IOException e) {
      promise.reject("E_COLDSTART_READ", path + ": " + e.getMessage(), e);
    }
  }

  private String resolve(String uri, String fileName) throws IOException {
    if (fileName.isEmpty() || fileName.contains("/") || fileName.startsWith(".")) {
      throw new IOException("not a plain file name");
    }
    if (uri.startsWith("file://")) {
      return android.net.Uri.parse(uri).getPath();
    }
    if (uri.startsWith("/")) {
      return uri;
    }
    Context context = getReactApplicationContext();
    File dir = new File(context.getFilesDir(), "coldstart-models");
    if (!dir.isDirectory() && !dir.mkdirs()) {
      throw new IOException("cannot create " + dir);
    }
    File target = new File(dir, fileName);
    File partial = new File(dir, fileName + ".part");
    InputStream in;
    if (uri.startsWith("http://") || uri.startsWith("https://")) {
      in = new URL(uri).openStream(); // debug builds: the Metro dev server
    } else {
      Resources res = context.getResources();
      int id = res.getIdentifier(uri, "raw", context.getPackageName());
      if (id == 0) {
        throw new FileNotFoundException(
            "no raw resource " + uri + " in the APK (run scripts/copy-models.js and rebuild)");
      }
      in = res.openRawResource(id);
    }
    try (InputStream src = in; OutputStream out = new FileOutputStream(partial)) {
      copy(src, out);
    }
    if (!partial.renameTo(target)) {
      throw new IOException("cannot rename " + partial + " to " + target);
    }
    return target.getAbsolutePath();
  }

  private static void copy(InputStream in, OutputStream out) throws IOException {
    byte[] buffer = new byte[1 << 16];
    int n;
    while ((n = in.read(buffer)) > 0) {
      out.write(buffer, 0, n);
    }
  }
}
