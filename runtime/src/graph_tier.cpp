// Tiered compilation of a GraphExecutable's module (graph_exec.h; docs/performance.md, "Cold
// compile"): when neither the program cache nor the compile cache holds the full (O3) build,
// the module is compiled at the quick tier (ProgramOptions::quick: the same bits, a fraction
// of the compile time, slower kernels) and runs at once, while one background thread per
// module compiles the full tier (into the compile cache, so a later process starts from it).
// The executable swaps the full kernels in between runs (GraphExecutable::tierUp), after the
// last run's launches are done, and chooses its GEMMs again with them.
//
// Must never race a launch (the swap holds runMu_ and waits for lastRun_), leak a thread (every
// job thread is joined: when a later job starts, or when the process exits), outlive the
// device it compiles for (an executable waits for its job when destroyed), nor let an exiting
// process tear down LLVM or a driver under a running compile (the registry that joins the
// threads is constructed after them, so it is destroyed first). TESSERA_TIERED=0: always
// full, at once.
#include "tessera/graph_exec.h"

#include "ir/text/parser.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <string_view>
#include <thread>
#include <vector>

namespace tessera {
namespace detail {

class TierUp {
public:
  /// The job compiling `text` at `opts` on `device`: a live one for the same key if any.
  static std::shared_ptr<TierUp> start(tsr_device_t device, const std::string &text,
                                       CompileCache *cache, const ProgramOptions &opts);
  bool done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  /// The full Program (null with `*error` set when its compile failed); waits for it.
  std::shared_ptr<Program> result(std::string *error) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    *error = error_;
    return program_;
  }
  /// Runs on the job's thread.
  void compile(tsr_device_t device, const std::string &text, CompileCache *cache,
               const ProgramOptions &opts);

private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::shared_ptr<Program> program_;
  std::string error_;
};

namespace {

// The job threads, until joined, and the live jobs by key (so that executables of one module
// share one compile). A job is owned by its executables and, while it compiles, by its thread:
// its Program and device reference go with the last of them, never at process exit. The
// registry is constructed on the first job, after the drivers, the compile cache and LLVM's
// statics, so at exit it is destroyed first, joining what still runs.
class Registry {
public:
  static Registry &get() {
    static Registry r;
    return r;
  }
  ~Registry() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Running &r : threads_)
      r.thread.join();
  }
  std::shared_ptr<TierUp> start(tsr_device_t device, const std::string &text, CompileCache *cache,
                                const ProgramOptions &opts) {
    char prefix[96];
    std::snprintf(prefix, sizeof(prefix), "%p|sg%u|b%d|s%d|", static_cast<void *>(device),
                  opts.subgroupSize, static_cast<int>(opts.bounds), opts.strict ? 1 : 0);
    std::string key = prefix + text;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = threads_.begin(); it != threads_.end();) { // reap the finished threads
      if (!*it->finished) {
        ++it;
        continue;
      }
      it->thread.join();
      it = threads_.erase(it);
    }
    std::erase_if(byKey_, [](const auto &e) { return e.second.expired(); });
    if (auto it = byKey_.find(key); it != byKey_.end())
      return it->second.lock();
    auto job = std::make_shared<TierUp>();
    auto finished = std::make_shared<std::atomic<bool>>(false);
    tsr_device_retain(device); // released by the thread once compiled
    std::thread thread([job, device, text, cache, opts, finished]() mutable {
      job->compile(device, text, cache, opts);
      tsr_device_release(device);
      job.reset(); // the last owner may be this thread: freed here, before `finished`
      *finished = true;
    });
    threads_.push_back({std::move(thread), finished});
    byKey_[key] = job;
    return job;
  }

private:
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  std::mutex mu_;
  std::vector<Running> threads_;
  std::map<std::string, std::weak_ptr<TierUp>> byKey_;
};

} // namespace

std::shared_ptr<TierUp> TierUp::start(tsr_device_t device, const std::string &text,
                                      CompileCache *cache, const ProgramOptions &opts) {
  return Registry::get().start(device, text, cache, opts);
}

