// Extern GEMMs for GraphExecutable (graph_exec.h: GemmImpl, GemmChoice, GemmChoiceCache;
// docs/torch.md, "Extern GEMMs"): which matmul kernels of a plan may run as the device's
// vendor GEMM (the HAL "extern" format's <library>.gemm.f32: an f32 GEMM with no epilogue, or
// <library>.gemm_bias.f32 when the epilogue is one bias add, or <library>.gemm.f32 followed by
// the plan's epilogue kernel (PlanGemm::epilogue) for any other epilogue of an f32 GEMM; batch
// dims that flatten to one stride, operands that each have a unit stride), timing both on
// scratch buffers of the plan's sizes the first time a shape is compiled, and the cache of
// the outcome (memory, and a text file next to the compile cache).
//
// Why measure and not a rule: which one wins depends on the shape, the layout and the host
// (OpenBLAS wins large square GEMMs; Tessera's kernels win small and skinny ones, where the
// library's packing dominates), so each shape is decided by its own numbers, as Inductor's
// autotuning does.
#include "runtime/src/graph_exec_internal.h"
#include "tessera/graph_exec.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace tessera {
namespace {

using hal::Status;

// Extern kernel names (docs/hal.md, "Extern kernels"): "<library>.gemm.f32" and
// "<library>.gemm_bias.f32", where library "blas" is the driver's preferred one.
constexpr const char kAnyLibrary[] = "blas";
constexpr const char kGemmSuffix[] = ".gemm.f32";
constexpr const char kGemmBiasSuffix[] = ".gemm_bias.f32";
constexpr int kTimedRuns = 5; // after one warm-up run each, alternating; the fastest is kept
// The least work (multiply-adds) per workgroup of a split extern GEMM: below it a split costs
// more in the pool's hand-off than it saves.
constexpr int64_t kMinSplitMacs = int64_t(1) << 18;

// The libraries behind the device's extern GEMM, in the order its target prefers them
// (Target::externGemmLibrary: space-separated), or none when it names none.
std::vector<std::string> externLibraries(const tsr_device_info_t &info) {
  const Target *target = targetForDevice(info);
  std::istringstream names(std::string(target ? target->externGemmLibrary() : ""));
  std::vector<std::string> out;
  for (std::string n; names >> n;)
    out.push_back(n);
  return out;
}

struct FlatBatch {
  int64_t count = 1;                 // inner batch entries
  int64_t strides[4] = {0, 0, 0, 0}; // a, b, out, bias
  int64_t outer = 1;                 // outer batch entries
  int64_t outerStrides[4] = {0, 0, 0, 0};
};

// The batch dims as at most two levels (the extern GEMM's batch and outer), each one count and
// one stride per operand: consecutive dims merge into one level where each outer dim's stride
// is the next inner (non-unit) dim's stride times its extent, for every operand. Two levels
// cover heads split out of a projection ([B, H] over a permuted view: rewrite.h).
bool flattenBatch(const graph::PlanGemm &g, FlatBatch *f, std::string *why) {
  const graph::PlanGemmOperand *ops[4] = {&g.a, &g.b, &g.out, g.bias ? &*g.bias : &g.out};
  int64_t next[4] = {0, 0, 0, 0};
  int levels = 0; // levels started so far, innermost first
  for (size_t d = g.batch.size(); d-- > 0;) {
    const int64_t n = g.batch[d];
    if (n == 1)
      continue;
    bool merges = levels > 0;
    for (int i = 0; i < 4; ++i) {
      if (ops[i]->batchStrides.size() != g.batch.size()) {
        *why = "the GEMM description has " + std::to_string(ops[i]->batchStrides.size()) +
               " batch strides for " + std::to_string(g.batch.size()) + " batch dims";
        return false;
      }
      merges = merges && ops[i]->batchStrides[d] == next[i];
    }
    if (!merges && ++levels > 2) {
      *why = "its batch dims do not collapse into two strides per operand";
      return false;
    }
    int64_t &count = levels == 1 ? f->count : f->outer;
    int64_t *strides = levels == 1 ? f->strides : f->outerStrides;
    for (int i = 0; i < 4; ++i) {
      const int64_t s = ops[i]->batchStrides[d];
      if (!merges)
        strides[i] = s;
      next[i] = s * n;
    }
    count *= n;
  }
  return true;
}

bool unitStride(int64_t rows, int64_t cols, const graph::PlanGemmOperand &o) {
  return rows <= 1 || cols <= 1 || o.colStride == 1 || o.rowStride == 1;
}

graph::PlanArg bufferArg(int buffer) {
  graph::PlanArg a;
  a.kind = graph::PlanArg::Kind::Buffer;
  a.buffer = buffer;
  return a;
}

graph::PlanArg i64Arg(int64_t v) {
  graph::PlanArg a;
  a.kind = graph::PlanArg::Kind::I64;
  a.i = v;
  return a;
}

// The extern GEMM's launch (docs/hal.md, "Extern kernels") over the plan's buffers, split
// into up to `parts` workgroups (the driver threads a sequential library over them).
graph::PlanLaunch externLaunch(const std::string &library, const graph::PlanGemm &g,
                               const FlatBatch &f, uint32_t parts) {
  graph::PlanLaunch l;
  l.kernel = library + (g.bias ? kGemmBiasSuffix : kGemmSuffix);
  const int64_t macs = g.M * g.N * std::max<int64_t>(1, g.K) * f.count * f.outer;
  l.grid[0] = uint32_t(std::clamp<int64_t>(macs / kMinSplitMacs, 1, std::max(1u, parts)));
  l.grid[1] = l.grid[2] = 1;
  l.workgroup[0] = l.workgroup[1] = l.workgroup[2] = 1;
  l.args = {bufferArg(g.a.buffer), bufferArg(g.b.buffer), bufferArg(g.out.buffer)};
  for (int64_t v : {g.a.offset,
                    g.b.offset,
                    g.out.offset,
                    g.M,
                    g.N,
                    g.K,
                    f.count,
                    g.a.rowStride,
                    g.a.colStride,
                    g.b.rowStride,
                    g.b.colStride,
                    g.out.rowStride,
                    g.out.colStride,
                    f.strides[0],
                    f.strides[1],
                    f.strides[2],
                    f.outer,
                    f.outerStrides[0],
                    f.outerStrides[1],
                    f.outerStrides[2]})
    l.args.push_back(i64Arg(v));
  if (g.bias) {
    l.args.push_back(bufferArg(g.bias->buffer));
    for (int64_t v :
         {g.bias->offset, g.bias->rowStride, g.bias->colStride, f.strides[3], f.outerStrides[3]})
      l.args.push_back(i64Arg(v));
  }
  return l;
}

/// Bumped when the way a choice is measured changes (see shapeKey).
constexpr const char *kChoiceMethod = "m2";

std::string shapeKey(const tsr_device_info_t &info, const std::string &library,
                     const graph::PlanKernelInfo &kernel, const FlatBatch &f) {
  const graph::PlanGemm &g = *kernel.gemm;
  std::ostringstream k;
  // kChoiceMethod names how the times were taken: a choice measured another way (the median
  // of 3 before "fastest of 5, alternating") is measured again rather than trusted.
  k << kChoiceMethod << ' ' << info.name << '/' << info.architecture << ' ' << library << " M"
    << g.M << " N" << g.N << " K" << g.K << " b" << f.count;
  if (f.outer != 1)
    k << " o" << f.outer;
  const graph::PlanGemmOperand *ops[3] = {&g.a, &g.b, &g.out};
  for (int i = 0; i < 3; ++i)
    k << " s" << ops[i]->rowStride << ',' << ops[i]->colStride << ',' << f.strides[i]
      << (f.outer != 1 ? "," + std::to_string(f.outerStrides[i]) : "");
  if (g.bias)
    k << " bias" << g.bias->rowStride << ',' << g.bias->colStride << ',' << f.strides[3]
      << (f.outer != 1 ? "," + std::to_string(f.outerStrides[3]) : "");
  // A separate epilogue is part of both times: its ops (the fused kernel's, in graph order)
  // and the extras' layouts (a broadcast row reads faster than a full tensor).
  if (g.epilogue) {
    k << " epilogue";
    for (const std::string &op : kernel.ops)
      k << ' ' << op;
    for (const graph::PlanArg &a : g.epilogue->args)
      if (a.kind != graph::PlanArg::Kind::Buffer)
        k << ',' << a.i;
  }
  return k.str();
}

std::string msText(double ms) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g ms", ms);
  return b;
}

