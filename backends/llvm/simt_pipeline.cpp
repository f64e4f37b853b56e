// The SIMT GPU compile pipeline (see simt_pipeline.h). Every step is a gpu_pipeline.h
// function; this file only orders them and reads the target's description. Must stay
// deterministic (no timestamps or random names in anything that reaches a stage), and must
// never test which target it compiles for: a difference between targets is a field.
#include "backends/llvm/simt_pipeline.h"

#include "backends/llvm/gpu_pipeline.h"
#include "backends/stage_files.h"
#include "ir/text/printer.h"

#include <llvm/Support/FileSystem.h>

namespace tessera::llvmgen {

namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

/// The tool's arguments with "{arch}" replaced ("{in}" and "{out}" are runTool's).
std::vector<std::string> toolArgs(const SimtTool &tool, const SimtArch &arch) {
  std::vector<std::string> args = tool.args;
  for (std::string &a : args)
    if (size_t at = a.find("{arch}"); at != std::string::npos)
      a.replace(at, 6, arch.name);
  return args;
}

/// The module flags of the library, then the library itself when the module calls it.
llvm::Error linkDeviceLibrary(const SimtTarget &t, const SimtJob &job, llvm::Module &mod) {
  for (const SimtModuleFlag &f : t.library.flags)
    mod.addModuleFlag(llvm::Module::Override, f.key, f.value);
  std::vector<std::string> needed = undefinedFunctions(mod, t.library.prefix);
  if (needed.empty())
    return llvm::Error::success();
  if (job.libraries.empty())
    return fail(std::string(t.library.notFound) + "; needed for " + needed.front());
  for (const std::string &path : job.libraries)
    if (llvm::Error e = linkBitcodeFile(mod, path))
      return e;
  for (const std::string &path : job.optionalLibraries) {
    if (!llvm::sys::fs::exists(path))
      continue;
    if (llvm::Error e = linkBitcodeFile(mod, path))
      return e;
  }
  if (!t.library.afterLink)
    return llvm::Error::success();
  return t.library.afterLink(mod, *job.arch, job.libraryDir);
}

} // namespace

const std::string &SimtOutput::stage(std::string_view name) const {
  static const std::string empty;
  for (const Stage &s : stages)
    if (s.name == name)
      return s.bytes;
  return empty;
}

bool SimtOutput::writeStages(const std::string &dir, std::string *error) const {
  std::vector<StageFile> files;
  for (size_t i = 0; i < stages.size(); ++i)
    files.push_back(
        {std::to_string(i) + "-" + stages[i].name + "." + stages[i].ext, stages[i].bytes});
  return writeStageFiles(dir, files, error);
}

std::vector<std::string> simtStageNames(const SimtTarget &t) {
  std::vector<std::string> names = {"kir", "llvm"};
  if (t.dumpLinked)
    names.push_back("llvm.linked");
  names.insert(names.end(), {"llvm.opt", t.machine.name, t.tool.stage.name});
  return names;
}

std::vector<std::string> simtArchNames(const SimtTarget &t) {
  std::vector<std::string> names;
  for (const SimtArch &a : t.archs)
    names.push_back(a.name);
  return names;
}

const SimtArch *findSimtArch(const SimtTarget &t, std::string_view name) {
  for (const SimtArch &a : t.archs)
    if (name == a.name)
      return &a;
  return nullptr;
}

llvm::Expected<const SimtArch *> selectSimtArch(const SimtTarget &t, const std::string &name,
                                                unsigned optLevel) {
  const SimtArch *arch = findSimtArch(t, name);
  if (!arch) {
    std::string names;
    for (const SimtArch &a : t.archs)
      names += (names.empty() ? "" : ", ") + std::string(a.name);
    return fail("unknown " + std::string(t.vendor) + " arch '" + name + "' (accepted: " + names +
                ")");
  }
  if (optLevel > 3)
    return fail("optimisation level must be 0..3, got " + std::to_string(optLevel));
  return arch;
}

std::string fileIdentity(const std::string &path) {
  uint64_t size = 0;
  if (path.empty() || llvm::sys::fs::file_size(path, size))
    return "none";
  return path + ":" + std::to_string(size);
}

llvm::Error compileSimt(const SimtTarget &t, const ir::Module &m, const SimtJob &job,
                        SimtOutput &out) {
  const SimtArch &arch = *job.arch;
  t.initialize();
  std::string err;
  auto tm = createTargetMachine(t.triple, arch.name, arch.features, job.optLevel, err);
  if (!tm)
    return fail(err);
  out.stages.push_back({"kir", "tir", ir::printModule(m)});
  llvm::LLVMContext ctx;
  DiagnosticCapture diags(ctx);
  auto mod = std::make_unique<llvm::Module>("tessera", ctx);
  mod->setTargetTriple(t.triple);
  mod->setDataLayout(tm->createDataLayout());
  for (const SimtModuleFlag &f : t.moduleFlags)
    mod->addModuleFlag(llvm::Module::Error, f.key, f.value);
  std::unique_ptr<SimtTargetHooks> hooks = t.makeHooks(*mod, arch);
  SimtConfig cfg{arch.subgroupSize, t.loweringName, hooks.get()};
  if (llvm::Error e = lowerModuleSimt(m, *mod, cfg, out.kernels))
    return e;
  for (const LoweredKernel &k : out.kernels)
    if (t.maxStaticShared && k.sharedBytes > t.maxStaticShared)
      return fail("kernel @" + k.name + " uses " + std::to_string(k.sharedBytes) +
                  " bytes of shared memory; " + t.vendor + " allows " +
                  std::to_string(t.maxStaticShared) + " bytes of static shared memory per block");
  for (llvm::Function &f : *mod) {
    if (!t.tagFunctions || f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", arch.name);
    f.addFnAttr("target-features", arch.features);
  }
  out.stages.push_back({"llvm", "ll", printModule(*mod)});
  if (llvm::Error e = verifyLowered(*mod))
    return e;
  if (llvm::Error e = linkDeviceLibrary(t, job, *mod))
    return e;
  if (t.dumpLinked)
    out.stages.push_back({"llvm.linked", "ll", printModule(*mod)});
  internalizeExcept(*mod, out.kernels);
  optimizeModule(*mod, *tm, job.optLevel);
  out.stages.push_back({"llvm.opt", "ll", printModule(*mod)});
  auto code = emitMachineCode(*mod, *tm,
                              t.machineIsObject ? llvm::CodeGenFileType::ObjectFile
                                                : llvm::CodeGenFileType::AssemblyFile);
  if (!code)
    return code.takeError();
  if (!diags.errors().empty())
    return fail(std::string(t.codegenName) + " code generation failed: " + diags.errors());
  out.stages.push_back({t.machine.name, t.machine.ext, std::move(*code)});
  if (job.toolPath.empty())
    return llvm::Error::success();
  auto image = runTool(job.toolPath, toolArgs(t.tool, arch), out.stages.back().bytes, t.tool.inName,
                       t.tool.outName);
  if (!image)
    return image.takeError();
  out.stages.push_back({t.tool.stage.name, t.tool.stage.ext, std::move(*image)});
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
