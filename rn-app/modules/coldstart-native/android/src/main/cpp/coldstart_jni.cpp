// JNI entry for ColdstartNativeModule.nativeCrash(String): calls the shared C++.
#include <jni.h>

#include "coldstart_native.h"

extern "C" JNIEXPORT jint JNICALL
Java_org_coldstart_nativemodule_ColdstartNativeModule_nativeCrash(JNIEnv* env, jclass, jstring kind) {
  if (kind == nullptr) {
    return -1;
  }
  const char* chars = env->GetStringUTFChars(kind, nullptr);
  if (chars == nullptr) {
    return -1;  // OutOfMemoryError pending
  }
  const int result = coldstart_crash(chars);
  env->ReleaseStringUTFChars(kind, chars);
  return result;
}
