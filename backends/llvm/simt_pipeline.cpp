// The SIMT GPU compile pipeline (see simt_pipeline.h). Every step is a gpu_pipeline.h
// function; this file only orders them and reads the target's description. Must stay
// deterministic (no timestamps or random names in anything that reaches a stage), and must
// never test which target it compiles for: a difference between targets is a field.
#include "backends/llvm/simt_pipeline.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"

#include "backends/llvm/gpu_pipeline.h"
#include "backends/stage_files.h"
#include "ir/text/printer.h"

#include <llvm/Support/FileSystem.h>

#include <cstdlib>

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

/// The candidates of a search with "{root}" filled in.
std::vector<std::string> candidates(const SimtSearch &search) {
  std::string root = search.defaultRoot;
  for (const char *var : search.rootEnv)
    if (const char *v = std::getenv(var); v && *v) {
      root = v;
      break;
    }
  std::vector<std::string> paths = search.candidates;
  for (std::string &p : paths)
    if (size_t at = p.find("{root}"); at != std::string::npos)
      p.replace(at, 6, root);
  return paths;
}

/// The module flags of the library, then the library itself when the module calls it: the
/// caller's file or folder, else the folder the search finds; its files, then the arch's
/// and the common controls that exist.
llvm::Error linkDeviceLibrary(const SimtTarget &t, const SimtJob &job, llvm::Module &mod) {
  const SimtDeviceLibrary &lib = t.library;
  for (const SimtModuleFlag &f : lib.flags)
    mod.addModuleFlag(llvm::Module::Override, f.key, f.value);
  std::vector<std::string> needed = undefinedFunctions(mod, lib.prefix);
  if (needed.empty())
    return llvm::Error::success();
  if (!job.libraryFile.empty())
    return linkBitcodeFile(mod, job.libraryFile);
  std::string dir = job.libraryDir.empty() ? findSimtLibraryDir(t) : job.libraryDir;
  if (dir.empty())
    return fail(std::string(lib.notFound) + "; needed for " + needed.front());
  for (const std::string &f : lib.files)
    if (llvm::Error e = linkBitcodeFile(mod, dir + "/" + f))
      return e;
  std::vector<std::string> controls = job.arch->libraryFiles;
  controls.insert(controls.end(), lib.controls.begin(), lib.controls.end());
  for (const std::string &f : controls) {
    std::string path = dir + "/" + f;
    if (!llvm::sys::fs::exists(path))
      continue;
    if (llvm::Error e = linkBitcodeFile(mod, path))
      return e;
  }
  if (!lib.afterLink)
    return llvm::Error::success();
  return lib.afterLink(mod, *job.arch, dir);
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

std::string findSimtLibraryDir(const SimtTarget &t) {
  for (const std::string &dir : candidates(t.library.folders))
    if (llvm::sys::fs::exists(dir + "/" + t.library.files.front()))
      return dir;
  return {};
}

std::string findSimtTool(const SimtTarget &t) { return findTool(candidates(t.tool.search)); }

llvm::Error compileSimt(const SimtTarget &t, const ir::Module &m, const SimtJob &job,
                        SimtOutput &out) {
  const SimtArch &arch = *job.arch;
  std::string tool;
  if (job.runTool)
    tool = job.toolPath.empty() ? findSimtTool(t) : job.toolPath;
  if (tool.empty() && t.tool.notFound) // the image is the output: no tool, no compile
    return fail(t.tool.notFound);
  t.initialize();
  std::string err;
  auto tm = createTargetMachine(t.triple, arch.name, arch.features, job.optLevel, err, job.strict);
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
  SimtConfig cfg{arch.subgroupSize, t.loweringName, hooks.get(), job.matrixInstructions};
  // What the device library lacks becomes basic ops (on a copy: `m` is the caller's).
  ir::Module lm = ir::cloneModule(m);
  ir::decomposeMath(lm, job.math);
  if (std::string why = job.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  if (llvm::Error e = lowerModuleSimt(lm, *mod, cfg, out.kernels))
    return e;
  if (job.strict)
    addStrictFunctionAttributes(*mod);
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
  if (tool.empty())
    return llvm::Error::success();
  auto image =
      runTool(tool, toolArgs(t.tool, arch), out.stages.back().bytes, t.tool.inName, t.tool.outName);
  if (!image)
    return image.takeError();
  out.stages.push_back({t.tool.stage.name, t.tool.stage.ext, std::move(*image)});
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
