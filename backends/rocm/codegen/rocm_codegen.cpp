// The ROCm target of the SIMT pipeline (backends/llvm/simt_pipeline.h):
//   kir -> llvm -> llvm.linked -> llvm.opt -> obj -> hsaco.
//
// What is ROCm's own: the arch table (wavefront size, the device libraries' ISA names),
// code object v4, ocml/ockl with the oclc_* control libraries and where to find them (an
// ISA version the installed libraries lack is defined here), the kernarg layout, and
// `ld.lld -shared` as the final tool, which is required. Must never need a GPU or the ROCm
// runtime, and must stay deterministic.
#include "backends/llvm/gpu_pipeline.h"
#include "backends/llvm/simt_pipeline.h"
#include "backends/rocm/codegen/rocm_codegen_impl.h"
#include "ir/core/hash.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdlib>
#include <mutex>

namespace tessera::rocm {

struct RocmCompiledModule::Impl {
  std::vector<uint8_t> hsaco;
  std::vector<RocmKernelInfo> kernels;
  llvmgen::SimtOutput out;
};

namespace {

constexpr uint32_t kCodeObjectVersion = 400; // what Debian's ROCm 5.2 runtime loads

void initAmdgpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
}

std::unique_ptr<llvmgen::SimtTargetHooks> makeHooks(llvm::Module &m,
                                                    const llvmgen::SimtArch &arch) {
  return std::make_unique<AmdgpuHooks>(m, arch.subgroupSize);
}

/// Defines __oclc_ISA_version when the installed libraries have no file for the arch
/// (rocm-device-libs 5.2 predates gfx942 and gfx1100). ocml only compares it against
/// older versions to pick instruction sequences, so the newest-known paths are taken.
void defineIsaVersion(llvm::Module &mod, const llvmgen::SimtArch &arch) {
  llvm::GlobalVariable *gv = mod.getGlobalVariable("__oclc_ISA_version");
  if (!gv || !gv->isDeclaration())
    return;
  gv->setInitializer(llvm::ConstantInt::get(gv->getValueType(), arch.isaVersion));
  gv->setConstant(true);
  gv->setLinkage(llvm::GlobalValue::InternalLinkage);
  gv->setVisibility(llvm::GlobalValue::DefaultVisibility);
}

/// After ocml, ockl and the controls are linked: the ISA version, no OpenCL markers, and
/// every control defined.
llvm::Error afterLink(llvm::Module &mod, const llvmgen::SimtArch &arch, const std::string &dir) {
  defineIsaVersion(mod, arch);
  // The libraries' OpenCL markers would make the kernels' metadata say `.language: OpenCL C`.
  for (const char *name : {"opencl.ocl.version", "llvm.ident"})
    if (llvm::NamedMDNode *md = mod.getNamedMetadata(name))
      mod.eraseNamedMetadata(md);
  for (const llvm::GlobalVariable &gv : mod.globals())
    if (gv.isDeclaration() && gv.getName().starts_with("__oclc_"))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "%s",
          ("device library control " + gv.getName().str() + " is not defined in " + dir).c_str());
  return llvm::Error::success();
}

