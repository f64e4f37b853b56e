// A graph IR graph made runnable on one HAL device: lowered (graph::lower) for the device's
// capabilities, its kernel module compiled and loaded through the compile cache, and run as a
// sequence of launches over device buffers.
//
// Compiled programs are shared: a ProgramCache maps (device, options, module text) to one
// loaded Program, so a graph re-lowered at another batch size (same module text, other kernel
// arguments) re-uses the Program without compiling or loading anything. Temporaries and input
// staging buffers are pooled in the executable between runs; outputs are fresh buffers handed
// to the caller. Every launch is checked against the IR's launch rule (launchShapeError) before
// the HAL sees it. Errors are hal::Status values with the HAL code, never a crash or a throw.
//
// Never names a backend and never includes LLVM or a codegen header.
#pragma once

#include "ir/graph/graph.h"
#include "ir/graph/lower.h"
#include "tessera/compile_cache.h"
#include "tessera/hal.hpp"
#include "tessera/program.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera {

namespace detail {
class TierUp; // graph_tier.cpp: one background full-tier compile
}

/// What lowering may assume about `device`: its limits and features from tsr_device_info, and
/// the subgroup size the compile uses (ProgramOptions::subgroupSize is set to the same value by
/// graphProgramOptions, so the two always agree).
hal::Status deviceScheduleCaps(tsr_device_t device, graph::ScheduleCaps *caps);
/// The options graph programs are compiled with: robust bounds where the backend has them
/// (docs/ir.md "Faults"), unchecked where it has nothing else; the subgroup size of the caps.
ProgramOptions graphProgramOptions(tsr_device_t device, const graph::ScheduleCaps &caps);

/// Memory for buffers that the host may read directly: device-local and host-visible when the
/// device has unified memory (cpu, integrated GPUs, lavapipe), else device-local only.
/// TESSERA_DEVICE_LOCAL_ONLY=1 makes it device-local everywhere: a test hook for the paths
/// of discrete GPUs (staged copies) on machines without one.
tsr_memory_kind_t preferredMemoryKind(tsr_device_t device);

/// Copies every element of a strided host view into another layout of the same shape
/// (strides in elements, non-negative; an N-d odometer: for the rare inputs whose layout
/// differs from what a kernel reads, and for DLPack imports).
void copyStridedHost(const char *src, const std::vector<int64_t> &srcStrides, char *dst,
                     const std::vector<int64_t> &dstStrides, const std::vector<int64_t> &shape,
                     size_t elemBytes);

