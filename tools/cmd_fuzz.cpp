// `tessera fuzz`: differential fuzzing of the backends against the reference interpreter
// (issue #11). Generates random well-typed kernels (tools/fuzz/kernel_gen.h), judges each on
// every device like `tessera run --check` (tools/fuzz/fuzz_judge.h), shrinks every failure to
// a small kernel (tools/fuzz/shrink.h) saved with its launch spec, and ends with the line
// `N kernels, M mismatches`. Never stops at a failure: a fuzzing run reports them all.
#include "conformance/runner.h"
#include "tessera/program.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/fuzz/fuzz_judge.h"
#include "tools/fuzz/kernel_gen.h"
#include "tools/fuzz/shrink.h"
#include "tools/registry_session.h"

#include "ir/text/printer.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tessera::cli {
namespace {

constexpr const char *kFuzzUsage =
    "usage: tessera fuzz [--device D]... [--seconds N] [--seed S] [--out DIR] [options]";
constexpr const char *kFuzzDescription =
    R"(Generates random well-typed kernels (structured control flow, loops with carried values, every
op family and scalar type the devices support, device functions, shared memory with barriers,
subgroup ops, order-independent atomics, multi-dimensional and partial workgroups), runs each
on the fp64 reference interpreter and on every device, and judges them like 'tessera run
--check' (and, on full-profile devices, per element). Every failure is shrunk to a small
kernel, saved in DIR with a header saying the device, the seed and what mismatched. The last
line is 'N kernels, M mismatches' (M counts kernel x device failures: wrong outputs, and
device errors on kernels the interpreter ran). Exit status 1 if M > 0 or the generator made
an invalid kernel (a fuzzer bug), 2 on usage.)";

struct Options {
  std::vector<std::string> devices;
  double seconds = 60;
  uint64_t count = 0;
  uint64_t seed = 1;
  std::string out = "fuzz-out";
  int maxOps = 60;
  double shrinkSeconds = 60;
  int maxShrinks = 10;
  bool hostile = false;
  std::vector<std::string> excludeNames; // OP:TYPE as given, checked after parsing
  std::vector<std::pair<ir::OpKind, ir::Scalar>> exclude;
  double kernelTimeout = 300;
  std::string emit, replay;
  fuzz::JudgeHooks hooks;
};

struct Devices {
  RegistrySession session;
  std::vector<fuzz::FuzzDevice> list;
  ~Devices() {
    for (auto &d : list)
      tsr_device_release(d.device);
  }
};

bool openDevices(const Options &o, Devices &ds, std::string &err) {
  if (!ds.session.open(&err))
    return false;
  for (const std::string &name : o.devices) {
    fuzz::FuzzDevice d;
    d.name = name;
    if (tsr_status_t st = tsr_registry_open_device(ds.session.registry, name.c_str(), &d.device)) {
      err = name + ": " + takeMessage(st);
      return false;
    }
    ds.list.push_back(d); // owned from here on
    tsr_device_info_t info{};
    info.struct_size = sizeof info;
    if (tsr_status_t st = tsr_device_info(d.device, &info)) {
      err = name + ": " + takeMessage(st);
      return false;
    }
    ds.list.back().features = info.features;
    ds.list.back().subgroupSize = info.subgroup_size;
    ds.list.back().fullProfile = conform::declaredProfile(info.backend) == conform::Profile::Full;
  }
  return true;
}

// What every device can run: the generator draws only from these.
fuzz::GenOptions genOptionsFor(const Options &o, const Devices &ds) {
  fuzz::GenOptions g;
  g.maxOps = o.maxOps;
  g.hostile = o.hostile;
  g.exclude = o.exclude;
  uint64_t common = ~0ull;
  for (const auto &d : ds.list)
    common &= d.features;
  auto keep = [&](ir::Scalar s, uint64_t feature) {
    if (!(common & feature))
      std::erase(g.types, s);
  };
  keep(ir::Scalar::F16, TSR_FEATURE_FP16);
  keep(ir::Scalar::BF16, TSR_FEATURE_BF16);
  keep(ir::Scalar::F64, TSR_FEATURE_FP64);
  keep(ir::Scalar::I8, TSR_FEATURE_INT8);
  keep(ir::Scalar::I16, TSR_FEATURE_INT16);
  keep(ir::Scalar::I64, TSR_FEATURE_INT64);
  g.subgroups = common & TSR_FEATURE_SUBGROUPS;
  for (const auto &d : ds.list)
    g.boundTrigArgs |= !d.fullProfile;
  g.floatAtomics = common & TSR_FEATURE_FLOAT_ATOMICS;
  return g;
}

