// coldstart host workload: one cold launch of the openWakeWord pipeline on ONNX Runtime.
//
// Usage (the kit builds the command line; see kit/targets/host.py):
//   coldstart-workload --scenario 'coldstart://run?id=L&mode=concurrent&sessions=3&...'
//                      --model ROLE:NAME:PATH ... --clip clip.wav
//                      --expected S1,S2,... --tolerance T
//
// It prints one protocol line per phase on stdout ("COLDSTART {json}", kit/protocol.py) and
// nothing else there; ONNX Runtime's own messages go to stderr. It creates `sessions`
// sessions, each on its own std::thread, released together by a spin barrier (concurrent;
// a pthread barrier under a race detector, COLDSTART_BARRIER=pthread) or one after another
// (serial), appends the EPs asked for (XNNPACK with its
// intra_op_num_threads option, then CPU), runs the pipeline once, checks the scores,
// releases the sessions and reports `done`. Evidence that XNNPACK took nodes comes from
// ORT's verbose "Node placements" log, captured through a custom logging function.
//
// On a fatal signal it writes "COLDSTART-CRASH signal=N addr=0x..." and a backtrace_symbols_fd(3)
// backtrace to stderr, then dies of the same signal (SA_RESETHAND + raise).
//
// Exit status: 0 after `done`, 1 after an `error` line, 2 for bad arguments; a signal when
// it crashes (on purpose with inject=segv|abort@PHASE).

#include <onnxruntime_cxx_api.h>
#include <cpu_provider_factory.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <execinfo.h>
#include <pthread.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point kStart = Clock::now();

double now_ms() {
  return std::chrono::duration<double, std::milli>(Clock::now() - kStart).count();
}

// ---------------------------------------------------------------- JSON output helpers
std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  double r = std::round(v * 1000.0) / 1000.0;
  char buf[64];
  if (r == std::floor(r) && std::fabs(r) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", r);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", r);
    std::string s = buf;  // trim trailing zeros, as JSON.stringify would print
    while (!s.empty() && s.back() == '0') s.pop_back();
    return s;
  }
  return buf;
}

