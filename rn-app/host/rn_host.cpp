// The app's native shell on a Linux host (docs/rn-host.md): React Native's JSI over
// JavaScriptCore (ReactCommon/jsc/JSCRuntime.cpp), onnxruntime-react-native's own C++
// (cpp/, installed with onnxruntimejsi::install as its Android and iOS adapters do), the
// app's ColdstartNative crash code (modules/coldstart-native/cpp), and one JS thread.
//
// Usage (the kit builds the command line; kit/targets/rnhost/):
//   coldstart-rn-host --bundle app.js --scenario 'coldstart://run?id=L&...'
//                     --asset FILE=PATH ... [--hold-ms N]
//
// What it gives the JS bundle (rn-app/host/index.js, built with rn-app/host/build.mjs):
// `global`, `console`, `performance.now`, `setTimeout`/`clearTimeout`,
// `setImmediate`/`clearImmediate`, and `__coldstartHost` (the scenario URL, asset paths,
// file reads, the native crash, the binding's install, exit). React Native's own runtime
// scheduler and TurboModule layer are not here: the binding's CallInvoker runs its
// closures on this JS thread, in the order they were posted.
//
// Stdout carries what the app prints with console.log (its protocol lines, kit/protocol.py)
// and nothing else; the `sessions-created` line gets one key of the host's own, `placement`:
// ORT's verbose "Node placements" lines per creating thread, as the host workload reports
// them. They come from an ORT environment made here, before the binding's: ORT keeps one
// environment per process (OrtEnv::GetInstance), so the binding's `new Ort::Env(level, id)`
// gets this one, with this logging function, and its code stays as it ships.
//
// On a fatal signal it writes "COLDSTART-CRASH signal=N", a backtrace_symbols_fd(3)
// backtrace and "COLDSTART-CRASH end" to stderr with the host workload's own handler, then
// dies of the same signal. The handler is installed after JavaScriptCore made its VM, so it
// replaces JSC's own SIGSEGV handler (which lets a raised, non-fault SIGSEGV return).
//
// Exit status: 0 after `done`, 1 after `error` (the app says which through
// __coldstartHost.exit), 2 for bad arguments or a bundle that failed before the app printed
// anything, 1 for a later uncaught JS error; a signal when it crashes.

#include <JSCRuntime.h>
#include <ReactCommon/CallInvoker.h>
#include <jsi/jsi.h>
#include <onnxruntime_cxx_api.h>

#include "JsiMain.h"
#include "coldstart_native.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <execinfo.h>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace jsi = facebook::jsi;
using facebook::react::CallFunc;

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point kStart = Clock::now();

double now_ms() { return std::chrono::duration<double, std::milli>(Clock::now() - kStart).count(); }

// ---------------------------------------------------------------- crash evidence
// The host workload's own handler (kit/workload/coldstart_workload.cpp, its "crash
// reporting" section, cut out by the kit's build into workload_crash.inc): the kit reads
// one format from both programs.
#include "workload_crash.inc"

// ---------------------------------------------------------------- ORT's log, seen by the host
std::mutex g_placement_mutex;
std::vector<std::pair<long, std::map<std::string, long>>> g_placement;  // thread -> EP -> nodes
int g_hold_ms = 0;
std::atomic<int> g_hold_engaged{0};

// issue #39's hold, on the binding's own creating threads (docs/race.md "The hold"; the host
// workload's hold_here, kit/workload/coldstart_workload.cpp, does the same for its threads):
// each thread that logs the XNNPACK allocator's creation line is held there at least MS, and
// the held threads leave one at a time, MS apart, in the order the app requested their
// sessions. The app disposes its sessions in that order too, one at a time on the JS thread
// (launch.ts, `session.release()` -> the binding's synchronous `dispose`), so the allocator
// XNNPACK keeps (the first thread's) goes with the first session, and every later XNNPACK
// free goes through it. A session's request index comes from its model file (the
// ORT C API's CreateSession, seen through the C++ API's table, below) and the scenario
// URL's `models` and `sessions`: session i loads models[i % len(models)], as launch.ts does.
std::vector<std::string> g_requested;  // model name per session index, from the URL
std::vector<bool> g_requested_taken;
std::mutex g_request_mutex;
thread_local int t_session_index = -1;

