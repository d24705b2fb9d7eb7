// NativeModules.ColdstartNative on iOS (the JS side is rn-app/src/native.ts).
// Bundled model files are Metro assets inside the .app (assets/assets/models/*.onnx), so
// resolveAsset turns their file:// URL into a path; debug builds download them from Metro.
#import <Foundation/Foundation.h>
#import <React/RCTBridgeModule.h>

#include <stdlib.h>

#include "coldstart_native.h"

@interface ColdstartNative : NSObject <RCTBridgeModule>
@end

@implementation ColdstartNative

RCT_EXPORT_MODULE(ColdstartNative)

+ (BOOL)requiresMainQueueSetup {
  return NO;
}

static id EnvOrNull(const char *name) {
  const char *value = getenv(name);
  return value ? (id)[NSString stringWithUTF8String:value] : (id)[NSNull null];
}

// launchEnv: MallocScribble as set by the launcher (simctl: SIMCTL_CHILD_MallocScribble=1;
// devicectl: --environment-variables). launchUrl: a coldstart:// URL passed as a process
// argument (`simctl launch UDID org.coldstart.app 'coldstart://run?...'`), for launchers
// that set the environment and so cannot use `simctl openurl`.
- (NSDictionary *)constantsToExport {
  id launchUrl = [NSNull null];
  for (NSString *arg in [[NSProcessInfo processInfo] arguments]) {
    if ([arg hasPrefix:@"coldstart://"]) {
      launchUrl = arg;
      break;
    }
  }
  return @{
    @"launchEnv" : @{@"MallocScribble" : EnvOrNull("MallocScribble")},
    @"launchUrl" : launchUrl,
  };
}

RCT_EXPORT_BLOCKING_SYNCHRONOUS_METHOD(crash:(NSString *)kind) {
  return @(coldstart_crash(kind.UTF8String) == 0);
}

RCT_EXPORT_METHOD(resolveAsset:(NSString *)uri
                  fileName:(NSString *)fileName
                  resolve:(RCTPromiseResolveBlock)resolve
                  reject:(RCTPromiseRejectBlock)reject) {
  if (fileName.length == 0 || [fileName containsString:@"/"] || [fileName hasPrefix:@"."]) {
    reject(@"E_COLDSTART_ASSET", [NSString stringWithFormat:@"%@: not a plain file name", fileName], nil);
    return;
  }
  NSURL *url = [NSURL URLWithString:uri];
  if ([uri hasPrefix:@"/"] || url.isFileURL) {
    NSString *path = [uri hasPrefix:@"/"] ? uri : url.path;
    if (![[NSFileManager defaultManager] fileExistsAtPath:path]) {
      reject(@"E_COLDSTART_ASSET", [NSString stringWithFormat:@"%@: %@ does not exist", fileName, path], nil);
      return;
    }
    resolve(path);
    return;
  }
  if ([url.scheme isEqualToString:@"http"] || [url.scheme isEqualToString:@"https"]) {
    NSError *error = nil;
    NSData *data = [NSData dataWithContentsOfURL:url options:0 error:&error];
    NSURL *caches = [[NSFileManager defaultManager] URLsForDirectory:NSCachesDirectory
                                                           inDomains:NSUserDomainMask].firstObject;
    NSURL *dir = [caches URLByAppendingPathComponent:@"coldstart-models" isDirectory:YES];
    [[NSFileManager defaultManager] createDirectoryAtURL:dir withIntermediateDirectories:YES attributes:nil error:nil];
    NSURL *target = [dir URLByAppendingPathComponent:fileName];
    if (data == nil || ![data writeToURL:target options:NSDataWritingAtomic error:&error]) {
      reject(@"E_COLDSTART_ASSET", [NSString stringWithFormat:@"%@: %@", fileName, error.localizedDescription], error);
      return;
    }
    resolve(target.path);
    return;
  }
  reject(@"E_COLDSTART_ASSET", [NSString stringWithFormat:@"%@: unsupported asset URI %@", fileName, uri], nil);
}

RCT_EXPORT_METHOD(readFileBase64:(NSString *)path
                  resolve:(RCTPromiseResolveBlock)resolve
                  reject:(RCTPromiseRejectBlock)reject) {
  NSError *error = nil;
  NSData *data = [NSData dataWithContentsOfFile:path options:0 error:&error];
  if (data == nil) {
    reject(@"E_COLDSTART_READ", [NSString stringWithFormat:@"%@: %@", path, error.localizedDescription], error);
    return;
  }
  resolve([data base64EncodedStringWithOptions:0]);
}

@end