std::string json_score(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string g_launch_id = "unset";
std::mutex g_out_mutex;

// Prints one protocol line: keys v, id, phase, t_ms, then `extra` (already JSON, no braces).
void emit(const std::string& phase, const std::string& extra = "") {
  std::lock_guard<std::mutex> lock(g_out_mutex);
  std::string line = "COLDSTART {\"v\":1,\"id\":" + json_str(g_launch_id) + ",\"phase\":" +
                     json_str(phase) + ",\"t_ms\":" + json_num(now_ms());
  if (!extra.empty()) line += "," + extra;
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

// ---------------------------------------------------------------- crash reporting
void on_fatal_signal(int sig, siginfo_t* info, void*) {
  char head[96];
  // addr= is si_addr (the faulting address for SIGSEGV/SIGBUS; sigaction(2)): it tells a
  // null dereference from a use of freed memory. snprintf of ints and a pointer is
  // async-signal-safe in glibc (no allocation).
  bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
  int n = fault && info != nullptr
              ? std::snprintf(head, sizeof head, "COLDSTART-CRASH signal=%d addr=%p\n", sig,
                              info->si_addr)
              : std::snprintf(head, sizeof head, "COLDSTART-CRASH signal=%d\n", sig);
  if (n > 0) (void)!write(2, head, static_cast<size_t>(n));
  void* frames[64];
  int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, 2);
  static const char tail[] = "COLDSTART-CRASH end\n";
  (void)!write(2, tail, sizeof tail - 1);
  raise(sig);  // SA_RESETHAND restored the default action: die of the same signal
}

void install_crash_handlers() {
  void* prime[1];
  backtrace(prime, 1);  // loads libgcc now, so the handler does not allocate later
  static std::vector<char> altstack(1 << 16);
  stack_t ss{};
  ss.ss_sp = altstack.data();
  ss.ss_size = altstack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

// ---------------------------------------------------------------- scenario
struct Scenario {
  std::string id;
  std::string mode = "concurrent";
  int sessions = 3;
  std::vector<std::string> models;
  std::vector<std::string> ep = {"xnnpack", "cpu"};
  int threads = 1;
  bool infer = true;
  bool release = true;
  std::string inject_kind;   // "", segv, abort, hang
  std::string inject_phase;  // phase name
  std::string load = "path";
  std::string warmup = "none";
  std::string log = "warning";  // the ORT environment's log level (host amplifier)
  int hold_ms = 0;              // hold=MS: sleep on the allocator's creation line (amplifier)
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

// The kit validates scenarios (kit/scenario.py); this parser trusts the keys it knows and
// rejects the rest, so a typo never runs silently.
Scenario parse_scenario(const std::string& url) {
  Scenario sc;
  std::string query = url;
  auto q = url.find('?');
  if (q != std::string::npos) query = url.substr(q + 1);
  for (const auto& pair : split(query, '&')) {
    auto eq = pair.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("scenario part without '=': " + pair);
    std::string key = pair.substr(0, eq), value = url_decode(pair.substr(eq + 1));
    if (key == "id") sc.id = value;
    else if (key == "mode") sc.mode = value;
    else if (key == "sessions") sc.sessions = std::stoi(value);
    else if (key == "models") sc.models = split(value, ',');
    else if (key == "ep") sc.ep = split(value, ',');
    else if (key == "threads") sc.threads = std::stoi(value);
    else if (key == "infer") sc.infer = value == "1";
    else if (key == "release") sc.release = value == "1";
    else if (key == "inject") {
      if (value != "none") {
        auto at = value.find('@');
        if (at == std::string::npos) throw std::invalid_argument("inject needs KIND@PHASE");
        sc.inject_kind = value.substr(0, at);
        sc.inject_phase = value.substr(at + 1);
      }
    } else if (key == "load") sc.load = value;
    else if (key == "warmup") sc.warmup = value;
    else if (key == "log") sc.log = value;
    else if (key == "hold") sc.hold_ms = std::stoi(value);
    else throw std::invalid_argument("unknown scenario key: " + key);
  }
  if (sc.mode != "concurrent" && sc.mode != "serial") throw std::invalid_argument("bad mode");
  if (sc.sessions < 1 || sc.sessions > 64) throw std::invalid_argument("bad sessions");
  if (sc.threads < 1 || sc.threads > 64) throw std::invalid_argument("bad threads");
  if (sc.log != "warning" && sc.log != "verbose") throw std::invalid_argument("bad log");
  if (sc.hold_ms < 0 || sc.hold_ms > 10000) throw std::invalid_argument("bad hold");
  if (sc.hold_ms > 0 && sc.log != "verbose") throw std::invalid_argument("hold needs log=verbose");
  return sc;
}

Scenario g_scenario;

// Reports `phase`, then crashes or stalls there if the scenario injects a fault at it.
void reach(const std::string& phase, const std::string& extra = "") {
  emit(phase, extra);
  if (g_scenario.inject_phase != phase) return;
  if (g_scenario.inject_kind == "segv") {
    volatile int* bad = reinterpret_cast<volatile int*>(static_cast<uintptr_t>(0x10));
    *bad = 42;  // a real invalid write: SIGSEGV, fault addr 0x10
  } else if (g_scenario.inject_kind == "abort") {
    std::abort();
  } else if (g_scenario.inject_kind == "hang") {
    for (;;) pause();
  }
}

// ---------------------------------------------------------------- node placement evidence
struct Placement {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, long>> by_session;  // logid -> EP -> nodes
};
Placement g_placement;

// hold=MS (host amplifier, docs/race.md "The hold"): onnxruntime 1.21 creates the XNNPACK
// EP's process-wide allocator through CreateAllocator, whose BFCArena constructor logs the
// INFO line "Creating BFCArena for XnnpackExecutionProvider ..." (core/framework/
// bfc_arena.cc:29). It is delivered synchronously, on the creating thread, between the EP's
// unsynchronised "is the shared allocator null?" and its assignment
// (xnnpack_execution_provider.cc:186-193). Sleeping there holds that thread inside the racy
// window, so every other creating thread passes the null check too: the race happens for
// real. Each engagement is written at once to stderr (write(2): it survives a crash that
// follows) as "COLDSTART-HOLD n=N ms=MS t_ms=T i=I" (I: the session's index), and
// `sessions-created` carries "hold":{"ms":MS,"engaged":N,"order":[I, ...]}.
//
// The held threads leave the window one at a time, in session index order, MS apart (each
// also held at least MS): session 0's thread publishes its allocator and runs
// xnn_initialize first, so XNNPACK keeps session 0's allocator, and the later threads then
// overwrite the static that held it. Only session 0 still owns that allocator; the release
// (one session at a time, in index order, under a hold: as the app's JS thread disposes its
// sessions) frees it with session 0, and every later XNNPACK free goes through it. That is
// the schedule in which the defect fails (active testing picks the failing interleaving of
// a race it made happen); without a defined order the release only sometimes frees the kept
// allocator before the last XNNPACK kernel goes (about 60% of launches crashed, issue #39).
constexpr const char* kHoldLine = "Creating BFCArena for XnnpackExecutionProvider";
std::atomic<int> g_hold_engaged{0};
thread_local int t_session_index = -1;  // the creating thread's session, set by the workload
struct HoldOrder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> inside;  // session indexes held now
  std::vector<int> order;   // session indexes in the order they left the window
  std::chrono::steady_clock::time_point last_exit{};
};
HoldOrder g_hold;

void hold_here() {
  int n = g_hold_engaged.fetch_add(1, std::memory_order_acq_rel) + 1;
  const int me = t_session_index;
  const auto ms = std::chrono::milliseconds(g_scenario.hold_ms);
  {
    std::lock_guard<std::mutex> lock(g_hold.mutex);
    g_hold.inside.push_back(me);
  }
  char line[112];
  int len = std::snprintf(line, sizeof line, "COLDSTART-HOLD n=%d ms=%d t_ms=%s i=%d\n", n,
                          g_scenario.hold_ms, json_num(now_ms()).c_str(), me);
  if (len > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(len, sizeof line - 1)));
  std::this_thread::sleep_for(ms);
  std::unique_lock<std::mutex> lock(g_hold.mutex);
  for (;;) {  // wait while a session with a lower index is still held, then keep MS apart
    bool lower_inside = std::any_of(g_hold.inside.begin(), g_hold.inside.end(),
                                    [me](int other) { return other < me; });
    auto since = std::chrono::steady_clock::now() - g_hold.last_exit;
    if (lower_inside) {
      g_hold.changed.wait(lock);
    } else if (!g_hold.order.empty() && since < ms) {
      g_hold.changed.wait_for(lock, ms - since);
    } else {
      break;
    }
  }
  g_hold.inside.erase(std::find(g_hold.inside.begin(), g_hold.inside.end(), me));
  g_hold.order.push_back(me);
  g_hold.last_exit = std::chrono::steady_clock::now();
  g_hold.changed.notify_all();
}

std::string hold_order_json() {
  std::lock_guard<std::mutex> lock(g_hold.mutex);
  std::string out;
  for (size_t k = 0; k < g_hold.order.size(); ++k) out += (k ? "," : "") + std::to_string(g_hold.order[k]);
  return "[" + out + "]";
}

// ORT logging function (onnxruntime_c_api.h, OrtLoggingFunction). Keeps only the
// "Node placements" lines ("All nodes placed on [EP]. Number of nodes: N" and
// "Node(s) placed on [EP]. Number of nodes: N"); holds the creating thread on the XNNPACK
// allocator's creation line when hold=MS asks for it; prints warnings and errors to stderr.
void ort_log(void*, OrtLoggingLevel severity, const char* category, const char* logid,
             const char* code_location, const char* message) {
  if (g_scenario.hold_ms > 0 && std::strstr(message, kHoldLine) != nullptr) {
    hold_here();
    return;
  }
  const char* placed = std::strstr(message, "placed on [");
  if (placed != nullptr) {
    const char* ep_begin = placed + std::strlen("placed on [");
    const char* ep_end = std::strchr(ep_begin, ']');
    const char* count = std::strstr(message, "Number of nodes: ");
    if (ep_end != nullptr && count != nullptr) {
      std::lock_guard<std::mutex> lock(g_placement.mutex);
      g_placement.by_session[logid][std::string(ep_begin, ep_end)] +=
          std::strtol(count + std::strlen("Number of nodes: "), nullptr, 10);
    }
    return;
  }
  if (severity >= ORT_LOGGING_LEVEL_WARNING) {
    std::fprintf(stderr, "[ort %d %s %s] %s (%s)\n", static_cast<int>(severity), category, logid,
                 message, code_location);
  }
}

// ---------------------------------------------------------------- models and sessions
struct ModelArg {
  std::string role, name, path;
  std::vector<char> bytes;  // filled for load=bytes
};

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Ort::SessionOptions make_options(const Scenario& sc, const std::vector<std::string>& eps,
                                 const std::string& logid) {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(sc.threads);
  so.SetLogId(logid.c_str());
  so.SetLogSeverityLevel(ORT_LOGGING_LEVEL_VERBOSE);  // for the "Node placements" lines
  for (const auto& ep : eps) {
    if (ep == "xnnpack") {
      std::unordered_map<std::string, std::string> opts{
          {"intra_op_num_threads", std::to_string(sc.threads)}};
      so.AppendExecutionProvider("XNNPACK", opts);
    } else if (ep == "cpu") {
      Ort::ThrowOnError(OrtSessionOptionsAppendExecutionProvider_CPU(so, 1));
    } else {
      throw std::invalid_argument("unsupported execution provider: " + ep);
    }
  }
  return so;
}

struct Created {
  std::unique_ptr<Ort::Session> session;
  std::string model, error;
  double start_ms = 0, end_ms = 0;
};

void create_one(Ort::Env& env, const Scenario& sc, const ModelArg& model, int i, Created& out) {
  try {
    Ort::SessionOptions so = make_options(sc, sc.ep, "s" + std::to_string(i));
    out.model = model.name;
    out.start_ms = now_ms();
    if (sc.load == "bytes") {
      out.session = std::make_unique<Ort::Session>(env, model.bytes.data(), model.bytes.size(), so);
    } else {
      out.session = std::make_unique<Ort::Session>(env, model.path.c_str(), so);
    }
    out.end_ms = now_ms();
  } catch (const std::exception& e) {
    out.end_ms = now_ms();
    out.error = e.what();
  }
}

// Under a race detector (kit/detector sets COLDSTART_BARRIER=pthread) the concurrent threads
// meet at a pthread barrier instead: helgrind and DRD understand pthread_barrier_wait, while
// they would report the spin barrier's own atomics as races. The tools run one thread at a
// time anyway, so the spin barrier's short arrival skew means nothing there.
bool use_pthread_barrier() {
  const char* kind = std::getenv("COLDSTART_BARRIER");
  return kind != nullptr && std::strcmp(kind, "pthread") == 0;
}

// Runs `work(i)` for i in [0, n), each on its own std::thread: all released at once by a
// spin barrier (concurrent) or started only after the previous one ended (serial).
template <typename Fn>
void run_threads(int n, bool concurrent, Fn work) {
  std::vector<std::thread> pool;
  if (!concurrent) {
    for (int i = 0; i < n; ++i) std::thread(work, i).join();
    return;
  }
  if (use_pthread_barrier()) {
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, nullptr, static_cast<unsigned>(n));
    for (int i = 0; i < n; ++i) {
      pool.emplace_back([&, i] {
        pthread_barrier_wait(&barrier);
        work(i);
      });
    }
    for (auto& t : pool) t.join();
    pthread_barrier_destroy(&barrier);
    return;
  }
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([&, i] {
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) {
      }
      work(i);
    });
  }
  while (ready.load(std::memory_order_acquire) < n) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& t : pool) t.join();
}