/// Loaded Programs by (device, options, module text). Thread-safe. Entries hold the Program
/// weakly: a Program lives while an executable uses it; a dead entry is swept on the next
/// lookup. An entry keeps its device retained so that a released device's address is never
/// mistaken for a new one's.
class ProgramCache {
public:
  struct Lookup {
    std::shared_ptr<Program> program;
    bool reused = false; // found here: nothing was compiled or loaded
  };
  /// The Program for `moduleText` on `device`, compiled (through `cache`, may be null) and
  /// loaded when no live one exists.
  hal::Expected<Lookup> get(tsr_device_t device, const std::string &moduleText, CompileCache *cache,
                            const ProgramOptions &opts);
  /// The process-wide cache GraphExecutable::create uses by default.
  static ProgramCache &global();
  size_t liveEntries();

private:
  struct Entry {
    hal::Device device; // retained (see the class comment)
    std::weak_ptr<Program> program;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

/// One graph input: a device buffer (used in place when its layout is the parameter's, no
/// copy) or host memory (its storage span is copied into a pooled device buffer: by the host
/// itself on unified-memory devices, after the previous run is done; else by the stream).
struct GraphInput {
  tsr_buffer_t buffer = nullptr; // not owned; non-null: a device buffer of this device
  const void *host = nullptr;    // else: host memory of the element at `offset` 0
  graph::DType dtype = graph::DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // elements; empty = contiguous
  int64_t offset = 0;           // elements from `buffer` / `host`
};

/// One graph output: a view of a device buffer the caller now owns a reference to.
struct GraphOutput {
  hal::Buffer buffer;
  graph::DType dtype = graph::DType::F32;
  std::vector<int64_t> shape, strides; // strides in elements, always given
  int64_t offset = 0;                  // elements
};

/// How epilogue-free f32 GEMM kernels run (docs/torch.md, "Extern GEMMs"): Auto measures
/// Tessera's kernel against the device's vendor library (the HAL's "extern" format) on the
/// first compile of each shape and keeps the faster; the others force one (tests).
enum class GemmImpl : uint8_t { Auto, Tessera, Extern };
/// TESSERA_GEMM_IMPL: "auto" (default, also when unset or unknown), "tessera", "extern" (the
/// target's first vendor library that loads; "mkl" and "openblas" are read as "extern").
GemmImpl gemmImplFromEnv();

/// The implementation chosen for one matmul kernel of a plan.
struct GemmChoice {
  std::string kernel;           // the plan kernel ("k0_matmul")
  std::string impl = "tessera"; // "tessera" or the vendor library ("mkl", "openblas")
  std::string library;          // the vendor library measured against ("": none loaded)
  std::string reason;           // why: measured, cached, forced, or why the library was not used
  double tesseraMs = -1, externMs = -1; // fastest of the timed runs (-1: not measured)
  /// The plan kernel that applies the GEMM's epilogue after the vendor GEMM (relu, gelu, a
  /// residual add, ...; PlanGemm::epilogue), "" when there is none; externMs includes it.
  std::string epilogueKernel;
};

/// Measured GEMM choices by (device, shape, layout): in memory, and in gemm_choices.txt of the
/// compile cache's directory when it has one. Thread-safe.
class GemmChoiceCache {
public:
  static GemmChoiceCache &global();
  /// Whether `key` was measured (in this process or, with `dir`, by an earlier one).
  bool find(const std::string &key, const std::string &dir, GemmChoice *out);
  void store(const std::string &key, const std::string &dir, const GemmChoice &c);
  void clearMemory(); // tests: measure again
private:
  void loadDir(const std::string &dir); // mu_ held
  std::mutex mu_;
  std::unordered_map<std::string, GemmChoice> entries_;
  std::unordered_map<std::string, bool> loadedDirs_;
};

/// The run time of one launch of a plan, over the runs of GraphExecutable::profile.
struct LaunchProfile {
  std::string kernel;     // the plan kernel ("k0_matmul")
  std::string launched;   // what ran: the plan kernel or the extern kernel replacing it
  std::vector<double> ms; // one wall time per run: the launch alone, from enqueue to done
};

struct GraphExecStats {
  /// Runs launch the quick tier's kernels (ProgramOptions::quick) while the full compile runs
  /// in the background; false once they were swapped for the full ones (or never quick).
  bool quickTier = false;
  ProgramStats::Source source = ProgramStats::Source::Compiled;
  bool programReused = false; // the Program came from the ProgramCache: no compile, no load
  double lowerMs = 0, compileMs = 0, loadMs = 0;
  /// Bytes of host inputs, over every run so far: copied into device memory, or bound in
  /// place (tsr_buffer_import_host, on devices whose memory is the host's).
  uint64_t inputBytesCopied = 0, inputBytesImported = 0;
};

class GraphExecutable {
public:
  ~GraphExecutable();
  GraphExecutable(const GraphExecutable &) = delete;
  GraphExecutable &operator=(const GraphExecutable &) = delete;

  /// Lowers `g` (verified) for `device` and compiles its module through `cache` (may be null)
  /// and ProgramCache::global(). Null with *error on failure (the lowering error names the op).
  static std::unique_ptr<GraphExecutable> create(tsr_device_t device, const graph::Graph &g,
                                                 CompileCache *cache, std::string *error);
  /// The same with an explicit program cache, and the status code of a failure.
  static hal::Expected<std::unique_ptr<GraphExecutable>>
  create(tsr_device_t device, const graph::Graph &g, CompileCache *cache, ProgramCache &programs,
         GemmImpl gemm = gemmImplFromEnv());
  /// From an already lowered plan (tests build plans by hand).
  static hal::Expected<std::unique_ptr<GraphExecutable>>
  fromPlan(tsr_device_t device, const graph::Graph &g, graph::Plan plan, CompileCache *cache,
           ProgramCache &programs, GemmImpl gemm = gemmImplFromEnv());

  /// Runs the plan on `stream` (a stream of this executable's device). Inputs must match the
  /// graph's parameters in count, dtype and shape; a device buffer must also have the
  /// parameter's strides. Runs of one executable are ordered with each other even on different
  /// streams (an event), since they share temporaries. Host inputs are copied asynchronously,
  /// or, on a device that shares host memory, bound in place without a copy (imported: dense
  /// in the parameter's layout and aligned to buffer_offset_alignment); either way, when any
  /// input is host memory the call synchronizes `stream` before returning, so the caller's
  /// memory is free again when it returns. $TESSERA_GRAPH_HOST_IMPORT=0 always copies.
  hal::Status run(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                  std::vector<GraphOutput> *outputs);

  /// Runs the graph `runs` times like run(), each launch timed alone: the stream is
  /// synchronized before and after every launch, so a time is that kernel's own (on the CPU:
  /// its workgroups over the thread pool) plus one enqueue and synchronize. For finding the
  /// slow kernel of a graph (tessera.torch.explain's profile, CompiledGraph.profile); a whole
  /// run() overlaps nothing more on the CPU, but on GPUs it pipelines launches this does not.
  /// The outputs are discarded.
  hal::Status profile(const std::vector<GraphInput> &inputs, tsr_stream_t stream, int runs,
                      std::vector<LaunchProfile> *out);