struct HoldOrder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> inside;  // session indexes held now
  std::chrono::steady_clock::time_point last_exit{};
  bool any_exit = false;
};
HoldOrder g_hold;

void hold_here() {
  const int me = t_session_index;
  const auto ms = std::chrono::milliseconds(g_hold_ms);
  {
    std::lock_guard<std::mutex> lock(g_hold.mutex);
    g_hold.inside.push_back(me);
  }
  // the host workload's line (kit/targets/host/launcher.py, HOLD_PREFIX), written as the
  // hold begins
  std::fprintf(stderr, "COLDSTART-HOLD n=%d ms=%d t_ms=%.3f i=%d\n", ++g_hold_engaged, g_hold_ms,
               now_ms(), me);
  std::this_thread::sleep_for(ms);
  std::unique_lock<std::mutex> lock(g_hold.mutex);
  for (;;) {  // wait while a session requested earlier is still held, then keep MS apart
    bool earlier_inside = std::any_of(g_hold.inside.begin(), g_hold.inside.end(),
                                      [me](int other) { return other < me; });
    auto since = std::chrono::steady_clock::now() - g_hold.last_exit;
    if (earlier_inside) g_hold.changed.wait(lock);
    else if (g_hold.any_exit && since < ms) g_hold.changed.wait_for(lock, ms - since);
    else break;
  }
  g_hold.inside.erase(std::find(g_hold.inside.begin(), g_hold.inside.end(), me));
  g_hold.any_exit = true;
  g_hold.last_exit = std::chrono::steady_clock::now();
  g_hold.changed.notify_all();
}

// The scenario URL's value of `key` ("" when absent); values are URL-safe by the kit's
// validation (kit/scenario.py, Scenario.to_url), so no unquoting is needed.
std::string url_value(const std::string& url, const std::string& key) {
  size_t q = url.find('?');
  size_t pos = q == std::string::npos ? url.size() : q + 1;
  while (pos < url.size()) {
    size_t end = url.find('&', pos);
    if (end == std::string::npos) end = url.size();
    std::string item = url.substr(pos, end - pos);
    if (item.compare(0, key.size() + 1, key + "=") == 0) return item.substr(key.size() + 1);
    pos = end + 1;
  }
  return "";
}

void set_requested(const std::string& url) {
  std::vector<std::string> names;
  std::stringstream models(url_value(url, "models"));
  for (std::string name; std::getline(models, name, ',');) names.push_back(name);
  int sessions = std::atoi(url_value(url, "sessions").c_str());
  for (int i = 0; !names.empty() && i < sessions; ++i) g_requested.push_back(names[i % names.size()]);
  g_requested_taken.assign(g_requested.size(), false);
}

const OrtApi* g_real_api = nullptr;

// ORT's CreateSession, as the binding's `Ort::Session(env, path, options)` calls it: notes
// which requested session this thread creates (the first one not yet taken whose model is
// the file's name without ".onnx"), then runs the real one.
OrtStatus* ORT_API_CALL create_session(const OrtEnv* env, const ORTCHAR_T* model_path,
                                       const OrtSessionOptions* options, OrtSession** out) noexcept {
  std::string name = model_path;
  name = name.substr(name.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".onnx") == 0) name.resize(name.size() - 5);
  {
    std::lock_guard<std::mutex> lock(g_request_mutex);
    for (size_t i = 0; i < g_requested.size(); ++i) {
      if (!g_requested_taken[i] && g_requested[i] == name) {
        g_requested_taken[i] = true;
        t_session_index = static_cast<int>(i);
        break;
      }
    }
  }
  return g_real_api->CreateSession(env, model_path, options, out);
}