// One launch of what is timed: the plan's kernel, or the extern GEMM and its epilogue.
struct TimedStep {
  tsr_kernel_t kernel;
  const graph::PlanLaunch *launch;
};

// What one implementation launches, bound to the scratch buffers.
struct Candidate {
  std::vector<TimedStep> steps;
  std::vector<std::vector<tsr_arg_t>> args; // per step
};

Candidate bindCandidate(std::vector<TimedStep> steps, const std::vector<hal::Buffer> &scratch) {
  Candidate c;
  c.steps = std::move(steps);
  c.args.resize(c.steps.size());
  for (size_t i = 0; i < c.steps.size(); ++i)
    for (const graph::PlanArg &a : c.steps[i].launch->args)
      c.args[i].push_back(a.kind == graph::PlanArg::Kind::Buffer
                              ? tsr_arg_buffer(scratch[static_cast<size_t>(a.buffer)].get(), 0)
                              : detail::planScalarArg(a));
  return c;
}

// Launches the candidate's steps in order and synchronizes: the time in ms.
hal::Expected<double> runOnce(tsr_stream_t stream, const Candidate &c) {
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const graph::PlanLaunch &l = *c.steps[i].launch;
    if (Status st = Status::fromC(tsr_stream_launch(stream, c.steps[i].kernel, l.grid, l.workgroup,
                                                    c.args[i].data(), uint32_t(c.args[i].size())));
        !st.ok())
      return st;
  }
  if (Status st = Status::fromC(tsr_stream_synchronize(stream)); !st.ok())
    return st;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Times both candidates after their warm-up runs: kTimedRuns runs each, alternating, so that
