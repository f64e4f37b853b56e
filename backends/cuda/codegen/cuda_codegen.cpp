// The CUDA target of the SIMT pipeline (backends/llvm/simt_pipeline.h):
//   kir -> llvm -> llvm.opt -> ptx -> cubin.
//
// What is CUDA's own: the arch table (the PTX ISA version each arch needs), libdevice and
// where to find it (NVVMReflect sees __CUDA_FTZ = 0), the 48 KiB static shared memory
// limit, and ptxas as the final tool, run only when it is installed (the PTX is the output
// either way). Must never need a GPU or the CUDA driver, and must stay deterministic.
#include "backends/cuda/codegen/cuda_codegen_impl.h"
#include "backends/llvm/simt_pipeline.h"
#include "ir/core/hash.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>

namespace tessera::cuda {

struct CudaCompiledModule::Impl {
  std::vector<uint8_t> cubin;
  std::vector<CudaKernelInfo> kernels;
  llvmgen::SimtOutput out;
};

namespace {

void initNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvmgen::SimtTargetHooks> makeHooks(llvm::Module &m, const llvmgen::SimtArch &) {
  return std::make_unique<NvptxHooks>(m);
}

const llvmgen::SimtTarget &target() {
  // $CUDA_PATH, else $CUDA_HOME, else the toolkit's default place.
  const std::vector<const char *> cudaRoot = {"CUDA_PATH", "CUDA_HOME"};
  static const llvmgen::SimtTarget t = {
      .vendor = "CUDA",
      .loweringName = "cuda",
      .codegenName = "NVPTX",
      .triple = "nvptx64-nvidia-cuda",
      // The features: the lowest PTX ISA version that knows the arch (newest drivers not
      // needed).
      .archs = {{"sm_80", "+ptx70", 32},
                {"sm_89", "+ptx78", 32},
                {"sm_90", "+ptx78", 32},
                {"sm_90a", "+ptx80", 32}},
      .initialize = initNvptx,
      .makeHooks = makeHooks,
      .moduleFlags = {},
      .tagFunctions = false,
      // Static shared memory per block on every arch (more needs dynamic shared memory and
      // an opt-in attribute at launch, which this ABI does not have). The IR allows 64 KiB.
      .maxStaticShared = uint64_t{48} * 1024,
      .library = {.prefix = "__nv_",
                  .notFound = "libdevice.10.bc not found (set CudaCompileOptions::libdevicePath "
                              "or CUDA_PATH)",
                  .folders = {cudaRoot,
                              "/usr/local/cuda",
                              {"{root}/nvvm/libdevice", "/usr/local/cuda/nvvm/libdevice",
                               "/usr/lib/nvidia-cuda-toolkit/libdevice"}},
                  .files = {"libdevice.10.bc"},
                  .controls = {},
                  .flags = {{"nvvm-reflect-ftz", 0}}, // __CUDA_FTZ = 0 for NVVMReflect
                  .afterLink = nullptr},
      .dumpLinked = false,
      .machine = {"ptx", "ptx"},
      .machineIsObject = false,
      .tool = {.stage = {"cubin", "cubin"},
               .args = {"-arch={arch}", "-o", "{out}", "{in}"},
               .inName = "kernel.ptx",
               .outName = "kernel.cubin",
               .search = {cudaRoot,
                          "/usr/local/cuda",
                          {"{root}/bin/ptxas", "/usr/local/cuda/bin/ptxas", "ptxas"}},
               .notFound = nullptr}, // optional: the PTX is the output either way
  };
  return t;
}

std::string libdeviceFile(const CudaCompileOptions &opts) {
  if (!opts.libdevicePath.empty())
    return opts.libdevicePath;
  std::string dir = llvmgen::findSimtLibraryDir(target());
  return dir.empty() ? "" : dir + "/libdevice.10.bc";
}

} // namespace

uint64_t CudaCompileOptions::hash() const {
  // The fields in declaration order, after the layout version of this struct.
  return Fnv1a()
      .num(2)
      .str(arch)
      .num(optLevel)
      .num(emitCubin)
      .str(ptxasPath)
      .str(libdevicePath)
      .num(strict ? 0x5354524943540001ull : 0) // "STRICT" 1
      .num(matrixInstructions)
      .value();
}

CudaCompiledModule::CudaCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCompiledModule::~CudaCompiledModule() = default;
const std::string &CudaCompiledModule::ptx() const { return dump("ptx"); }
const std::vector<uint8_t> &CudaCompiledModule::cubin() const { return impl_->cubin; }
const std::vector<CudaKernelInfo> &CudaCompiledModule::kernels() const { return impl_->kernels; }

const std::string &CudaCompiledModule::dump(std::string_view stage) const {
  return impl_->out.stage(stage);
}

const std::vector<std::string> &CudaCompiledModule::stageNames() {
  static const std::vector<std::string> names = llvmgen::simtStageNames(target());
  return names;
}

bool CudaCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  return impl_->out.writeStages(dir, error); // no ptxas: no 4-cubin.cubin
}

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> names = llvmgen::simtArchNames(target());
  return names;
}

std::string targetDescription(const CudaCompileOptions &opts) {
  const llvmgen::SimtArch *a = llvmgen::findSimtArch(target(), opts.arch);
  std::string ptxas = !opts.emitCubin ? "off"
                                      : llvmgen::fileIdentity(opts.ptxasPath.empty()
                                                                  ? llvmgen::findSimtTool(target())
                                                                  : opts.ptxasPath);
  return std::string(target().triple) + " " + opts.arch + " " + (a ? a->features : "?") + " llvm-" +
         LLVM_VERSION_STRING + " libdevice=" + llvmgen::fileIdentity(libdeviceFile(opts)) +
         " ptxas=" + ptxas;
}

std::unique_ptr<CudaCompiledModule>
compileKernelModule(const ir::Module &m, const CudaCompileOptions &opts, std::string *error) {
  auto impl = std::make_unique<CudaCompiledModule::Impl>();
  auto arch = llvmgen::selectSimtArch(target(), opts.arch, opts.optLevel);
  llvmgen::SimtJob job{.arch = arch ? *arch : nullptr,
                       .optLevel = opts.optLevel,
                       .libraryFile = opts.libdevicePath,
                       .libraryDir = "",
                       .toolPath = opts.ptxasPath,
                       .runTool = opts.emitCubin,
                       .math = {nativeMath(opts), /*int64=*/true, /*fusedFma=*/!opts.strict},
                       .strict = opts.strict,
                       .matrixInstructions = opts.matrixInstructions};
  llvm::Error e = arch ? llvmgen::compileSimt(target(), m, job, impl->out) : arch.takeError();
  if (e) {
    std::string msg = llvm::toString(std::move(e));
    if (error)
      *error = std::move(msg);
    return nullptr;
  }
  const std::string &cubin = impl->out.stage("cubin");
  impl->cubin.assign(cubin.begin(), cubin.end());
  for (const llvmgen::LoweredKernel &k : impl->out.kernels)
    impl->kernels.push_back({k.name, k.params, k.sharedBytes, 32});
  return std::make_unique<CudaCompiledModule>(std::move(impl));
}

} // namespace tessera::cuda
