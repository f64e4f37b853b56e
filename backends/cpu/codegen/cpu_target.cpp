// The CPU target (backends/target.h): the CPU codegen behind the Target interface. Its
// artefact is the relocatable x86-64 object plus the kernel table; the CPU driver JIT-links
// it (format "cpu", backends/gpu_module.h).
//
// Must never load or run code: compiling and describing only.
#include "backends/cpu/codegen/cpu_codegen.h"
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/gpu_module.h"
#include "backends/llvm/shared_arena.h"
#include "backends/target.h"

namespace tessera::cpu {
namespace {

class CpuTarget final : public Target {
public:
  std::string_view name() const override { return "cpu"; }
  std::string description() const override {
    return std::string("x86-64 object for this host (-march=native), JIT-linked by the CPU "
                       "driver; matrix ops run on the matrix runtime's ") +
           tsr_mx_path_name() + " path (bf16 tiles: " + tsr_mx_bf16_kernel() + ")";
  }
  std::string_view backend() const override { return "cpu"; }
  std::string_view format() const override { return TSR_CPU_FORMAT; }
  std::vector<std::string> stageFiles() const override {
    return {"0-kir.tir", "1-llvm.ll", "2-llvm.opt.ll", "3-obj.o"};
  }
  bool graphMatrixOps() const override { return true; }
  // The driver's extern GEMM libraries, preferred first (extern_kernels.cpp: the driver
  // loads "<library>.gemm.f32"; MKL is faster than OpenBLAS at the models' shapes).
  std::string_view externGemmLibrary() const override { return "mkl openblas"; }
  bool subgroupSizeOption() const override { return true; }
  bool quickTier() const override { return true; }
  bool buffersInHostMemory() const override { return true; }

  bool deviceOptions(const tsr_device_info_t &, std::string_view caps, TargetOptions *opts,
                     std::string *) const override {
    // The subgroup width is the caller's choice (the CPU emulates any); the code is for the
    // host, which is the device.
    opts->caps = std::string(caps);
    return true;
  }

  // The driver gives each workgroup the arena the table says and the runtime emulates the
  // subgroup width it says: both are functions of the kernel and the options.
  std::string tableMismatch(const ArtefactKernel &k, const ir::Function &f,
                            const TargetOptions &opts, std::string_view) const override {
    uint64_t shared = llvmgen::sharedArenaBytes(f);
    if (k.sharedBytes != shared)
      return "it gives @" + k.name + " " + std::to_string(k.sharedBytes) +
             " bytes of shared memory, the kernel's arrays take " + std::to_string(shared);
    uint32_t width = options(opts).subgroupSize;
    if (k.subgroupSize != width)
      return "its subgroup size of @" + k.name + " is " + std::to_string(k.subgroupSize) +
             ", the code is compiled " + std::to_string(width) + " wide";
    if (!k.offsets.empty() || k.pushBytes != 0 || k.controlBinding != UINT32_MAX)
      return "its table gives @" + k.name + " push constants or a control binding, which " +
             "CPU kernels do not have";
    return "";
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    CpuCompileOptions co = options(opts);
    return targetDescription(co) + " options=" + std::to_string(co.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    auto cm = compileKernelModule(m, options(opts), error);
    if (!cm)
      return std::nullopt;
    Artefact a;
    a.format = TSR_CPU_FORMAT;
    a.image = cm->objectBytes();
    for (const CpuKernelInfo &k : cm->kernels())
      a.kernels.push_back({k.name, k.params, {}, 0, k.sharedBytes, k.subgroupSize, UINT32_MAX});
    if (opts.keepStages) {
      std::vector<std::string> files = stageFiles();
      const auto &names = CpuCompiledModule::stageNames(); // kir, llvm, llvm.opt, obj
      for (size_t i = 0; i + 1 < names.size(); ++i)
        a.stages.push_back({files[i], cm->dump(names[i])});
      a.stages.push_back({files.back(), std::string(a.image.begin(), a.image.end())});
    }
    return a;
  }

  std::string summary(const Artefact &a, const TargetOptions &) const override {
    // The matrix runtime's path (chosen once per process by CPUID, TESSERA_MX_PATH) is what
    // a benchmark reader needs to know to judge a matrix kernel's speed.
    return std::to_string(a.image.size()) +
           " bytes of x86-64 object (matrix runtime path: " + tsr_mx_path_name() +
           ", bf16 tiles: " + tsr_mx_bf16_kernel() + ")";
  }

private:
  static CpuCompileOptions options(const TargetOptions &opts) {
    CpuCompileOptions co;
    if (opts.subgroupSize)
      co.subgroupSize = opts.subgroupSize;
    co.bounds = opts.bounds;
    co.strict = opts.strict;
    if (opts.quick)
      co.optLevel = kQuickTier;
    co.keepDumps = opts.keepStages;
    return co;
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<CpuTarget>(); }

} // namespace tessera::cpu
