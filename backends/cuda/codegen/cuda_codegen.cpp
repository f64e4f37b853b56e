// The CUDA compile pipeline as named stages: kir -> llvm -> llvm.opt -> ptx -> cubin.
//
// SIMT lowering (backends/llvm) with the NVPTX hooks, libdevice linked for the math it
// needs (NVVMReflect sees __CUDA_FTZ = 0), internalised and optimised at O3, PTX from the
// NVPTX backend, then ptxas as a subprocess when it is installed. LLVM errors become our
// error strings here. Must never need a GPU or the CUDA driver, and must stay deterministic.
#include "backends/cuda/codegen/cuda_codegen_impl.h"
#include "backends/llvm/gpu_pipeline.h"
#include "backends/stage_files.h"
#include "ir/core/hash.h"
#include "ir/text/printer.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

namespace tessera::cuda {

struct CudaCompiledModule::Impl {
  std::vector<uint8_t> cubin;
  std::vector<CudaKernelInfo> kernels;
  std::map<std::string, std::string, std::less<>> dumps;
};

namespace {

struct Arch {
  const char *name;
  const char *ptx; // the lowest PTX ISA version that knows the arch: newest drivers not needed
};
constexpr Arch kArchs[] = {
    {"sm_80", "+ptx70"}, {"sm_89", "+ptx78"}, {"sm_90", "+ptx78"}, {"sm_90a", "+ptx80"}};
constexpr const char *kTriple = "nvptx64-nvidia-cuda";
// Static shared memory per block on every arch (more needs dynamic shared memory and an
// opt-in attribute at launch, which this ABI does not have). The IR allows 64 KiB.
constexpr uint64_t kMaxStaticShared = uint64_t{48} * 1024;

const Arch *findArch(const std::string &name) {
  for (const Arch &a : kArchs)
    if (name == a.name)
      return &a;
  return nullptr;
}

std::string cudaRoot() {
  for (const char *var : {"CUDA_PATH", "CUDA_HOME"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

std::string findLibdevice(const CudaCompileOptions &opts) {
  if (!opts.libdevicePath.empty())
    return opts.libdevicePath;
  for (std::string p : {cudaRoot() + "/nvvm/libdevice/libdevice.10.bc",
                        std::string("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"),
                        std::string("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc")})
    if (llvm::sys::fs::exists(p))
      return p;
  return {};
}

std::string findPtxas(const CudaCompileOptions &opts) {
  if (!opts.ptxasPath.empty())
    return opts.ptxasPath;
  return llvmgen::findTool({cudaRoot() + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", "ptxas"});
}

/// "path:size", or "none": enough to tell two installations apart in a cache key.
std::string fileIdentity(const std::string &path) {
  uint64_t size = 0;
  if (path.empty() || llvm::sys::fs::file_size(path, size))
    return "none";
  return path + ":" + std::to_string(size);
}

void initNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// Links libdevice when the lowered module calls it; sets __CUDA_FTZ to 0 either way.
llvm::Error linkLibdevice(llvm::Module &mod, const CudaCompileOptions &opts) {
  mod.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  std::vector<std::string> needed = llvmgen::undefinedFunctions(mod, "__nv_");
  if (needed.empty())
    return llvm::Error::success();
  std::string path = findLibdevice(opts);
  if (path.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "libdevice.10.bc not found (set CudaCompileOptions::libdevicePath or CUDA_PATH); "
        "needed for %s",
        needed.front().c_str());
  return llvmgen::linkBitcodeFile(mod, path);
}

} // namespace

uint64_t CudaCompileOptions::hash() const {
  // The fields in declaration order, after the layout version of this struct.
  return Fnv1a()
      .num(1)
      .str(arch)
      .num(optLevel)
      .num(emitCubin)
      .str(ptxasPath)
      .str(libdevicePath)
      .num(strict ? 0x5354524943540001ull : 0) // "STRICT" 1
      .value();
}

CudaCompiledModule::CudaCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCompiledModule::~CudaCompiledModule() = default;
const std::string &CudaCompiledModule::ptx() const { return dump("ptx"); }
const std::vector<uint8_t> &CudaCompiledModule::cubin() const { return impl_->cubin; }
const std::vector<CudaKernelInfo> &CudaCompiledModule::kernels() const { return impl_->kernels; }

const std::string &CudaCompiledModule::dump(std::string_view stage) const {
  static const std::string empty;
  auto it = impl_->dumps.find(stage);
  return it == impl_->dumps.end() ? empty : it->second;
}

const std::vector<std::string> &CudaCompiledModule::stageNames() {
  static const std::vector<std::string> names = {"kir", "llvm", "llvm.opt", "ptx", "cubin"};
  return names;
}

bool CudaCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  std::vector<StageFile> files = {{"0-kir.tir", dump("kir")},
                                  {"1-llvm.ll", dump("llvm")},
                                  {"2-llvm.opt.ll", dump("llvm.opt")},
                                  {"3-ptx.ptx", dump("ptx")}};
  if (!dump("cubin").empty()) // no ptxas: no cubin
    files.push_back({"4-cubin.cubin", dump("cubin")});
  return writeStageFiles(dir, files, error);
}

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Arch &a : kArchs)
      v.push_back(a.name);
    return v;
  }();
  return names;
}

std::string targetDescription(const CudaCompileOptions &opts) {
  const Arch *a = findArch(opts.arch);
  std::string ptxas = opts.emitCubin ? fileIdentity(findPtxas(opts)) : "off";
  return std::string(kTriple) + " " + opts.arch + " " + (a ? a->ptx : "?") + " llvm-" +
         LLVM_VERSION_STRING + " libdevice=" + fileIdentity(findLibdevice(opts)) +
         " ptxas=" + ptxas;
}

std::unique_ptr<CudaCompiledModule>
compileKernelModule(const ir::Module &m, const CudaCompileOptions &opts, std::string *error) {
  auto fail = [&](std::string msg) -> std::unique_ptr<CudaCompiledModule> {
    if (error)
      *error = std::move(msg);
    return nullptr;
  };
  auto failWith = [&](llvm::Error e) { return fail(llvm::toString(std::move(e))); };
  const Arch *arch = findArch(opts.arch);
  if (!arch) {
    std::string names;
    for (const std::string &n : supportedArchs())
      names += (names.empty() ? "" : ", ") + n;
    return fail("unknown CUDA arch '" + opts.arch + "' (accepted: " + names + ")");
  }
  if (opts.optLevel > 3)
    return fail("optimisation level must be 0..3, got " + std::to_string(opts.optLevel));
  initNvptx();
  std::string err;
  auto tm =
      llvmgen::createTargetMachine(kTriple, arch->name, arch->ptx, opts.optLevel, err, opts.strict);
  if (!tm)
    return fail(err);
  auto impl = std::make_unique<CudaCompiledModule::Impl>();
  impl->dumps["kir"] = ir::printModule(m);
  // What libdevice lacks becomes basic ops (on a copy: `m` is the caller's).
  ir::Module lm = ir::cloneModule(m);
  ir::decomposeMath(lm, {nativeMath(opts), /*int64=*/true});
  if (std::string why = opts.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  llvm::LLVMContext ctx;
  llvmgen::DiagnosticCapture diags(ctx);
  auto mod = std::make_unique<llvm::Module>("tessera", ctx);
  mod->setTargetTriple(kTriple);
  mod->setDataLayout(tm->createDataLayout());
  NvptxHooks hooks(*mod);
  llvmgen::SimtConfig cfg{32, "cuda", &hooks};
  std::vector<llvmgen::LoweredKernel> lowered;
  if (llvm::Error e = llvmgen::lowerModuleSimt(lm, *mod, cfg, lowered))
    return failWith(std::move(e));
  if (opts.strict)
    llvmgen::addStrictFunctionAttributes(*mod);
  for (const llvmgen::LoweredKernel &k : lowered)
    if (k.sharedBytes > kMaxStaticShared)
      return fail("kernel @" + k.name + " uses " + std::to_string(k.sharedBytes) +
                  " bytes of shared memory; CUDA allows " + std::to_string(kMaxStaticShared) +
                  " bytes of static shared memory per block");
  impl->dumps["llvm"] = llvmgen::printModule(*mod);
  if (llvm::Error e = llvmgen::verifyLowered(*mod))
    return failWith(std::move(e));
  if (llvm::Error e = linkLibdevice(*mod, opts))
    return failWith(std::move(e));
  llvmgen::internalizeExcept(*mod, lowered);
  llvmgen::optimizeModule(*mod, *tm, opts.optLevel);
  impl->dumps["llvm.opt"] = llvmgen::printModule(*mod);
  auto ptx = llvmgen::emitMachineCode(*mod, *tm, llvm::CodeGenFileType::AssemblyFile);
  if (!ptx)
    return failWith(ptx.takeError());
  if (!diags.errors().empty())
    return fail("NVPTX code generation failed: " + diags.errors());
  impl->dumps["ptx"] = std::move(*ptx);
  std::string ptxas = opts.emitCubin ? findPtxas(opts) : std::string();
  if (!ptxas.empty()) {
    auto cubin = llvmgen::runTool(ptxas, {"-arch=" + opts.arch, "-o", "{out}", "{in}"},
                                  impl->dumps["ptx"], "kernel.ptx", "kernel.cubin");
    if (!cubin)
      return failWith(cubin.takeError());
    impl->cubin.assign(cubin->begin(), cubin->end());
    impl->dumps["cubin"] = std::move(*cubin);
  }
  for (auto &k : lowered)
    impl->kernels.push_back({k.name, k.params, k.sharedBytes, 32});
  return std::make_unique<CudaCompiledModule>(std::move(impl));
}

} // namespace tessera::cuda