bool writeFile(const std::filesystem::path &p, const std::string &text) {
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream f(p);
  f << text;
  return static_cast<bool>(f);
}

std::string fileSafe(std::string s) {
  for (char &c : s)
    if (c == ':' || c == '/')
      c = '_';
  return s;
}

int replay(const Options &o, Devices &ds) {
  std::ifstream f(o.replay);
  if (!f) {
    std::fprintf(stderr, "tessera fuzz: cannot read '%s'\n", o.replay.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  int rc = 0;
  for (const auto &d : ds.list) {
    fuzz::Verdict v = fuzz::judgeText(d, ss.str(), o.hooks);
    std::printf("%s on %s: %s%s%s\n", o.replay.c_str(), d.name.c_str(),
                fuzz::outcomeName(v.outcome), v.detail.empty() ? "" : ": ", v.detail.c_str());
    rc |= v.outcome != fuzz::Outcome::Pass;
  }
  return rc;
}

// Counters of one run.
struct Tally {
  uint64_t kernels = 0, mismatches = 0, deviceErrors = 0, invalid = 0, shrunk = 0;
  uint64_t undefined = 0; // hostile kernels the interpreter rejects, run but not judged
};

// Shrinks (within limits) and saves one failure; prints where.
void recordFailure(const Options &o, const fuzz::FuzzDevice &d, uint64_t kseed,
                   const std::string &text, const fuzz::Verdict &v, Tally &t) {
  std::string kept = text;
  fuzz::ShrinkStats st;
  bool shrink = o.shrinkSeconds > 0 && t.shrunk < static_cast<uint64_t>(o.maxShrinks);
  if (shrink) {
    ++t.shrunk;
    // The same failure must persist: the same outcome (a mismatch must not shrink into a
    // compile error) in the same output (not wander off to another bug of the kernel).
    kept = fuzz::shrinkModule(
        text,
        [&](const std::string &cand) {
          fuzz::Verdict c = fuzz::judgeText(d, cand, o.hooks);
          return c.outcome == v.outcome && c.buffer == v.buffer;
        },
        o.shrinkSeconds, &st);
  }
  fuzz::Verdict fin = shrink ? fuzz::judgeText(d, kept, o.hooks) : v;
  std::ostringstream h;
  h << "// tessera fuzz: " << fuzz::outcomeName(fin.outcome) << " on " << d.name << "\n"
    << "// kernel seed " << kseed << " (regenerate: tessera fuzz --seed " << kseed
    << " --count 1 --device " << d.name << ")\n"
    << "// " << fin.detail << "\n";
  if (shrink)
    h << "// shrunk from " << fuzz::countOps(text) << " to " << fuzz::countOps(kept) << " ops ("
      << st.accepted << " of " << st.attempts << " simplifications kept"
      << (st.timedOut ? ", stopped by --shrink-seconds" : "") << ")\n";
  std::filesystem::path base =
      std::filesystem::path(o.out) / (fileSafe(d.name) + "-seed" + std::to_string(kseed));
  writeFile(base.string() + ".tir", h.str() + kept);
  writeFile(base.string() + ".orig.tir",
            "// unshrunk original of " + base.filename().string() + ".tir\n" + text);
  std::printf("%s on %s, kernel seed %llu: %s\n    saved %s.tir (%d ops)\n",
              fuzz::outcomeName(v.outcome), d.name.c_str(), (unsigned long long)kseed,
              v.detail.c_str(), base.string().c_str(), fuzz::countOps(kept));
  std::fflush(stdout);
}

// A kernel that never finishes on a device (a miscompiled loop) would hang the run, and CI
// with it: a watchdog thread ends the process, naming the kernel, when one judgement takes
// longer than the limit. The kernel is already saved by then.
class Watchdog {
public:
  explicit Watchdog(double limitSeconds) : limit_(limitSeconds), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  /// Starts timing `what` (empty: idle); on a timeout `text` is saved as `file`.
  void arm(std::string what, std::filesystem::path file, std::string text) {
    std::lock_guard<std::mutex> l(m_);
    what_ = std::move(what);
    file_ = std::move(file);
    text_ = std::move(text);
    since_ = std::chrono::steady_clock::now();
  }

private:
  void watch() {
    std::unique_lock<std::mutex> l(m_);
    while (!done_) {
      cv_.wait_for(l, std::chrono::seconds(1));
      double busy =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
      if (!done_ && !what_.empty() && limit_ > 0 && busy > limit_) {
        writeFile(file_, text_);
        std::fprintf(stdout, "\nhang: %s did not finish in %.0f s; saved %s\n", what_.c_str(),
                     limit_, file_.string().c_str());
        std::fflush(stdout);
        std::_Exit(1);
      }
    }
  }

  double limit_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string what_, text_;
  std::filesystem::path file_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

// Set by SIGINT / SIGTERM: the run stops after the current kernel and still prints its
// summary (a long run interrupted by hand keeps its record).
volatile std::sig_atomic_t gStop = 0;
extern "C" void onStopSignal(int) { gStop = 1; }

int fuzzLoop(const Options &o, Devices &ds) {
  using Clock = std::chrono::steady_clock;
  fuzz::GenOptions g = genOptionsFor(o, ds);
  Watchdog watchdog(o.kernelTimeout);
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  auto start = Clock::now();
  bool tty = isatty(fileno(stdout));
  Tally t;
  for (uint64_t i = 0; o.count == 0 || i < o.count; ++i) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= o.seconds || gStop)
      break;
    if (tty)
      std::printf("\r[%4.0fs] %llu kernels, %llu mismatches", elapsed,
                  (unsigned long long)t.kernels,
                  (unsigned long long)(t.mismatches + t.deviceErrors)),
          std::fflush(stdout);
    g.seed = o.seed + i;
    std::string text = ir::printModule(*fuzz::generateModule(g));
    ++t.kernels;
    if (!o.emit.empty())
      writeFile(std::filesystem::path(o.emit) / ("kernel-" + std::to_string(g.seed) + ".tir"),
                text);
    for (const auto &d : ds.list) {
      std::string what = "kernel seed " + std::to_string(g.seed) + " on " + d.name;
      watchdog.arm(what,
                   std::filesystem::path(o.out) /
                       (fileSafe(d.name) + "-seed" + std::to_string(g.seed) + ".hang.tir"),
                   "// tessera fuzz: hang: " + what + "\n" + text);
      fuzz::Verdict v = fuzz::judgeText(d, text, o.hooks);
      watchdog.arm("", {}, {});
      if (v.outcome == fuzz::Outcome::Pass)
        continue;
      if (v.outcome == fuzz::Outcome::Undefined) { // hostile mode: survived, not judged
        ++t.undefined;
        continue;
      }
      if (tty)
        std::printf("\n");
      if (v.outcome == fuzz::Outcome::Invalid) { // the generator's fault, not the device's
        ++t.invalid;
        std::filesystem::path p =
            std::filesystem::path(o.out) / ("generator-bug-seed" + std::to_string(g.seed) + ".tir");
        writeFile(p, "// tessera fuzz: generator bug: " + v.detail + "\n" + text);
        std::printf("generator bug, kernel seed %llu: %s\n    saved %s\n",
                    (unsigned long long)g.seed, v.detail.c_str(), p.string().c_str());
        break;
      }
      ++(v.outcome == fuzz::Outcome::Mismatch ? t.mismatches : t.deviceErrors);
      recordFailure(o, d, g.seed, text, v, t);
    }
  }
  if (tty)
    std::printf("\r");
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("fuzz: seeds %llu..%llu on", (unsigned long long)o.seed,
              (unsigned long long)(o.seed + (t.kernels ? t.kernels - 1 : 0)));
  for (const auto &d : ds.list)
    std::printf(" %s", d.name.c_str());
  std::printf(" in %.0f s: %llu wrong outputs, %llu device errors, %llu generator bugs", secs,
              (unsigned long long)t.mismatches, (unsigned long long)t.deviceErrors,
              (unsigned long long)t.invalid);
  if (o.hostile)
    std::printf(", %llu undefined runs survived", (unsigned long long)t.undefined);
  std::printf("\n");
  std::printf("%llu kernels, %llu mismatches\n", (unsigned long long)t.kernels,
              (unsigned long long)(t.mismatches + t.deviceErrors));
  return t.mismatches + t.deviceErrors + t.invalid > 0 ? 1 : 0;
}

bool parseNumber(const std::string &v, double &out) {
  auto n = parseUnsigned(v);
  if (!n)
    return false;
  out = static_cast<double>(*n);
  return true;
}

// `tessera fuzz`'s options, declared on `app`, stored in `o` when parsed.
void addFuzzOptions(CLI::App &app, Options &o) {
  auto whole = [](auto &into, double max = 1e300) {
    return [&into, max](const std::string &v) {
      double n = 0;
      if (!parseNumber(v, n) || n > max)
        return false;
      into = static_cast<std::remove_reference_t<decltype(into)>>(n);
      return true;
    };
  };
  addRepeatable(app, "--device", o.devices, "a device to test (repeatable); default cpu:0")
      ->type_name("DEV");
  addChecked(app, "--seconds", "stop generating after N seconds (default 60)",
             "--seconds needs a whole number", whole(o.seconds))
      ->type_name("N");
  addChecked(app, "--count", "stop after N kernels (default: no limit)",
             "--count needs a whole number", whole(o.count))
      ->type_name("N");
  addChecked(app, "--seed",
             "kernel i is generated from seed S + i (default 1); the same seed gives\n"
             "the same kernels on every machine",
             "--seed needs a whole number", unsignedIn(o.seed))
      ->type_name("S");
  app.add_option("--out", o.out, "where failures are saved (default fuzz-out)")->type_name("DIR");
  addChecked(app, "--max-ops", "size of the generated kernels (default 60)",
             "--max-ops needs a number in [1, 100000]",
             [&o](const std::string &v) {
               double n = 0;
               if (!parseNumber(v, n) || n < 1 || n > 100000)
                 return false;
               o.maxOps = static_cast<int>(n);
               return true;
             })
      ->type_name("N");
  addChecked(app, "--shrink-seconds",
             "time to shrink one failure (default 60; 0 = save it unshrunk)",
             "--shrink-seconds needs a whole number", whole(o.shrinkSeconds))
      ->type_name("N");
  addChecked(app, "--max-shrinks",
             "shrink at most N failures, save later ones unshrunk (default 10)",
             "--max-shrinks needs a whole number", whole(o.maxShrinks, 1e6))
      ->type_name("N");
  app.add_flag_callback(
      "--hostile",
      [&o] {
        o.hostile = true;
        o.hooks.runUndefined = true;
      },
      "also generate out-of-range indices, zero divisors, MIN / -1 and loops\n"
      "with step <= 0; a kernel the interpreter rejects as undefined still\n"
      "runs on the devices, which must return (a status or outputs) rather\n"
      "than crash the process; it is counted, not judged (#10)");
  addChecked(app, "--bounds",
             "compile with bounds mode unchecked, robust (default) or checked\n"
             "(docs/ir.md, \"Faults\"); with --hostile and checked, a fault the device\n"
             "reports counts as survived",
             "--bounds must be unchecked, robust or checked",
             [&o](const std::string &v) { return parseBoundsMode(v, &o.hooks.bounds); })
      ->type_name("MODE");
  // Every bad OP:TYPE is named in the error, so this one checks after parsing (cmdFuzz).
  addRepeatable(app, "--exclude", o.excludeNames,
                "never generate scalar op OP with result TYPE (e.g. fma:bf16), to keep a\n"
                "known bug from dominating a run (repeatable)")
      ->type_name("OP:TYPE");
  addChecked(app, "--kernel-timeout",
             "end the run (exit 1) when one kernel runs longer than N seconds on a\n"
             "device, naming it (default 300; 0 = never)",
             "--kernel-timeout needs a whole number", whole(o.kernelTimeout))
      ->type_name("N");
  app.add_option("--emit", o.emit, "also write every generated kernel to DIR (kernel-SEED.tir)")
      ->type_name("DIR");
  app.add_option("--replay", o.replay,
                 "judge FILE on every device instead of generating (exit 1 on a failure)")
      ->type_name("FILE");
  app.add_flag_callback(
      "--normwise-only", [&o] { o.hooks.elementwise = false; },
      "judge exactly like 'run --check' (by default a full-profile device is\n"
      "also held to the budget per element, see docs/conformance.md)");
  app.add_option("--plant-mismatch", o.hooks.plantOp,
                 "test only: corrupt an output of every kernel that uses op OP, to check\n"
                 "that failures are caught and shrunk")
      ->type_name("OP");
}

} // namespace

int cmdFuzz(int argc, char **argv) {
  Options o;
  auto app = makeApp("fuzz", kFuzzUsage, kFuzzDescription);
  addFuzzOptions(*app, o);
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  for (const std::string &v : o.excludeNames) {
    size_t colon = v.find(':');
    auto op = ir::lookupOp(v.substr(0, colon));
    auto type =
        colon == std::string::npos ? std::nullopt : ir::parseScalarName(v.substr(colon + 1));
    if (!op || !type)
      return usageError("fuzz", "--exclude needs OP:TYPE, e.g. fma:bf16, got '" + v + "'");
    o.exclude.emplace_back(*op, *type);
  }
  if (o.devices.empty())
    o.devices.push_back("cpu:0");
  Devices ds;
  std::string err;
  if (!openDevices(o, ds, err)) {
    std::fprintf(stderr, "tessera fuzz: %s\n", err.c_str());
    return 1;
  }
  return o.replay.empty() ? fuzzLoop(o, ds) : replay(o, ds);
}

} // namespace tessera::cli
