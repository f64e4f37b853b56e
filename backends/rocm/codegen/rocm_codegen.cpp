// The ROCm target of the SIMT pipeline (backends/llvm/simt_pipeline.h):
//   kir -> llvm -> llvm.linked -> llvm.opt -> obj -> hsaco.
//
// What is ROCm's own: the arch table (wavefront size, the device libraries' ISA files),
// code object v4, ocml/ockl with the oclc_* control libraries and where to find them (an
// ISA version the installed libraries lack is defined here), the kernarg layout, and
// `ld.lld -shared` as the final tool, which is required. Must never need a GPU or the ROCm
// runtime, and must stay deterministic.
#include "backends/llvm/simt_pipeline.h"
#include "backends/rocm/codegen/rocm_codegen_impl.h"
#include "ir/core/hash.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/TargetSelect.h>

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
  return std::make_unique<AmdgpuHooks>(m, arch.subgroupSize, arch.name);
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
      // isaVersion: __oclc_ISA_version, major * 1000 + minor * 100 + stepping. The files: the
      // oclc controls of the ISA and the wavefront size.
      .archs = {{"gfx90a",
                 "+wavefrontsize64",
                 64,
                 9010,
                 {"oclc_isa_version_90a.bc", "oclc_wavefrontsize64_on.bc"}},
                {"gfx942",
                 "+wavefrontsize64",
                 64,
                 9402,
                 {"oclc_isa_version_942.bc", "oclc_wavefrontsize64_on.bc"}},
                {"gfx1100",
                 "+wavefrontsize32",
                 32,
                 11000,
                 {"oclc_isa_version_1100.bc", "oclc_wavefrontsize64_off.bc"}}},
      .initialize = initAmdgpu,
      .makeHooks = makeHooks,
      .moduleFlags = {{"amdhsa_code_object_version", kCodeObjectVersion}},
      .tagFunctions = true,
      .maxStaticShared = 0, // 64 KiB of LDS on every arch: the IR's limit
      .library = {.prefix = "__ocml_",
                  .notFound = "rocm-device-libs (ocml.bc) not found (set "
                              "RocmCompileOptions::deviceLibDir or ROCM_PATH)",
                  .folders = {{"ROCM_PATH"},
                              "/opt/rocm",
                              {"{root}/amdgcn/bitcode", "/opt/rocm/amdgcn/bitcode",
                               "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"}},
                  .files = {"ocml.bc", "ockl.bc"},
                  // The controls ocml and ockl reference (LinkOnlyNeeded). A missing one is
                  // fine: the ISA version is defined after linking, and abi_version only
                  // exists in newer libraries.
                  .controls = {"oclc_finite_only_off.bc", "oclc_unsafe_math_off.bc",
                               "oclc_daz_opt_off.bc", "oclc_correctly_rounded_sqrt_on.bc",
                               "oclc_abi_version_400.bc"},
                  .flags = {},
                  .afterLink = afterLink},
      .dumpLinked = true,
      .machine = {"obj", "o"},
      .machineIsObject = true,
      .tool = {.stage = {"hsaco", "hsaco"},
               .args = {"-shared", "--no-undefined", "-o", "{out}", "{in}"},
               .inName = "kernel.o",
               .outName = "kernel.hsaco",
               .search = {{}, "", {"ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "ld.lld"}},
               // The code object is the only output: no linker, no compile.
               .notFound = "ld.lld not found (install lld-19 or set RocmCompileOptions::lldPath)"},
  };
  return t;
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
      .num(2)
      .str(arch)
      .num(optLevel)
      .str(deviceLibDir)
      .str(lldPath)
      .num(strict ? 0x5354524943540001ull : 0) // "STRICT" 1
      .num(matrixInstructions)
      .value();
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
  std::string libs =
      opts.deviceLibDir.empty() ? llvmgen::findSimtLibraryDir(target()) : opts.deviceLibDir;
  std::string lld = opts.lldPath.empty() ? llvmgen::findSimtTool(target()) : opts.lldPath;
  return std::string(target().triple) + " " + opts.arch + " " + (a ? a->features : "?") + " cov" +
         std::to_string(kCodeObjectVersion / 100) + " llvm-" + LLVM_VERSION_STRING +
         " ocml=" + llvmgen::fileIdentity(libs.empty() ? "" : libs + "/ocml.bc") +
         " lld=" + llvmgen::fileIdentity(lld);
}

std::unique_ptr<RocmCompiledModule>
compileKernelModule(const ir::Module &m, const RocmCompileOptions &opts, std::string *error) {
  auto impl = std::make_unique<RocmCompiledModule::Impl>();
  auto arch = llvmgen::selectSimtArch(target(), opts.arch, opts.optLevel);
  llvmgen::SimtJob job{.arch = arch ? *arch : nullptr,
                       .optLevel = opts.optLevel,
                       .libraryFile = "",
                       .libraryDir = opts.deviceLibDir,
                       .toolPath = opts.lldPath,
                       .runTool = true,
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
  const std::string &hsaco = impl->out.stage("hsaco");
  impl->hsaco.assign(hsaco.begin(), hsaco.end());
  for (const llvmgen::LoweredKernel &k : impl->out.kernels) {
    RocmKernelInfo info{k.name, k.params, {}, 0, k.sharedBytes, job.arch->subgroupSize};
    layOutArgs(info);
    impl->kernels.push_back(std::move(info));
  }
  return std::make_unique<RocmCompiledModule>(std::move(impl));
}

} // namespace tessera::rocm