void TierUp::compile(tsr_device_t device, const std::string &text, CompileCache *cache,
                     const ProgramOptions &opts) {
  std::string err;
  std::shared_ptr<Program> program;
  ir::ParseResult parsed = ir::parseModule(text, "<graph module>");
  if (!parsed.ok())
    err = "the lowered module does not parse: " + parsed.diags.front().str();
  else if (auto p = Program::create(device, *parsed.module, cache, opts, &err))
    program = std::move(p);
  std::lock_guard<std::mutex> lock(mu_);
  program_ = std::move(program);
  error_ = program_ ? "" : "the full-tier compile: " + err;
  done_ = true;
  cv_.notify_all();
}

} // namespace detail

namespace {

bool tieredFromEnv() {
  const char *e = std::getenv("TESSERA_TIERED");
  return !(e && std::string_view(e) == "0");
}

} // namespace

hal::Status GraphExecutable::compileProgram(const std::string &module, CompileCache *cache,
                                            ProgramCache &programs) {
  graph::ScheduleCaps caps;
  if (hal::Status st = deviceScheduleCaps(device_.get(), &caps); !st.ok())
    return st;
  const ProgramOptions full = graphProgramOptions(device_.get(), caps);
  // Assigned on every path below (an Expected holds a value or an error, never neither).
  hal::Expected<ProgramCache::Lookup> lookup = hal::Status(TSR_INTERNAL, "no program looked up");
  const bool tiered = tieredFromEnv() && quickTierSupported(info_.backend);
  if (tiered) { // the full tier if a cache has it, else the quick one and a background job
    ProgramOptions cachedOnly = full;
    cachedOnly.cachedOnly = true;
    lookup = programs.get(device_.get(), module, cache, cachedOnly);
    if (!lookup.ok()) {
      ProgramOptions quick = full;
      quick.quick = true;
      lookup = programs.get(device_.get(), module, cache, quick);
      if (lookup.ok()) {
        tierUp_ = detail::TierUp::start(device_.get(), module, cache, full);
        stats_.quickTier = true;
      }
    }
  } else {
    lookup = programs.get(device_.get(), module, cache, full);
  }
  if (!lookup.ok())
    return lookup.status();
  program_ = lookup.value().program;
  stats_.programReused = lookup.value().reused;
  stats_.source = program_->stats().source;
  if (!stats_.programReused) {
    stats_.compileMs = program_->stats().compileMs;
    stats_.loadMs = program_->stats().loadMs;
  }
  return hal::Status();
}

hal::Status GraphExecutable::tierUp(bool wait) {
  if (!tierUp_ || (!wait && !tierUp_->done()))
    return hal::Status();
  std::string err;
  std::shared_ptr<Program> full = tierUp_->result(&err);
  tierUp_.reset();
  if (!full) // the quick kernels stay: the same results
    return wait ? hal::Status(TSR_INTERNAL, err) : hal::Status();
  std::vector<const ProgramKernel *> kernels;
  for (const graph::PlanLaunch &l : plan_.launches) {
    const ProgramKernel *k = full->kernel(l.kernel);
    if (!k)
      return hal::Status(TSR_INTERNAL, "the full tier lacks @" + l.kernel);
    kernels.push_back(k);
  }
  // The last run's launches may still use the quick kernels: done before they are released.
  if (hal::Status st = lastRun_.synchronize(); !st.ok())
    return st;
  program_ = std::move(full);
  launchKernels_ = std::move(kernels);
  stats_.quickTier = false;
  return chooseGemms(gemmMode_, cache_);
}

void GraphExecutable::abandonTierUp() {
  if (!tierUp_)
    return;
  std::string err;
  (void)tierUp_->result(&err);
  tierUp_.reset();
}

hal::Status GraphExecutable::waitTierUp() {
  std::lock_guard<std::mutex> lock(runMu_);
  return tierUp(/*wait=*/true);
}

} // namespace tessera
