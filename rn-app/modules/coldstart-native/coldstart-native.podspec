# The coldstart app's native module for iOS: ios/ColdstartNative.mm + the shared C++ in cpp/.
# A local pod, autolinked from rn-app/package.json ("coldstart-native": "file:./modules/coldstart-native").
require "json"

package = JSON.parse(File.read(File.join(__dir__, "package.json")))

Pod::Spec.new do |s|
  s.name         = "coldstart-native"
  s.version      = package["version"]
  s.summary      = package["description"]
  s.homepage     = package["homepage"]
  s.license      = package["license"]
  s.authors      = "coldstart"
  s.platforms    = { :ios => "15.1" }
  s.source       = { :path => "." }
  s.source_files = "ios/*.{h,mm}", "cpp/*.{h,cpp}"
  s.private_header_files = "cpp/*.h"
  s.pod_target_xcconfig = {
    # keep the crash sites' frames: no inlining across them, frame pointers kept
    "OTHER_CPLUSPLUSFLAGS" => "-fno-omit-frame-pointer",
  }

  if respond_to?(:install_modules_dependencies, true)
    install_modules_dependencies(s)
  else
    s.dependency "React-Core"
  end
end