// ---------------------------------------------------------------- pipeline
std::vector<int16_t> read_wav(const std::string& path) {
  std::vector<char> data = read_file(path);
  // RIFF/WAVE: walk the chunks to "fmt " and "data" (16-bit PCM, mono, 16 kHz).
  if (data.size() < 12 || std::memcmp(data.data(), "RIFF", 4) || std::memcmp(data.data() + 8, "WAVE", 4))
    throw std::runtime_error(path + " is not a RIFF/WAVE file");
  size_t pos = 12;
  std::vector<int16_t> samples;
  bool fmt_ok = false;
  while (pos + 8 <= data.size()) {
    uint32_t size;
    std::memcpy(&size, data.data() + pos + 4, 4);
    const char* body = data.data() + pos + 8;
    if (!std::memcmp(data.data() + pos, "fmt ", 4) && size >= 16) {
      uint16_t format, channels, bits;
      uint32_t rate;
      std::memcpy(&format, body, 2);
      std::memcpy(&channels, body + 2, 2);
      std::memcpy(&rate, body + 4, 4);
      std::memcpy(&bits, body + 14, 2);
      fmt_ok = format == 1 && channels == 1 && rate == 16000 && bits == 16;
    } else if (!std::memcmp(data.data() + pos, "data", 4)) {
      size = std::min<uint32_t>(size, static_cast<uint32_t>(data.size() - pos - 8));
      samples.resize(size / 2);
      std::memcpy(samples.data(), body, samples.size() * 2);
    }
    pos += 8 + size + (size & 1);
  }
  if (!fmt_ok || samples.empty()) throw std::runtime_error(path + " is not 16 kHz mono 16-bit PCM");
  return samples;
}