const llvmgen::SimtTarget &target() {
  static const llvmgen::SimtTarget t = {
      .vendor = "ROCm",
      .loweringName = "rocm",
      .codegenName = "AMDGPU",
      .triple = "amdgcn-amd-amdhsa",
      // isaVersion: __oclc_ISA_version, major * 1000 + minor * 100 + stepping.
      .archs = {{"gfx90a", "+wavefrontsize64", 64, "90a", 9010},
                {"gfx942", "+wavefrontsize64", 64, "942", 9402},
                {"gfx1100", "+wavefrontsize32", 32, "1100", 11000}},
      .initialize = initAmdgpu,
      .makeHooks = makeHooks,
      .moduleFlags = {{"amdhsa_code_object_version", kCodeObjectVersion}},
      .tagFunctions = true,
      .maxStaticShared = 0, // 64 KiB of LDS on every arch: the IR's limit
      .library = {.prefix = "__ocml_",
                  .notFound = "rocm-device-libs (ocml.bc) not found (set "
                              "RocmCompileOptions::deviceLibDir or ROCM_PATH)",
                  .flags = {},
                  .afterLink = afterLink},
      .dumpLinked = true,
      .machine = {"obj", "o"},
      .machineIsObject = true,
      .tool = {{"hsaco", "hsaco"},
               {"-shared", "--no-undefined", "-o", "{out}", "{in}"},
               "kernel.o",
               "kernel.hsaco"},
  };
  return t;
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

/// The libraries in `dir` for `arch`: ocml and ockl, then the oclc_* controls they
/// reference (LinkOnlyNeeded). A control may be missing: the ISA version is defined after
/// linking, and abi_version only exists in newer libraries.
void addDeviceLibs(llvmgen::SimtJob &job, const std::string &dir) {
  job.libraryDir = dir;
  if (dir.empty())
    return;
  const llvmgen::SimtArch &arch = *job.arch;
  std::string wave64 = arch.subgroupSize == 64 ? "on" : "off";
  job.libraries = {dir + "/ocml.bc", dir + "/ockl.bc"};
  for (const std::string &f :
       {"oclc_isa_version_" + std::string(arch.isa) + ".bc",
        "oclc_wavefrontsize64_" + wave64 + ".bc", std::string("oclc_finite_only_off.bc"),
        std::string("oclc_unsafe_math_off.bc"), std::string("oclc_daz_opt_off.bc"),
        std::string("oclc_correctly_rounded_sqrt_on.bc"), std::string("oclc_abi_version_400.bc")})
    job.optionalLibraries.push_back(dir + "/" + f);
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
  return Fnv1a().num(1).str(arch).num(optLevel).str(deviceLibDir).str(lldPath).value();
}

RocmCompiledModule::RocmCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RocmCompiledModule::~RocmCompiledModule() = default;
const std::vector<uint8_t> &RocmCompiledModule::hsaco() const { return impl_->hsaco; }
const std::vector<RocmKernelInfo> &RocmCompiledModule::kernels() const { return impl_->kernels; }

const std::string &RocmCompiledModule::dump(std::string_view stage) const {
  return impl_->out.stage(stage);
}

const std::vector<std::string> &RocmCompiledModule::stageNames() {
  static const std::vector<std::string> names = llvmgen::simtStageNames(target());
  return names;
}

bool RocmCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  return impl_->out.writeStages(dir, error);
}

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> names = llvmgen::simtArchNames(target());
  return names;
}

std::string targetDescription(const RocmCompileOptions &opts) {
  const llvmgen::SimtArch *a = llvmgen::findSimtArch(target(), opts.arch);
  std::string libs = findDeviceLibDir(opts);
  return std::string(target().triple) + " " + opts.arch + " " + (a ? a->features : "?") + " cov" +
         std::to_string(kCodeObjectVersion / 100) + " llvm-" + LLVM_VERSION_STRING +
         " ocml=" + llvmgen::fileIdentity(libs.empty() ? "" : libs + "/ocml.bc") +
         " lld=" + llvmgen::fileIdentity(findLld(opts));
}

std::unique_ptr<RocmCompiledModule>
compileKernelModule(const ir::Module &m, const RocmCompileOptions &opts, std::string *error) {
  auto impl = std::make_unique<RocmCompiledModule::Impl>();
  uint32_t waveSize = 0;
  llvm::Error e = [&]() -> llvm::Error {
    auto arch = llvmgen::selectSimtArch(target(), opts.arch, opts.optLevel);
    if (!arch)
      return arch.takeError();
    waveSize = (*arch)->subgroupSize;
    llvmgen::SimtJob job{*arch, opts.optLevel, {}, {}, {}, findLld(opts)};
    if (job.toolPath.empty()) // the code object is the only output: no linker, no compile
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "ld.lld not found (install lld-19 or set RocmCompileOptions::lldPath)");
    addDeviceLibs(job, findDeviceLibDir(opts));
    return llvmgen::compileSimt(target(), m, job, impl->out);
  }();
  if (e) {
    std::string msg = llvm::toString(std::move(e));
    if (error)
      *error = std::move(msg);
    return nullptr;
  }
  const std::string &hsaco = impl->out.stage("hsaco");
  impl->hsaco.assign(hsaco.begin(), hsaco.end());
  for (const llvmgen::LoweredKernel &k : impl->out.kernels) {
    RocmKernelInfo info{k.name, k.params, {}, 0, k.sharedBytes, waveSize};
    layOutArgs(info);
    impl->kernels.push_back(std::move(info));
  }
  return std::make_unique<RocmCompiledModule>(std::move(impl));
}

} // namespace tessera::rocm
