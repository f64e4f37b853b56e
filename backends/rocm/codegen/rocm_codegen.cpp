// The ROCm compile pipeline as named stages:
//   kir -> llvm -> llvm.linked -> llvm.opt -> obj -> hsaco.
//
// SIMT lowering (backends/llvm) with the AMDGPU hooks, the device libraries linked for the
// math the module calls (ocml, ockl and the oclc_* controls; an ISA version that the
// installed libraries lack is defined here), internalised and optimised at O3, an AMDGPU
// object with code object v4 metadata, then `ld.lld -shared` as a subprocess. LLVM errors
// become our error strings here. Must never need a GPU or the ROCm runtime, and must stay
// deterministic.
#include "backends/llvm/gpu_pipeline.h"
#include "backends/rocm/codegen/rocm_codegen_impl.h"
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

namespace tessera::rocm {

struct RocmCompiledModule::Impl {
  std::vector<uint8_t> hsaco;
  std::vector<RocmKernelInfo> kernels;
  std::map<std::string, std::string, std::less<>> dumps;
};

namespace {

struct Arch {
  const char *name;
  unsigned waveSize;
  const char *isa;     // oclc_isa_version_<isa>.bc
  uint32_t isaVersion; // __oclc_ISA_version: major * 1000 + minor * 100 + stepping
};
constexpr Arch kArchs[] = {
    {"gfx90a", 64, "90a", 9010}, {"gfx942", 64, "942", 9402}, {"gfx1100", 32, "1100", 11000}};
constexpr const char *kTriple = "amdgcn-amd-amdhsa";
constexpr uint32_t kCodeObjectVersion = 400; // what Debian's ROCm 5.2 runtime loads

const Arch *findArch(const std::string &name) {
  for (const Arch &a : kArchs)
    if (name == a.name)
      return &a;
  return nullptr;
}

std::string features(const Arch &a) {
  return a.waveSize == 64 ? "+wavefrontsize64" : "+wavefrontsize32";
}

std::string findDeviceLibDir(const RocmCompileOptions &opts) {
  if (!opts.deviceLibDir.empty())
    return opts.deviceLibDir;
  std::vector<std::string> dirs;
  if (const char *root = std::getenv("ROCM_PATH"); root && *root)
    dirs.push_back(std::string(root) + "/amdgcn/bitcode");
  dirs.push_back("/opt/rocm/amdgcn/bitcode");
  dirs.push_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
  for (const std::string &d : dirs)
    if (llvm::sys::fs::exists(d + "/ocml.bc"))
      return d;
  return {};
}

std::string findLld(const RocmCompileOptions &opts) {
  if (!opts.lldPath.empty())
    return opts.lldPath;
  return llvmgen::findTool({"ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "ld.lld"});
}

std::string fileIdentity(const std::string &path) {
  uint64_t size = 0;
  if (path.empty() || llvm::sys::fs::file_size(path, size))
    return "none";
  return path + ":" + std::to_string(size);
}

void initAmdgpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
}

llvm::Error failure(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

/// Defines __oclc_ISA_version when the installed libraries have no file for the arch
/// (rocm-device-libs 5.2 predates gfx942 and gfx1100). ocml only compares it against
/// older versions to pick instruction sequences, so the newest-known paths are taken.
void defineIsaVersion(llvm::Module &mod, const Arch &arch) {
  llvm::GlobalVariable *gv = mod.getGlobalVariable("__oclc_ISA_version");
  if (!gv || !gv->isDeclaration())
    return;
  gv->setInitializer(llvm::ConstantInt::get(gv->getValueType(), arch.isaVersion));
  gv->setConstant(true);
  gv->setLinkage(llvm::GlobalValue::InternalLinkage);
  gv->setVisibility(llvm::GlobalValue::DefaultVisibility);
}

/// Links ocml/ockl and the oclc_* controls when the lowered module calls the libraries.
llvm::Error linkDeviceLibs(llvm::Module &mod, const RocmCompileOptions &opts, const Arch &arch) {
  std::vector<std::string> needed = llvmgen::undefinedFunctions(mod, "__ocml_");
  if (needed.empty())
    return llvm::Error::success();
  std::string dir = findDeviceLibDir(opts);
  if (dir.empty())
    return failure("rocm-device-libs (ocml.bc) not found (set RocmCompileOptions::deviceLibDir "
                   "or ROCM_PATH); needed for " +
                   needed.front());
  std::string wave64 = arch.waveSize == 64 ? "on" : "off";
  // Libraries first, then the control variables they reference (LinkOnlyNeeded).
  const std::string required[] = {"ocml.bc", "ockl.bc"};
  const std::string controls[] = {"oclc_isa_version_" + std::string(arch.isa) + ".bc",
                                  "oclc_wavefrontsize64_" + wave64 + ".bc",
                                  "oclc_finite_only_off.bc",
                                  "oclc_unsafe_math_off.bc",
                                  "oclc_daz_opt_off.bc",
                                  "oclc_correctly_rounded_sqrt_on.bc",
                                  "oclc_abi_version_400.bc"};
  for (const std::string &f : required)
    if (llvm::Error e = llvmgen::linkBitcodeFile(mod, dir + "/" + f))
      return e;
  for (const std::string &f : controls) {
    std::string path = dir + "/" + f;
    if (!llvm::sys::fs::exists(path))
      continue; // the ISA version is defined below; abi_version only exists in newer libs
    if (llvm::Error e = llvmgen::linkBitcodeFile(mod, path))
      return e;
  }
  defineIsaVersion(mod, arch);
  // The libraries' OpenCL markers would make the kernels' metadata say `.language: OpenCL C`.
  for (const char *name : {"opencl.ocl.version", "llvm.ident"})
    if (llvm::NamedMDNode *md = mod.getNamedMetadata(name))
      mod.eraseNamedMetadata(md);
  for (const llvm::GlobalVariable &gv : mod.globals())
    if (gv.isDeclaration() && gv.getName().starts_with("__oclc_"))
      return failure("device library control " + gv.getName().str() + " is not defined in " + dir);
  return llvm::Error::success();
}

/// Byte offsets of the explicit kernel arguments: each at its natural alignment, as the
/// AMDGPU backend lays out the kernarg segment (checked against the metadata in tests).
void layOutArgs(RocmKernelInfo &k) {
  uint32_t offset = 0;
  for (const ir::Type &t : k.params) {
    uint32_t size =
        t.kind == ir::Type::Kind::Buffer ? 8 : static_cast<uint32_t>(ir::byteSize(t.elem));
    offset = (offset + size - 1) / size * size;
    k.argOffsets.push_back(offset);
    offset += size;
  }
  k.explicitArgBytes = offset;
}

} // namespace

uint64_t RocmCompileOptions::hash() const {
  // The fields in declaration order, after the layout version of this struct.
  return Fnv1a()
      .num(1)
      .str(arch)
      .num(optLevel)
      .str(deviceLibDir)
      .str(lldPath)
      .num(strict ? 0x5354524943540001ull : 0) // "STRICT" 1
      .value();
}

RocmCompiledModule::RocmCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RocmCompiledModule::~RocmCompiledModule() = default;
const std::vector<uint8_t> &RocmCompiledModule::hsaco() const { return impl_->hsaco; }
const std::vector<RocmKernelInfo> &RocmCompiledModule::kernels() const { return impl_->kernels; }

const std::string &RocmCompiledModule::dump(std::string_view stage) const {
  static const std::string empty;
  auto it = impl_->dumps.find(stage);
  return it == impl_->dumps.end() ? empty : it->second;
}

const std::vector<std::string> &RocmCompiledModule::stageNames() {
  static const std::vector<std::string> names = {"kir",      "llvm", "llvm.linked",
                                                 "llvm.opt", "obj",  "hsaco"};
  return names;
}

bool RocmCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  return writeStageFiles(dir,
                         {{"0-kir.tir", dump("kir")},
                          {"1-llvm.ll", dump("llvm")},
                          {"2-llvm.linked.ll", dump("llvm.linked")},
                          {"3-llvm.opt.ll", dump("llvm.opt")},
                          {"4-obj.o", dump("obj")},
                          {"5-hsaco.hsaco", dump("hsaco")}},
                         error);
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

std::string targetDescription(const RocmCompileOptions &opts) {
  const Arch *a = findArch(opts.arch);
  std::string libs = findDeviceLibDir(opts);
  return std::string(kTriple) + " " + opts.arch + " " + (a ? features(*a) : "?") + " cov" +
         std::to_string(kCodeObjectVersion / 100) + " llvm-" + LLVM_VERSION_STRING +
         " ocml=" + fileIdentity(libs.empty() ? "" : libs + "/ocml.bc") +
         " lld=" + fileIdentity(findLld(opts));
}

std::unique_ptr<RocmCompiledModule>
compileKernelModule(const ir::Module &m, const RocmCompileOptions &opts, std::string *error) {
  auto fail = [&](std::string msg) -> std::unique_ptr<RocmCompiledModule> {
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
    return fail("unknown ROCm arch '" + opts.arch + "' (accepted: " + names + ")");
  }
  if (opts.optLevel > 3)
    return fail("optimisation level must be 0..3, got " + std::to_string(opts.optLevel));
  std::string lld = findLld(opts);
  if (lld.empty())
    return fail("ld.lld not found (install lld-19 or set RocmCompileOptions::lldPath)");
  initAmdgpu();
  std::string err;
  auto tm = llvmgen::createTargetMachine(kTriple, arch->name, features(*arch), opts.optLevel, err,
                                         opts.strict);
  if (!tm)
    return fail(err);
  auto impl = std::make_unique<RocmCompiledModule::Impl>();
  impl->dumps["kir"] = ir::printModule(m);
  // What ocml lacks becomes basic ops (on a copy: `m` is the caller's).
  ir::Module lm = ir::cloneModule(m);
  ir::decomposeMath(lm, {nativeMath(opts), /*int64=*/true});
  if (std::string why = opts.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  llvm::LLVMContext ctx;
  llvmgen::DiagnosticCapture diags(ctx);
  auto mod = std::make_unique<llvm::Module>("tessera", ctx);
  mod->setTargetTriple(kTriple);
  mod->setDataLayout(tm->createDataLayout());
  mod->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", kCodeObjectVersion);
  AmdgpuHooks hooks(*mod, arch->waveSize);
  llvmgen::SimtConfig cfg{arch->waveSize, "rocm", &hooks};
  std::vector<llvmgen::LoweredKernel> lowered;
  if (llvm::Error e = llvmgen::lowerModuleSimt(lm, *mod, cfg, lowered))
    return failWith(std::move(e));
  for (llvm::Function &f : *mod) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", arch->name);
    f.addFnAttr("target-features", features(*arch));
  }
  if (opts.strict)
    llvmgen::addStrictFunctionAttributes(*mod);
  impl->dumps["llvm"] = llvmgen::printModule(*mod);
  if (llvm::Error e = llvmgen::verifyLowered(*mod))
    return failWith(std::move(e));
  if (llvm::Error e = linkDeviceLibs(*mod, opts, *arch))
    return failWith(std::move(e));
  impl->dumps["llvm.linked"] = llvmgen::printModule(*mod);
  llvmgen::internalizeExcept(*mod, lowered);
  llvmgen::optimizeModule(*mod, *tm, opts.optLevel);
  impl->dumps["llvm.opt"] = llvmgen::printModule(*mod);
  auto obj = llvmgen::emitMachineCode(*mod, *tm, llvm::CodeGenFileType::ObjectFile);
  if (!obj)
    return failWith(obj.takeError());
  if (!diags.errors().empty())
    return fail("AMDGPU code generation failed: " + diags.errors());
  impl->dumps["obj"] = *obj;
  auto hsaco = llvmgen::runTool(lld, {"-shared", "--no-undefined", "-o", "{out}", "{in}"}, *obj,
                                "kernel.o", "kernel.hsaco");
  if (!hsaco)
    return failWith(hsaco.takeError());
  impl->hsaco.assign(hsaco->begin(), hsaco->end());
  impl->dumps["hsaco"] = std::move(*hsaco);
  for (auto &k : lowered) {
    RocmKernelInfo info{k.name, k.params, {}, 0, k.sharedBytes, arch->waveSize};
    layOutArgs(info);
    impl->kernels.push_back(std::move(info));
  }
  return std::make_unique<RocmCompiledModule>(std::move(impl));
}

} // namespace tessera::rocm
