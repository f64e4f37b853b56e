// The GPU codegens' shared LLVM steps (see gpu_pipeline.h). Errors become llvm::Error here
// and strings in the backends' public APIs. Must stay deterministic: no timestamps, no
// random names in anything that reaches an output.
#include "backends/llvm/gpu_pipeline.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <algorithm>
#include <set>

namespace tessera::llvmgen {

namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

} // namespace

std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const std::string &triple, const std::string &cpu, const std::string &features,
                    unsigned optLevel, std::string &error, bool strict) {
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  auto level = optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                               : llvm::CodeGenOptLevel::None;
  llvm::TargetOptions to;
  if (strict)
    to.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    error = "cannot create a target machine for " + triple + " " + cpu;
  return tm;
}

void addStrictFunctionAttributes(llvm::Module &m) {
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("denormal-fp-math", "ieee,ieee");
    f.addFnAttr("denormal-fp-math-f32", "ieee,ieee");
  }
}

namespace {

struct CaptureHandler : llvm::DiagnosticHandler {
  explicit CaptureHandler(std::string &out) : out(out) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo &di) override {
    if (di.getSeverity() != llvm::DS_Error)
      return true;
    llvm::raw_string_ostream os(out);
    llvm::DiagnosticPrinterRawOStream printer(os);
    if (!out.empty())
      os << "; ";
    di.print(printer);
    return true;
  }
  std::string &out;
};

} // namespace

DiagnosticCapture::DiagnosticCapture(llvm::LLVMContext &ctx)
    : ctx_(ctx), previous_(ctx.getDiagnosticHandler()) {
  ctx.setDiagnosticHandler(std::make_unique<CaptureHandler>(errors_));
}

DiagnosticCapture::~DiagnosticCapture() { ctx_.setDiagnosticHandler(std::move(previous_)); }

std::string printModule(const llvm::Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

llvm::Error verifyLowered(const llvm::Module &m) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(m, &os))
    return fail("internal error: invalid LLVM IR from the lowering: " + msg);
  return llvm::Error::success();
}

std::vector<std::string> undefinedFunctions(const llvm::Module &m, llvm::StringRef prefix) {
  std::vector<std::string> names;
  for (const llvm::Function &f : m)
    if (f.isDeclaration() && !f.isIntrinsic() && f.getName().starts_with(prefix))
      names.push_back(f.getName().str());
  std::sort(names.begin(), names.end());
  return names;
}

llvm::Error linkBitcodeFile(llvm::Module &dst, const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail("cannot read " + path + ": " + buf.getError().message());
  auto lib = llvm::getOwningLazyBitcodeModule(std::move(*buf), dst.getContext());
  if (!lib)
    return fail("cannot read bitcode " + path + ": " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(dst.getTargetTriple());
  (*lib)->setDataLayout(dst.getDataLayout());
  DiagnosticCapture diags(dst.getContext());
  if (llvm::Linker::linkModules(dst, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return fail("cannot link " + path + ": " + diags.errors());
  return llvm::Error::success();
}

void internalizeExcept(llvm::Module &m, const std::vector<LoweredKernel> &kernels) {
  std::set<std::string, std::less<>> keep;
  for (const LoweredKernel &k : kernels)
    keep.insert(k.symbol);
  llvm::internalizeModule(
      m, [&](const llvm::GlobalValue &gv) { return keep.count(gv.getName()) != 0; });
}

void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm, unsigned level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel ol = level >= 3   ? llvm::OptimizationLevel::O3
                               : level == 2 ? llvm::OptimizationLevel::O2
                               : level == 1 ? llvm::OptimizationLevel::O1
                                            : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm =
      level == 0 ? pb.buildO0DefaultPipeline(ol) : pb.buildPerModuleDefaultPipeline(ol);
  mpm.run(m, mam);
}

llvm::Expected<std::string> emitMachineCode(llvm::Module &m, llvm::TargetMachine &tm,
                                            llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return fail("the target machine cannot emit this file type");
  pm.run(m);
  return std::string(bytes.begin(), bytes.end());
}

std::string findTool(const std::vector<std::string> &candidates) {
  for (const std::string &c : candidates) {
    if (c.find('/') != std::string::npos) {
      if (llvm::sys::fs::can_execute(c))
        return c;
      continue;
    }
    if (auto p = llvm::sys::findProgramByName(c))
      return *p;
  }
  return {};
}

namespace {

/// Removes a temporary directory and what it holds when it goes out of scope.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty()) // best effort: a leftover temporary directory is harmless
      (void)llvm::sys::fs::remove_directories(path);
  }
  std::string file(const std::string &name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
};

std::string readTail(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return {};
  std::string s = (*buf)->getBuffer().str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

} // namespace

llvm::Expected<std::string> runTool(const std::string &tool, const std::vector<std::string> &args,
                                    llvm::StringRef input, const std::string &inName,
                                    const std::string &outName) {
  TempDir dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("tessera", dir.path))
    return fail("cannot create a temporary directory: " + ec.message());
  std::string in = dir.file(inName), out = dir.file(outName), log = dir.file("log.txt");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return fail("cannot write " + in + ": " + ec.message());
    os << input;
  }
  std::vector<std::string> argv = {tool};
  for (const std::string &a : args)
    argv.push_back(a == "{in}" ? in : a == "{out}" ? out : a);
  std::vector<llvm::StringRef> refs(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(tool, refs, std::nullopt, redirects, 0, 0, &errMsg);
  if (rc < 0)
    return fail("cannot run " + tool + ": " + errMsg);
  if (rc != 0)
    return fail(llvm::sys::path::filename(tool).str() + " failed (exit status " +
                std::to_string(rc) + "): " + readTail(log));
  auto buf = llvm::MemoryBuffer::getFile(out, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(tool + " wrote no output: " + buf.getError().message());
  return (*buf)->getBuffer().str();
}

} // namespace tessera::llvmgen