void ort_log(void*, OrtLoggingLevel severity, const char* category, const char* logid,
             const char* code_location, const char* message) {
  if (g_hold_ms > 0 && std::strstr(message, "Creating BFCArena for XnnpackExecutionProvider")) {
    hold_here();
    return;
  }
  const char* placed = std::strstr(message, "placed on [");
  const char* count = std::strstr(message, "Number of nodes: ");
  if (placed != nullptr && count != nullptr) {
    const char* ep = placed + std::strlen("placed on [");
    const char* ep_end = std::strchr(ep, ']');
    if (ep_end == nullptr) return;
    long tid = static_cast<long>(syscall(SYS_gettid));
    std::lock_guard<std::mutex> lock(g_placement_mutex);
    auto it = g_placement.begin();
    while (it != g_placement.end() && it->first != tid) ++it;
    if (it == g_placement.end()) it = g_placement.insert(it, {tid, {}});
    it->second[std::string(ep, ep_end)] += std::strtol(count + 17, nullptr, 10);
    return;
  }
  if (severity >= ORT_LOGGING_LEVEL_WARNING) {
    std::fprintf(stderr, "[ort %d %s %s] %s (%s)\n", static_cast<int>(severity), category, logid,
                 message, code_location);
  }
}

std::string placement_json() {
  std::lock_guard<std::mutex> lock(g_placement_mutex);
  std::string out = "[";
  for (size_t i = 0; i < g_placement.size(); ++i) {
    out += (i ? ",{\"i\":" : "{\"i\":") + std::to_string(i) +
           ",\"thread\":" + std::to_string(g_placement[i].first) + ",\"nodes\":{";
    bool first = true;
    for (const auto& kv : g_placement[i].second) {
      out += (first ? "\"" : ",\"") + kv.first + "\":" + std::to_string(kv.second);
      first = false;
    }
    out += "}}";
  }
  return out + "]";
}

// ---------------------------------------------------------------- the JS thread
std::atomic<bool> g_printed{false};  // a protocol line went out: later JS errors exit 1

class JsLoop : public facebook::react::CallInvoker {
 public:
  void invokeAsync(CallFunc&& func) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(func));
    wake_.notify_one();
  }
  void invokeSync(CallFunc&&) override {
    throw std::runtime_error("invokeSync is not available on the host's JS thread");
  }

  // JS thread only, below.
  double addTimer(jsi::Runtime& rt, const jsi::Value& fn, double delay_ms) {
    uint64_t id = ++next_id_;
    double due = now_ms() + (delay_ms > 0 ? delay_ms : 0);
    timers_[{due, id}] = std::make_shared<jsi::Value>(rt, fn);
    return static_cast<double>(id);
  }
  void clearTimer(double id) {
    for (auto it = timers_.begin(); it != timers_.end(); ++it)
      if (it->first.second == static_cast<uint64_t>(id)) {
        timers_.erase(it);
        return;
      }
  }
  void exit(int code) {
    exit_code_ = code;
    done_ = true;
  }

  int run(jsi::Runtime& rt) {
    while (!done_) {
      CallFunc task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (tasks_.empty()) {
          if (timers_.empty()) {
            wake_.wait(lock, [this] { return !tasks_.empty(); });
          } else if (timers_.begin()->first.first > now_ms()) {
            auto wait = std::chrono::duration<double, std::milli>(timers_.begin()->first.first -
                                                                   now_ms());
            wake_.wait_for(lock, wait, [this] { return !tasks_.empty(); });
          }
        }
        if (!tasks_.empty()) {
          task = std::move(tasks_.front());
          tasks_.pop_front();
        }
      }
      if (task) {
        guarded(rt, [&] { task(rt); });
      } else if (!timers_.empty() && timers_.begin()->first.first <= now_ms()) {
        auto fn = timers_.begin()->second;
        timers_.erase(timers_.begin());
        guarded(rt, [&] { fn->asObject(rt).asFunction(rt).call(rt); });
      }
    }
    return exit_code_;
  }

  template <typename F>
  void guarded(jsi::Runtime&, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rn-host: uncaught JS error: %s\n", e.what());
      exit(g_printed ? 1 : 2);
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<CallFunc> tasks_;
  std::map<std::pair<double, uint64_t>, std::shared_ptr<jsi::Value>> timers_;
  uint64_t next_id_ = 0;
  bool done_ = false;
  int exit_code_ = 0;
};