std::vector<float> run1(Ort::Session& s, const std::vector<float>& input,
                        const std::vector<int64_t>& shape, std::vector<int64_t>* out_shape) {
  Ort::AllocatorWithDefaultOptions alloc;
  auto in_name = s.GetInputNameAllocated(0, alloc);
  auto out_name = s.GetOutputNameAllocated(0, alloc);
  auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value tensor = Ort::Value::CreateTensor<float>(
      mem, const_cast<float*>(input.data()), input.size(), shape.data(), shape.size());
  const char* in_names[] = {in_name.get()};
  const char* out_names[] = {out_name.get()};
  auto outputs = s.Run(Ort::RunOptions{nullptr}, in_names, &tensor, 1, out_names, 1);
  auto info = outputs[0].GetTensorTypeAndShapeInfo();
  if (out_shape != nullptr) *out_shape = info.GetShape();
  const float* p = outputs[0].GetTensorData<float>();
  return std::vector<float>(p, p + info.GetElementCount());
}

// The openWakeWord pipeline, as kit/modelset.py defines it (openWakeWord 0.4.0 utils.py).
std::vector<double> run_pipeline(Ort::Session& mel, Ort::Session& emb, Ort::Session& kw,
                                 const std::vector<int16_t>& pcm) {
  std::vector<float> x(pcm.begin(), pcm.end());
  std::vector<int64_t> shape;
  std::vector<float> spec = run1(mel, x, {1, static_cast<int64_t>(x.size())}, &shape);
  const int bins = 32;
  const int frames = static_cast<int>(spec.size() / bins);
  for (float& v : spec) v = v / 10.0f + 2.0f;
  const int window = 76, step = 8;
  std::vector<float> batch;
  int count = 0;
  for (int i = 0; i + window <= frames; i += step, ++count)
    batch.insert(batch.end(), spec.begin() + i * bins, spec.begin() + (i + window) * bins);
  if (count < 16) throw std::runtime_error("clip too short for one keyword window");
  std::vector<float> embeddings = run1(emb, batch, {count, window, bins, 1}, nullptr);
  std::vector<double> scores;
  for (int end = 16; end <= count; ++end) {
    std::vector<float> win(embeddings.begin() + (end - 16) * 96, embeddings.begin() + end * 96);
    scores.push_back(run1(kw, win, {1, 16, 96}, nullptr).at(0));
  }
  return scores;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "coldstart-workload: %s\n", why.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef __linux__
  // Die with the driver: a killed campaign (kill -9) leaves no workload behind.
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 3;
#endif
  install_crash_handlers();
  std::string scenario_url, clip_path;
  std::vector<ModelArg> model_args;
  std::vector<double> expected;
  double tolerance = 1e-3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--scenario") scenario_url = next();
    else if (a == "--clip") clip_path = next();
    else if (a == "--tolerance") tolerance = std::stod(next());
    else if (a == "--expected") {
      for (const auto& s : split(next(), ',')) expected.push_back(std::stod(s));
    } else if (a == "--model") {
      auto parts = split(next(), ':');
      if (parts.size() < 3) usage("--model takes ROLE:NAME:PATH");
      std::string path = parts[2];
      for (size_t k = 3; k < parts.size(); ++k) path += ":" + parts[k];
      model_args.push_back({parts[0], parts[1], path, {}});
    } else if (a == "--version") {
      std::printf("%s\n", Ort::GetVersionString().c_str());
      return 0;
    } else {
      usage("unknown argument " + a);
    }
  }
  try {
    g_scenario = parse_scenario(scenario_url);
  } catch (const std::exception& e) {
    usage(std::string("bad scenario: ") + e.what());
  }
  const Scenario& sc = g_scenario;
  g_launch_id = sc.id.empty() ? "unset" : sc.id;
  reach("start");
  try {
    // models-ready: the files of every model the scenario creates, found (and read, for bytes)
    std::map<std::string, ModelArg*> by_name, by_role;
    for (auto& m : model_args) {
      by_name[m.name] = &m;
      by_role[m.role] = &m;
    }
    std::vector<std::string> names = sc.models;
    if (names.empty())
      for (auto& m : model_args) names.push_back(m.name);
    for (const auto& n : names) {
      auto it = by_name.find(n);
      if (it == by_name.end()) throw std::runtime_error("model " + n + " was not given");
      if (sc.load == "bytes" && it->second->bytes.empty()) it->second->bytes = read_file(it->second->path);
      else if (sc.load == "path" && access(it->second->path.c_str(), R_OK) != 0)
        throw std::runtime_error("cannot read model " + it->second->path);
    }
    std::vector<int16_t> pcm;
    if (sc.infer) pcm = read_wav(clip_path);
    std::string models_json;
    for (size_t k = 0; k < names.size(); ++k) models_json += (k ? "," : "") + json_str(names[k]);
    reach("models-ready", "\"models\":[" + models_json + "],\"load\":" + json_str(sc.load));

    // log=verbose (amplifier): onnxruntime then formats and delivers its INFO line "Creating
    // BFCArena for XnnpackExecutionProvider ..." between the XNNPACK EP's unsynchronised
    // "is the shared allocator null?" and its assignment, widening the race window.
    Ort::Env env(sc.log == "verbose" ? ORT_LOGGING_LEVEL_VERBOSE : ORT_LOGGING_LEVEL_WARNING,
                 "coldstart", ort_log, nullptr);
    std::unique_ptr<Ort::Session> warm;
    if (sc.warmup == "cpu") {  // one-time global init out of the race (amplifier)
      Ort::SessionOptions so = make_options(sc, {"cpu"}, "warmup");
      warm = std::make_unique<Ort::Session>(env, by_name[names[0]]->path.c_str(), so);
    }
    std::vector<Created> created(sc.sessions);
    run_threads(sc.sessions, sc.mode == "concurrent", [&](int i) {
      t_session_index = i;
      create_one(env, sc, *by_name[names[i % names.size()]], i, created[i]);
    });
    for (const auto& c : created)
      if (!c.error.empty()) throw std::runtime_error("create " + c.model + " failed: " + c.error);

    std::string sessions_json, placement_json;
    {
      std::lock_guard<std::mutex> lock(g_placement.mutex);
      for (int i = 0; i < sc.sessions; ++i) {
        const auto& c = created[i];
        sessions_json += std::string(i ? "," : "") + "{\"i\":" + std::to_string(i) + ",\"model\":" +
                         json_str(c.model) + ",\"start_ms\":" + json_num(c.start_ms) +
                         ",\"end_ms\":" + json_num(c.end_ms) + "}";
        std::string eps;
        for (const auto& kv : g_placement.by_session["s" + std::to_string(i)])
          eps += std::string(eps.empty() ? "" : ",") + json_str(kv.first) + ":" + std::to_string(kv.second);
        placement_json += std::string(i ? "," : "") + "{\"i\":" + std::to_string(i) + ",\"model\":" +
                          json_str(c.model) + ",\"nodes\":{" + eps + "}}";
      }
    }
    std::string eps_json;
    for (size_t k = 0; k < sc.ep.size(); ++k) eps_json += (k ? "," : "") + json_str(sc.ep[k]);
    reach("sessions-created", "\"sessions\":[" + sessions_json + "],\"eps\":[" + eps_json +
                                  "],\"ort_version\":" + json_str(Ort::GetVersionString()) +
                                  ",\"placement\":[" + placement_json + "]" +
                                  (sc.hold_ms > 0 ? ",\"hold\":{\"ms\":" + std::to_string(sc.hold_ms) +
                                                        ",\"engaged\":" +
                                                        std::to_string(g_hold_engaged.load()) +
                                                        ",\"order\":" + hold_order_json() + "}"
                                                  : std::string()));

    if (sc.infer) {
      auto find_role = [&](const std::string& role) -> Ort::Session& {
        for (int i = 0; i < sc.sessions; ++i)
          if (by_role.count(role) && created[i].model == by_role[role]->name) return *created[i].session;
        throw std::runtime_error("infer=1 needs a " + role + " model among the scenario's models");
      };
      std::vector<double> scores = run_pipeline(find_role("mel"), find_role("embedding"),
                                                find_role("keyword"), pcm);
      bool ok = scores.size() == expected.size();
      double max_diff = 0;
      for (size_t k = 0; ok && k < scores.size(); ++k) {
        max_diff = std::max(max_diff, std::fabs(scores[k] - expected[k]));
        ok = max_diff <= tolerance;
      }
      std::string scores_json;
      for (size_t k = 0; k < scores.size(); ++k) scores_json += (k ? "," : "") + json_score(scores[k]);
      reach("inference-done", "\"scores\":[" + scores_json + "],\"score\":" + json_score(scores.back()) +
                                  ",\"ok\":" + (ok ? "true" : "false"));
    }
    if (sc.release) {
      // Under a hold, one session at a time in index order (see hold_here), as the app's JS
      // thread disposes them; else as they were created.
      bool together = sc.mode == "concurrent" && sc.hold_ms == 0;
      run_threads(sc.sessions, together, [&](int i) { created[i].session.reset(); });
      warm.reset();
      reach("sessions-released");
    }
    emit("done");
    return 0;
  } catch (const std::exception& e) {
    emit("error", std::string("\"message\":") + json_str(e.what()));
    return 1;
  }
}