// a change in the host's load falls on both; the fastest run of each is kept (load only ever
// adds time, so the minimum is the estimate least disturbed by it).
hal::Status timeBoth(tsr_stream_t stream, const Candidate &x, const Candidate &t, double *xMs,
                     double *tMs) {
  *xMs = *tMs = std::numeric_limits<double>::infinity();
  for (int r = 0; r < kTimedRuns; ++r)
    for (auto [c, ms] : {std::pair{&x, xMs}, std::pair{&t, tMs}}) {
      auto v = runOnce(stream, *c);
      if (!v.ok())
        return v.status();
      *ms = std::min(*ms, v.value());
    }
  return Status();
}

std::string choicesFile(const std::string &dir) {
  return (std::filesystem::path(dir) / "gemm_choices.txt").string();
}

} // namespace

GemmImpl gemmImplFromEnv() {
  const char *e = std::getenv("TESSERA_GEMM_IMPL");
  if (!e)
    return GemmImpl::Auto;
  if (std::strcmp(e, "tessera") == 0)
    return GemmImpl::Tessera;
  // "extern": the driver's preferred vendor library (library names are accepted for it).
  if (std::strcmp(e, "extern") == 0 || std::strcmp(e, "openblas") == 0 ||
      std::strcmp(e, "mkl") == 0)
    return GemmImpl::Extern;
  return GemmImpl::Auto;
}

// --- GemmChoiceCache ----------------------------------------------------------------------

GemmChoiceCache &GemmChoiceCache::global() {
  static GemmChoiceCache cache; // constructed on first use
  return cache;
}

void GemmChoiceCache::loadDir(const std::string &dir) {
  if (dir.empty() || loadedDirs_[dir])
    return;
  loadedDirs_[dir] = true;
  // Lines "key<TAB>impl<TAB>tessera_ms<TAB>extern_ms"; a malformed line is skipped (the shape
  // is measured again), never an error.
  std::ifstream in(choicesFile(dir));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, impl, t, x;
    if (!std::getline(fields, key, '\t') || !std::getline(fields, impl, '\t') ||
        !std::getline(fields, t, '\t') || !std::getline(fields, x, '\t'))
      continue;
    GemmChoice c;
    c.impl = impl;
    c.tesseraMs = std::strtod(t.c_str(), nullptr);
    c.externMs = std::strtod(x.c_str(), nullptr);
    // The key names the library: impl is "tessera" or that library.
    if (!impl.empty() && impl.find_first_of(" \t") == std::string::npos)
      entries_[key] = c;
  }
}

bool GemmChoiceCache::find(const std::string &key, const std::string &dir, GemmChoice *out) {
  std::lock_guard<std::mutex> lock(mu_);
  loadDir(dir);
  auto it = entries_.find(key);
  if (it == entries_.end())
    return false;
  *out = it->second;
  return true;
}

void GemmChoiceCache::store(const std::string &key, const std::string &dir, const GemmChoice &c) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = c;
  if (dir.empty())
    return;
  // Appended: a later line for the same key wins when read back. A write failure only
  // costs a measurement in a later process.
  std::ofstream out(choicesFile(dir), std::ios::app);
  out.precision(17); // the times read back exactly
  out << key << '\t' << c.impl << '\t' << c.tesseraMs << '\t' << c.externMs << '\n';
}

void GemmChoiceCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  loadedDirs_.clear();
}

// The plan's kernel, or the extern GEMM replacing it followed by its epilogue kernel, if any
// ("mkl.gemm.f32 + k0_matmul_epilogue").
std::vector<std::string> GraphExecutable::launchedKernels() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < plan_.launches.size(); ++i) {
    const ExternGemm *x = externGemm(i);
    names.push_back(x ? x->launch.kernel + (x->epilogue ? " + " + x->epilogueLaunch.kernel : "")
                      : plan_.launches[i].kernel);
  }
  return names;
}

// --- GraphExecutable::chooseGemms ---------------------------------------------------------

hal::Status GraphExecutable::chooseGemms(GemmImpl mode, CompileCache *cache) {
  externGemms_.clear();
  externGemms_.resize(plan_.launches.size());
  gemmChoices_.clear();
  const std::string dir = cache ? cache->dir().string() : "";
  hal::Executable externExe;
  std::string library = "vendor", prefix = kAnyLibrary; // set when externExe loads
  std::string unavailable; // why no library can be used on this device ("" : not tried)
  std::string skipped;     // the preferred libraries that could not be loaded, and why
  hal::Stream stream;
  for (const graph::PlanKernelInfo &info : plan_.kernels) {
    if (!info.gemm)
      continue;
    GemmChoice c;
    c.kernel = info.kernel;
    gemmChoices_.push_back(c);
    GemmChoice &choice = gemmChoices_.back();
    const graph::PlanGemm &g = *info.gemm;
    size_t launch = plan_.launches.size();
    for (size_t i = 0; i < plan_.launches.size(); ++i)
      if (plan_.launches[i].kernel == info.kernel)
        launch = i;
    FlatBatch flat;
    std::string why;
    if (launch == plan_.launches.size())
      choice.reason = "the plan never launches it";
    else if (g.dtype != graph::DType::F32 || g.outDtype != graph::DType::F32)
      choice.reason = std::string("the library takes f32, this GEMM is ") +
                      graph::dtypeName(g.dtype) + " -> " + graph::dtypeName(g.outDtype);
    else if (!g.epilogueEmpty && !g.bias && !g.epilogue)
      choice.reason = "its epilogue (other than a bias add) is fused into Tessera's kernel";
    else if (!unitStride(g.M, g.K, g.a) || !unitStride(g.K, g.N, g.b) ||
             !unitStride(g.M, g.N, g.out))
      choice.reason = "an operand has no unit stride";
    else if (!flattenBatch(g, &flat, &why))
      choice.reason = why;
    else if (mode == GemmImpl::Tessera)
      choice.reason = "forced to tessera (gemm_impl or TESSERA_GEMM_IMPL)";
    // The separate epilogue kernel (a kernel of the module, never a plan launch): checked
    // here as the plan's launches are at creation.
    const ProgramKernel *epilogue = nullptr;
    if (choice.reason.empty() && g.epilogue) {
      epilogue = program_->kernel(g.epilogue->kernel);
      if (!epilogue || epilogue->params.size() != g.epilogue->args.size())
        return Status(TSR_INTERNAL, "@" + info.kernel + ": its epilogue kernel @" +
                                        g.epilogue->kernel + " is not in the module or takes " +
                                        "other arguments than the plan passes");
      choice.epilogueKernel = g.epilogue->kernel;
    }
    if (!choice.reason.empty())
      continue;
    // This launch runs as the library's kernel (and then its epilogue kernel, if any).
    auto install = [&](hal::Kernel kernel, graph::PlanLaunch ext) {
      ExternGemm &x = externGemms_[launch];
      x.kernel = std::move(kernel);
      x.launch = std::move(ext);
      if (epilogue) {
        x.epilogue = epilogue;
        x.epilogueLaunch = *g.epilogue;
      }
    };
    if (!externExe && unavailable.empty()) {
      // The target's libraries in its order of preference, the first that loads wins; a
      // target naming none gets whatever the driver's blas.gemm.f32 is.
      std::vector<std::string> libs = externLibraries(info_);
      const bool named = !libs.empty();
      if (!named)
        libs.push_back(library);
      for (const std::string &lib : libs) {
        const std::string p = named ? lib : std::string(kAnyLibrary);
        const std::string name = p + kGemmSuffix + " " + p + kGemmBiasSuffix;
        tsr_executable_t exe = nullptr;
        Status st = Status::fromC(
            tsr_executable_create(device_.get(), "extern", name.data(), name.size(), &exe));
        if (st.ok()) {
          externExe = hal::Executable(exe);
          library = lib;
          prefix = p;
          break;
        }
        if (st.code() == TSR_UNIMPLEMENTED) {
          unavailable =
              "the " + std::string(info_.backend) + " device has no vendor GEMM (extern kernels)";
          break;
        }
        skipped += (skipped.empty() ? "" : "; ") + lib + " is unavailable: " + st.message();
      }
      if (!externExe && unavailable.empty())
        unavailable = skipped;
    }
    if (!externExe) {
      choice.reason = unavailable;
      continue;
    }
    choice.library = library;
    const std::string key = shapeKey(info_, library, info, flat);
    if (mode == GemmImpl::Auto && GemmChoiceCache::global().find(key, dir, &choice)) {
      choice.kernel = info.kernel;
      choice.library = library;
      choice.epilogueKernel = epilogue ? g.epilogue->kernel : "";
      choice.reason = "measured earlier for this shape: tessera " + msText(choice.tesseraMs) +
                      ", " + library + " " + msText(choice.externMs);
    } else {
      // Scratch buffers of the plan's sizes (every buffer either launch names), filled with
      // 0.25: GEMM time does not depend on the values, but denormals or NaNs could.
      if (!stream) {
        auto s = device_.createStream();
        if (!s.ok())
          return s.status();
        stream = std::move(s.value());
      }
      const graph::PlanLaunch ext = externLaunch(prefix, g, flat, info_.compute_units);
      auto kernel = externExe.kernel(ext.kernel.c_str());
      if (!kernel.ok())
        return kernel.status();
      std::vector<hal::Buffer> scratch(plan_.buffers.size());
      for (const graph::PlanLaunch *l :
           {static_cast<const graph::PlanLaunch *>(&plan_.launches[launch]), &ext})
        for (const graph::PlanArg &a : l->args) {
          if (a.kind != graph::PlanArg::Kind::Buffer || scratch[size_t(a.buffer)])
            continue;
          const graph::PlanBuffer &pb = plan_.buffers[size_t(a.buffer)];
          const uint64_t bytes =
              std::max<uint64_t>(1, uint64_t(pb.elements) * graph::dtypeBytes(pb.dtype));
          auto b = device_.allocate(bytes);
          if (!b.ok())
            return b.status();
          const float quarter = 0.25f;
          if (Status st =
                  Status::fromC(tsr_stream_fill(stream.get(), b.value().get(), 0,
                                                bytes & ~uint64_t(3), &quarter, sizeof(quarter)));
              !st.ok() && bytes >= 4)
            return st;
          scratch[size_t(a.buffer)] = std::move(b.value());
        }
      const bool timed = mode == GemmImpl::Auto;
      std::vector<TimedStep> steps = {{kernel.value().get(), &ext}};
      if (epilogue)
        steps.push_back({epilogue->kernel, &*g.epilogue});
      const Candidate cx = bindCandidate(std::move(steps), scratch);
      auto xt = runOnce(stream.get(), cx); // the warm-up, and a check that it launches
      if (!xt.ok()) {
        choice.reason = library + " refused it: " + xt.status().message();
        continue;
      }
      if (!timed) {
        choice.impl = library;
        choice.reason = "forced to " + library + " (gemm_impl or TESSERA_GEMM_IMPL)" +
                        (skipped.empty() ? "" : " (" + skipped + ")");
        install(std::move(kernel.value()), ext);
        continue;
      }
      const Candidate ct =
          bindCandidate({{launchKernels_[launch]->kernel, &plan_.launches[launch]}}, scratch);
      if (auto warm = runOnce(stream.get(), ct); !warm.ok())
        return warm.status();
      if (Status st = timeBoth(stream.get(), cx, ct, &choice.externMs, &choice.tesseraMs); !st.ok())
        return st;
      choice.impl = choice.externMs < choice.tesseraMs ? library : "tessera";
      choice.reason = "measured: tessera " + msText(choice.tesseraMs) + ", " + library + " " +
                      msText(choice.externMs);
      GemmChoiceCache::global().store(key, dir, choice);
    }
    if (!skipped.empty())
      choice.reason += " (" + skipped + ")";
    if (choice.impl != "tessera") {
      graph::PlanLaunch ext = externLaunch(prefix, g, flat, info_.compute_units);
      auto kernel = externExe.kernel(ext.kernel.c_str());
      if (!kernel.ok())
        return kernel.status();
      install(std::move(kernel.value()), std::move(ext));
    }
  }
  return Status();
}

} // namespace tessera