// ---------------------------------------------------------------- host functions
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string base64(const std::string& in) {
  static const char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kDigits[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out += kDigits[(v >> 18) & 63];
    out += kDigits[(v >> 12) & 63];
    out += i + 1 < in.size() ? kDigits[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

using HostFn = std::function<jsi::Value(jsi::Runtime&, const jsi::Value*, size_t)>;

void define(jsi::Runtime& rt, jsi::Object& on, const char* name, unsigned args, HostFn fn) {
  on.setProperty(rt, name,
                 jsi::Function::createFromHostFunction(
                     rt, jsi::PropNameID::forAscii(rt, name), args,
                     [fn](jsi::Runtime& r, const jsi::Value&, const jsi::Value* a, size_t n) {
                       return fn(r, a, n);
                     }));
}

std::string arg_string(jsi::Runtime& rt, const jsi::Value* a, size_t n, size_t i) {
  if (i >= n) return "undefined";
  if (a[i].isString()) return a[i].getString(rt).utf8(rt);
  return rt.global().getPropertyAsFunction(rt, "String").call(rt, a[i]).getString(rt).utf8(rt);
}

void print_line(FILE* to, std::string line) {
  if (to == stdout && line.rfind("COLDSTART {", 0) == 0 && line.back() == '}' &&
      line.find("\"phase\":\"sessions-created\"") != std::string::npos) {
    line.insert(line.size() - 1, ",\"placement\":" + placement_json());
  }
  if (to == stdout && line.rfind("COLDSTART {", 0) == 0) g_printed = true;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), to);
  std::fflush(to);
}

void install_globals(jsi::Runtime& rt, const std::shared_ptr<JsLoop>& loop,
                     const std::string& url, const std::map<std::string, std::string>& assets) {
  jsi::Object global = rt.global();
  global.setProperty(rt, "global", global);
  jsi::Object console(rt);
  for (const char* name : {"log", "info", "debug", "warn", "error"}) {
    FILE* to = (std::strcmp(name, "warn") == 0 || std::strcmp(name, "error") == 0) ? stderr : stdout;
    define(rt, console, name, 1, [to](jsi::Runtime& r, const jsi::Value* a, size_t n) {
      std::string line;
      for (size_t i = 0; i < n; ++i) line += (i ? " " : "") + arg_string(r, a, n, i);
      print_line(to, line);
      return jsi::Value::undefined();
    });
  }
  global.setProperty(rt, "console", console);
  jsi::Object performance(rt);
  define(rt, performance, "now", 0,
         [](jsi::Runtime&, const jsi::Value*, size_t) { return jsi::Value(now_ms()); });
  global.setProperty(rt, "performance", performance);
  for (const char* name : {"setTimeout", "setImmediate"}) {
    bool immediate = std::strcmp(name, "setImmediate") == 0;
    define(rt, global, name, 2, [loop, immediate](jsi::Runtime& r, const jsi::Value* a, size_t n) {
      if (n < 1 || !a[0].isObject() || !a[0].getObject(r).isFunction(r))
        throw jsi::JSError(r, "the callback is not a function");
      double delay = (!immediate && n > 1 && a[1].isNumber()) ? a[1].getNumber() : 0;
      return jsi::Value(loop->addTimer(r, a[0], delay));
    });
  }
  for (const char* name : {"clearTimeout", "clearImmediate"}) {
    define(rt, global, name, 1, [loop](jsi::Runtime&, const jsi::Value* a, size_t n) {
      if (n > 0 && a[0].isNumber()) loop->clearTimer(a[0].getNumber());
      return jsi::Value::undefined();
    });
  }

  jsi::Object host(rt);
  host.setProperty(rt, "scenarioUrl", jsi::String::createFromUtf8(rt, url));
  jsi::Object paths(rt);
  for (const auto& kv : assets)
    paths.setProperty(rt, kv.first.c_str(), jsi::String::createFromUtf8(rt, kv.second));
  host.setProperty(rt, "assets", paths);
  define(rt, host, "readText", 1, [](jsi::Runtime& r, const jsi::Value* a, size_t n) {
    return jsi::Value(jsi::String::createFromUtf8(r, read_file(arg_string(r, a, n, 0))));
  });
  define(rt, host, "readFileBase64", 1, [](jsi::Runtime& r, const jsi::Value* a, size_t n) {
    return jsi::Value(jsi::String::createFromUtf8(r, base64(read_file(arg_string(r, a, n, 0)))));
  });
  define(rt, host, "crash", 1, [](jsi::Runtime& r, const jsi::Value* a, size_t n) {
    std::fflush(stdout);
    return jsi::Value(coldstart_crash(arg_string(r, a, n, 0).c_str()) == 0);
  });
  define(rt, host, "installOrt", 0, [loop](jsi::Runtime& r, const jsi::Value*, size_t) {
    static std::shared_ptr<onnxruntimejsi::Env> env = onnxruntimejsi::install(r, loop);
    return jsi::Value::undefined();
  });
  define(rt, host, "exit", 1, [loop](jsi::Runtime&, const jsi::Value* a, size_t n) {
    loop->exit(n > 0 && a[0].isNumber() ? static_cast<int>(a[0].getNumber()) : 0);
    return jsi::Value::undefined();
  });
  global.setProperty(rt, "__coldstartHost", host);
}

int usage(const char* why) {
  std::fprintf(stderr, "coldstart-rn-host: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Die with the driver: a killed campaign (kill -9) leaves no launch behind.
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 3;
  std::string bundle, url;
  std::map<std::string, std::string> assets;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
    std::string value = argv[++i];
    if (arg == "--bundle") bundle = value;
    else if (arg == "--scenario") url = value;
    else if (arg == "--hold-ms") g_hold_ms = std::atoi(value.c_str());
    else if (arg == "--asset" && value.find('=') != std::string::npos)
      assets[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    else return usage(("unknown argument " + arg).c_str());
  }
  if (bundle.empty() || url.empty()) return usage("--bundle and --scenario are required");
  std::string source;
  try {
    source = read_file(bundle);
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  // The C++ API's table (Ort::Global<void>::api_, onnxruntime_cxx_api.h), with CreateSession
  // seen by the hold; every other entry is ORT's own.
  static OrtApi api = *Ort::Global<void>::api_;
  g_real_api = Ort::Global<void>::api_;
  api.CreateSession = create_session;
  Ort::Global<void>::api_ = &api;
  set_requested(url);
  // Before the binding's: the one environment of this process (see the top of this file).
  static Ort::Env* env = new Ort::Env(ORT_LOGGING_LEVEL_VERBOSE, "coldstart-rn-host", ort_log,
                                      nullptr);
  (void)env;
  std::unique_ptr<jsi::Runtime> rt = facebook::jsc::makeJSCRuntime();
  install_crash_handlers();  // after JSC's VM: replaces JSC's SIGSEGV handler
  auto loop = std::make_shared<JsLoop>();
  install_globals(*rt, loop, url, assets);
  loop->guarded(*rt, [&] {
    rt->evaluateJavaScript(std::make_shared<jsi::StringBuffer>(std::move(source)), bundle);
  });
  int code = loop->run(*rt);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);  // no teardown: a phone's app is not torn down either
}