  const graph::Graph &graph() const { return graph_; }
  const graph::Plan &plan() const { return plan_; }
  const GraphExecStats &stats() const { return stats_; }
  /// One entry per matmul kernel of the plan, in plan order.
  const std::vector<GemmChoice> &gemmChoices() const { return gemmChoices_; }
  /// The kernel each run launches, in order: the plan's, or the extern kernel replacing it
  /// ("mkl.gemm.f32"); what enqueue() launches, read from the same tables.
  std::vector<std::string> launchedKernels() const;
  tsr_device_t device() const { return device_.get(); }
  /// Blocks until the background full-tier compile (if any) is done and its kernels replace
  /// the quick tier's (run() swaps them in by itself, between runs, once they are ready).
  /// An error if that compile failed (the quick kernels then stay: same results, slower).
  hal::Status waitTierUp();

private:
  GraphExecutable() = default;
  hal::Status runLocked(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                        std::vector<GraphOutput> *outputs); // runMu_ held
  hal::Status bindInput(size_t param, const GraphInput &in, tsr_stream_t stream, bool *hostCopy,
                        std::vector<std::pair<tsr_buffer_t, uint64_t>> *bound);
  hal::Status enqueue(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                      std::vector<GraphOutput> *outputs, bool *hostCopy);
  hal::Expected<tsr_buffer_t> pooled(size_t planBuffer, uint64_t bytes);
  /// Binds dense host memory in place (tsr_buffer_import_host); false when it cannot (then
  /// the caller copies), an error only when the import failed for another reason.
  hal::Expected<bool> bindImported(size_t planBuffer, const char *src, uint64_t bytes,
                                   std::vector<std::pair<tsr_buffer_t, uint64_t>> *bound);
  /// Decides, per matmul launch, between the plan's kernel and the vendor library
  /// (graph_gemm.cpp); fills gemmChoices_ and the extern launches.
  hal::Status chooseGemms(GemmImpl mode, CompileCache *cache);
  /// The module's Program: the full tier from the caches, else the quick tier with a full
  /// compile started in the background (graph_tier.cpp; TESSERA_TIERED=0: full, now).
  hal::Status compileProgram(const std::string &module, CompileCache *cache,
                             ProgramCache &programs);
  /// Swaps in the full tier's kernels when its compile is done (`wait`: waits for it), then
  /// chooses the GEMMs again with them; runMu_ held.
  hal::Status tierUp(bool wait);
  /// Waits for the background compile without using its result (the destructor).
  void abandonTierUp();

  hal::Device device_;
  tsr_device_info_t info_{};
  graph::Graph graph_;
  graph::Plan plan_;
  std::shared_ptr<Program> program_;
  std::vector<const ProgramKernel *> launchKernels_; // one per plan launch
  /// A plan launch run as the vendor library's GEMM: the extern kernel and its launch, then
  /// the plan kernel applying the epilogue afterwards (null: none) and that launch
  /// (PlanGemm::epilogue).
  struct ExternGemm {
    hal::Kernel kernel;
    graph::PlanLaunch launch;
    const ProgramKernel *epilogue = nullptr;
    graph::PlanLaunch epilogueLaunch;
  };
  /// Per plan launch (kernel null: the plan's own kernel runs).
  std::vector<ExternGemm> externGemms_;
  /// Plan launch i's extern GEMM, or null when the plan's own kernel runs.
  const ExternGemm *externGemm(size_t i) const {
    return i < externGemms_.size() && externGemms_[i].kernel ? &externGemms_[i] : nullptr;
  }
  std::vector<GemmChoice> gemmChoices_;
  std::vector<hal::Buffer> pool_;          // one per plan buffer (Temp/Input)
  std::vector<void *> poolMapped_;         // host address of a mapped pool buffer (else null)
  bool unified_ = false;                   // the device's memory is host-visible
  bool hostWaited_ = false;                // this run has waited for the previous one on the host
  std::vector<std::vector<char>> staging_; // host staging for re-laid-out inputs
  bool importHost_ = false;                // try tsr_buffer_import_host for host inputs
  std::vector<hal::Buffer> imports_;       // this run's imported inputs (until it synchronized)
  hal::Event lastRun_;
  std::vector<LaunchProfile> *profile_ = nullptr; // set during profile(): time each launch
  GraphExecStats stats_;
  std::shared_ptr<detail::TierUp> tierUp_; // the background full compile, until swapped in
  GemmImpl gemmMode_ = GemmImpl::Auto;     // what chooseGemms gets once the full tier runs
  CompileCache *cache_ = nullptr;
  std::mutex runMu_;
};

} // namespace tessera
