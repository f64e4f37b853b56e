// The CPU compile pipeline as named stages: kir -> llvm -> llvm.opt -> obj.
//
// Lowering (backends/llvm) with the CPU math hooks, the O3 pipeline with the host target
// machine (-march=native), then object emission. LLVM errors are converted to our error
// strings here, at the edge. Must never depend on the CPU runtime or the HAL, and must stay
// deterministic (no pointer-keyed iteration into output, no timestamps).
#include "backends/cpu/codegen/cpu_codegen_impl.h"
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/stage_files.h"
#include "ir/core/hash.h"
#include "ir/text/printer.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Scalar/InductiveRangeCheckElimination.h>

#include <mutex>
#include <unordered_map>

namespace tessera::cpu {

// The shared lowering reads these context fields at fixed offsets (it may not include the
// CPU ABI header); the two must agree.
static_assert(offsetof(TsrCpuWgCtx, shared_memory) == llvmgen::kCtxSharedMemoryOffset);
static_assert(offsetof(TsrCpuWgCtx, arg_bytes) == llvmgen::kCtxArgBytesOffset);
static_assert(offsetof(TsrCpuWgCtx, fault) == llvmgen::kCtxFaultOffset);
static_assert(offsetof(TsrCpuWgCtx, cancel) == llvmgen::kCtxCancelOffset);

// Likewise the matrix tiles the lowering allocates and the codes it passes in tsr_mx_shape.
constexpr bool tileBytesAgree() {
  for (ir::Scalar e :
       {ir::Scalar::I8, ir::Scalar::I32, ir::Scalar::F16, ir::Scalar::BF16, ir::Scalar::F32})
    for (int rows : {8, 16, 32, 64, 128})
      for (int cols : {8, 16, 32, 64, 128})
        for (ir::MatrixUse u : {ir::MatrixUse::A, ir::MatrixUse::B, ir::MatrixUse::Acc})
          if (int64_t(llvmgen::matrixTileBytes(e, rows, cols, u)) !=
              tsr_mx_tile_bytes(uint8_t(e), rows, cols, uint8_t(u)))
            return false;
  return true;
}
static_assert(tileBytesAgree(), "llvmgen::matrixTileBytes must equal tsr_mx_tile_bytes");
static_assert(TSR_MX_I8 == int(ir::Scalar::I8) && TSR_MX_I32 == int(ir::Scalar::I32) &&
              TSR_MX_F16 == int(ir::Scalar::F16) && TSR_MX_BF16 == int(ir::Scalar::BF16) &&
              TSR_MX_F32 == int(ir::Scalar::F32));
static_assert(TSR_MX_USE_A == int(ir::MatrixUse::A) && TSR_MX_USE_B == int(ir::MatrixUse::B) &&
              TSR_MX_USE_ACC == int(ir::MatrixUse::Acc));

uint64_t CpuCompileOptions::hash() const {
  // The fields in declaration order, after the layout version of this struct.
  return Fnv1a()
      .num(2)
      .num(subgroupSize)
      .num(optLevel)
      .num(hostCpu)
      .num(vectorMath)
      .num(uint32_t(bounds))
      .num(strict ? 0x5354524943540001ull : 0) // "STRICT" 1; 0 keeps the old keys' shape
      .value();
}

CpuCompiledModule::CpuCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuCompiledModule::~CpuCompiledModule() = default;
const std::vector<uint8_t> &CpuCompiledModule::objectBytes() const { return impl_->object; }
const std::vector<CpuKernelInfo> &CpuCompiledModule::kernels() const { return impl_->kernels; }

const std::string &CpuCompiledModule::dump(std::string_view stage) const {
  static const std::string empty;
  auto it = impl_->dumps.find(stage);
  return it == impl_->dumps.end() ? empty : it->second;
}

const std::vector<std::string> &CpuCompiledModule::stageNames() {
  static const std::vector<std::string> names = {"kir", "llvm", "llvm.opt", "obj"};
  return names;
}

std::unique_ptr<CpuCompiledModule>
CpuCompiledModule::fromObject(std::vector<uint8_t> object, std::vector<CpuKernelInfo> kernels) {
  auto impl = std::make_unique<Impl>();
  impl->object = std::move(object);
  impl->kernels = std::move(kernels);
  return std::make_unique<CpuCompiledModule>(std::move(impl));
}

bool CpuCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  const auto &obj = impl_->object;
  return writeStageFiles(dir,
                         {{"0-kir.tir", dump("kir")},
                          {"1-llvm.ll", dump("llvm")},
                          {"2-llvm.opt.ll", dump("llvm.opt")},
                          {"3-obj.o", {reinterpret_cast<const char *>(obj.data()), obj.size()}}},
                         error);
}

bool CpuCompiledModule::load(std::string *error) {
  std::string err;
  if (impl_->jit)
    return true;
  initNativeTarget();
  if (jitLoad(*impl_, err))
    return true;
  if (error)
    *error = err;
  return false;
}

TsrCpuWgFn CpuCompiledModule::lookup(std::string_view kernel) const {
  auto it = impl_->fns.find(kernel);
  return it == impl_->fns.end() ? nullptr : it->second;
}

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

namespace {
struct CpuTarget {
  std::string triple, cpu, features;
};

// Triple, CPU and features (sorted: deterministic) for `opts`.
CpuTarget cpuTarget(const CpuCompileOptions &opts) {
  CpuTarget t{llvm::sys::getProcessTriple(), "x86-64", ""};
  if (!opts.hostCpu)
    return t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> sorted;
  for (auto &kv : host)
    sorted.push_back((kv.second ? "+" : "-") + kv.first().str());
  std::sort(sorted.begin(), sorted.end());
  for (auto &f : sorted)
    t.features += (t.features.empty() ? "" : ",") + f;
  return t;
}
} // namespace

std::string targetDescription(const CpuCompileOptions &opts) {
  CpuTarget t = cpuTarget(opts);
  return t.triple + " cpu=" + t.cpu + " features=" + t.features;
}

std::unique_ptr<llvm::TargetMachine> createCpuTargetMachine(const CpuCompileOptions &opts,
                                                            std::string &error) {
  initNativeTarget();
  CpuTarget t = cpuTarget(opts);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions to;
  if (opts.strict) // no fmul + fadd fused into one rounding, whatever flags a pass adds
    to.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  auto level = opts.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : opts.optLevel == 2 ? llvm::CodeGenOptLevel::Default
               : opts.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                    : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.cpu, t.features, to, llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
  if (!tm)
    error = "cannot create a target machine for " + t.triple;
  return tm;
}

namespace {

std::string printLlvm(const llvm::Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

// The new pass manager's four analysis managers, registered with `pb` and cross-wired (what
// both the O3 pipeline and the quick tier's function passes run with).
struct AnalysisManagers {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  explicit AnalysisManagers(llvm::PassBuilder &pb) {
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
  }
};

// LLVM's inductive range check elimination on the kernels lowered as one run
// (llvmgen::kSingleRunAttr), where it splits each lane loop around its robust bounds checks;
// other functions are left alone.
struct SingleRunRangeChecks : llvm::PassInfoMixin<SingleRunRangeChecks> {
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &am) {
    if (!f.hasFnAttribute(llvmgen::kSingleRunAttr))
      return llvm::PreservedAnalyses::all();
    return llvm::IRCEPass().run(f, am);
  }
};

void optimize(llvm::Module &m, llvm::TargetMachine &tm, unsigned level) {
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = level >= 2;
  pto.SLPVectorization = level >= 2;
  // Functions marked optnone (the quick tier's) are skipped by every optional pass: the new
  // pass manager leaves that to an instrumentation callback (clang's OptNoneInstrumentation).
  llvm::PassInstrumentationCallbacks pic;
  pic.registerShouldRunOptionalPassCallback([](llvm::StringRef, llvm::Any ir) {
    const llvm::Function *f = nullptr;
    if (const llvm::Function **pf = llvm::any_cast<const llvm::Function *>(&ir))
      f = *pf;
    else if (const llvm::Loop **pl = llvm::any_cast<const llvm::Loop *>(&ir))
      f = (*pl)->getHeader()->getParent();
    return !(f && f->hasOptNone());
  });
  llvm::PassBuilder pb(&tm, pto, std::nullopt, &pic);
  // At the end of function simplification: the lane loops are rotated by then, and the loop
  // passes and the vectoriser that follow clean up and widen the unchecked main loop.
  if (level >= 2)
    pb.registerScalarOptimizerLateEPCallback(
        [](llvm::FunctionPassManager &fpm, llvm::OptimizationLevel) {
          fpm.addPass(SingleRunRangeChecks());
        });
  AnalysisManagers am(pb);
  llvm::OptimizationLevel ol = level >= 3   ? llvm::OptimizationLevel::O3
                               : level == 2 ? llvm::OptimizationLevel::O2
                               : level == 1 ? llvm::OptimizationLevel::O1
                                            : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm =
      level == 0 ? pb.buildO0DefaultPipeline(ol) : pb.buildPerModuleDefaultPipeline(ol);
  mpm.run(m, am.mam);
}

// Whether `f` calls a function with a libmvec vector variant (CpuMathHooks marks those call
// sites): the O3 vectoriser replaces such a call with the variant, which rounds differently
// from the scalar function, so only the full pipeline computes the full tier's bits.
bool callsVectorVariant(const llvm::Function &f) {
  for (const llvm::BasicBlock &bb : f)
    for (const llvm::Instruction &i : bb)
      if (const auto *call = llvm::dyn_cast<llvm::CallBase>(&i))
        if (call->hasFnAttr("vector-function-abi-variant"))
          return true;
  return false;
}

// The quick tier (CpuCompileOptions::optLevel == kQuickTier; docs/performance.md, "Cold
// compile"). A kernel without vectorisable math calls gets SROA, early CSE, instcombine and
// CFG simplification (none of them changes a floating-point result without fast-math flags,
// which the lowering never sets) and is then marked optnone, so that the O3 pipeline and the
// code generator's instruction selection skip it (fast isel): most of the compile time of a
// module, and none of its bits. Every other function keeps the full O3 pipeline. A helper
// (tsr.fault.record, a math wrapper) is treated alike: not being inlined into an O3 caller
// changes no result. Returns whether any function still needs O3.
bool quickTierPasses(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::PassBuilder pb(&tm);
  AnalysisManagers am(pb);
  llvm::FunctionPassManager fpm;
  if (llvm::Error e =
          pb.parsePassPipeline(fpm, "sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg"))
    llvm::report_fatal_error(std::move(e)); // a constant pipeline: a typo is a build bug
  bool needFull = false;
  for (llvm::Function &f : m) {
    if (f.isDeclaration() || f.hasOptNone()) // optnone already: a deep loop nest
      continue;
    if (callsVectorVariant(f)) {
      needFull = true;
      continue;
    }
    fpm.run(f, am.fam);
    f.addFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::NoInline);
  }
  return needFull;
}

// What `walk` gives for the body of the function call `op` calls (0 for an unknown callee),
// memoised per function, so that a chain of functions calling the next twice is not walked
// 2^n times.
template <typename T, typename Walk>
T calleeValue(const ir::Module &m, const ir::Op &op,
              std::unordered_map<const ir::Function *, T> &memo, Walk &&walk) {
  const ir::Function *f = m.lookup(op.callee);
  if (!f)
    return 0;
  auto it = memo.find(f);
  if (it == memo.end()) {
    memo[f] = 0; // the verifier refuses recursion; a cycle must not loop here anyway
    it = memo.insert_or_assign(f, walk(*f->body)).first;
  }
  return it->second;
}

// Loops (for, while) nested in `b` along its deepest chain; a call adds its callee's.
int loopDepth(const ir::Module &m, const ir::Block &b,
              std::unordered_map<const ir::Function *, int> &memo) {
  int deepest = 0;
  for (const auto &op : b.ops) {
    int d = 0;
    if (op->kind == ir::OpKind::Call)
      d = calleeValue(m, *op, memo,
                      [&](const ir::Block &body) { return loopDepth(m, body, memo); });
    for (const auto &r : op->regions)
      d = std::max(d, loopDepth(m, *r, memo));
    if (op->kind == ir::OpKind::For || op->kind == ir::OpKind::While)
      ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

// Memory accesses (loads, stores, atomics, matrix loads and stores) in `b`, loops counted once
// and a call as its callee's count (saturating): the code a bounds mode guards, one branch and
// fault record per access.
int64_t accessCount(const ir::Module &m, const ir::Block &b,
                    std::unordered_map<const ir::Function *, int64_t> &memo) {
  constexpr int64_t kSaturate = int64_t(1) << 40;
  int64_t n = 0;
  for (const auto &op : b.ops) {
    switch (op->info().form) {
    case ir::OpForm::Load:
    case ir::OpForm::Store:
    case ir::OpForm::Atomic:
    case ir::OpForm::AtomicCas:
    case ir::OpForm::MatrixLoad:
    case ir::OpForm::MatrixStore:
      ++n;
      break;
    case ir::OpForm::Call:
      n += calleeValue(m, *op, memo,
                       [&](const ir::Block &body) { return accessCount(m, body, memo); });
      break;
    default:
      break;
    }
    for (const auto &r : op->regions)
      n += accessCount(m, *r, memo);
    n = std::min(n, kSaturate);
  }
  return n;
}

// Kernels with more guarded accesses than this (robust or checked bounds) skip LLVM's IR
// optimisations too: each access is a diamond with its fault path, and O3's passes on
// thousands of them grow much faster than linearly (adversarial round 9: 4000 stores of a
// constant, 8001 ops, within the size limits: robust 12.6 s and 2.2 GB, checked 49 s;
// unchecked 0.4 s). Real kernels have a few dozen accesses; unrolled ones a few hundred.
constexpr int64_t kMaxOptimizedGuardedAccesses = 1024;

// Kernels with more nested loops than this skip LLVM's IR optimisations (in both tiers, so their
// bits do not change between them) and get the fast instruction selector: O3's loop passes
// take time about the fourth power of the depth on the lowered nests (measured: 100 nested
// `for`s 4 s, 140 18 s, 255 385 s, where docs/ir.md promises under 20 s for any valid
// kernel). Real kernels nest a handful of loops.
constexpr int kMaxOptimizedLoopDepth = 32;

} // namespace

std::unique_ptr<CpuCompiledModule>
compileKernelModule(const ir::Module &m, const CpuCompileOptions &opts, std::string *error) {
  auto fail = [&](std::string msg) -> std::unique_ptr<CpuCompiledModule> {
    if (error)
      *error = std::move(msg);
    return nullptr;
  };
  if (opts.subgroupSize == 0 || opts.subgroupSize > 1024)
    return fail("subgroup size must be in 1..1024, got " + std::to_string(opts.subgroupSize));
  std::string err;
  std::unique_ptr<llvm::TargetMachine> tm = createCpuTargetMachine(opts, err);
  if (!tm)
    return fail(err);
  auto impl = std::make_unique<CpuCompiledModule::Impl>();
  if (opts.keepDumps)
    impl->dumps["kir"] = ir::printModule(m);
  // Transcendental ops the CPU has no library call for become basic ops (on a copy: `m` is
  // the caller's).
  ir::Module lm = ir::cloneModule(m);
  // x86-64 with FMA (every -march this JIT targets has it): polynomial steps fuse, except
  // under strict, where every target computes the same bits.
  ir::decomposeMath(lm, {nativeMath(opts), /*int64=*/true, /*fusedFma=*/!opts.strict});
  if (std::string why = opts.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  llvm::LLVMContext ctx;
  auto mod = std::make_unique<llvm::Module>(m.filename.empty() ? "tessera" : m.filename, ctx);
  mod->setTargetTriple(tm->getTargetTriple().str());
  mod->setDataLayout(tm->createDataLayout());
  CpuMathHooks hooks(*mod, *tm, opts.vectorMath);
  llvmgen::LoweringConfig cfg;
  cfg.subgroupSize = opts.subgroupSize;
  cfg.bounds = opts.bounds;
  cfg.symbolPrefix = TSR_CPU_WG_SYMBOL_PREFIX;
  cfg.hooks = &hooks;
  std::vector<llvmgen::LoweredKernel> lowered;
  if (llvm::Error e = llvmgen::lowerModule(lm, *mod, cfg, lowered))
    return fail(llvm::toString(std::move(e)));
  std::string cpu = tm->getTargetCPU().str(), features = tm->getTargetFeatureString().str();
  bool avx512 = tm->getMCSubtargetInfo()->checkFeatures("+avx512f");
  for (llvm::Function &f : *mod) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", cpu);
    if (!features.empty())
      f.addFnAttr("target-features", features);
    if (avx512) // the elementwise fast path wants full 512-bit vectors
      f.addFnAttr("prefer-vector-width", "512");
  }
  std::unordered_map<const ir::Function *, int> depthMemo;
  std::unordered_map<const ir::Function *, int64_t> accessMemo;
  bool allUnoptimised = !lowered.empty();
  for (const llvmgen::LoweredKernel &k : lowered) {
    const ir::Function *f = lm.lookup(k.name);
    llvm::Function *lf = mod->getFunction(k.symbol);
    if (f && lf &&
        (loopDepth(lm, *f->body, depthMemo) > kMaxOptimizedLoopDepth ||
         (opts.bounds != TSR_BOUNDS_UNCHECKED &&
          accessCount(lm, *f->body, accessMemo) > kMaxOptimizedGuardedAccesses))) {
      lf->addFnAttr(llvm::Attribute::OptimizeNone);
      lf->addFnAttr(llvm::Attribute::NoInline);
    } else {
      allUnoptimised = false;
    }
  }
  if (opts.keepDumps)
    impl->dumps["llvm"] = printLlvm(*mod);
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(*mod, &vos))
    return fail("internal error: invalid LLVM IR from the lowering: " + verr);
  if (opts.optLevel != kQuickTier) {
    optimize(*mod, *tm, opts.optLevel);
  } else {
    // The kernels with vectorisable math calls get O3's IR pipeline (so the vectoriser picks
    // the same width, interleave and libmvec variants, hence the same bits), then the whole
    // module goes through the code generator at its cheapest level: instruction selection and
    // register allocation never change a floating-point result (no fast-math flags; fmuladd
    // is never emitted; contraction is decided by TargetOptions, the same at every level), and
    // on the vectorised IR of the math kernels the O3 code generator cost as much as their
    // IR pipeline (docs/performance.md, "Cold compile").
    if (quickTierPasses(*mod, *tm))
      optimize(*mod, *tm, 3);
    tm->setOptLevel(llvm::CodeGenOptLevel::None);
  }
  // A module of such kernels only: the cheapest code generator too (its machine passes at O3
  // cleared kill flags per use of a value read by every guarded access: 8000 checked stores
  // took 14 s in codegen alone). The bits are the same at every level (see above).
  if (allUnoptimised)
    tm->setOptLevel(llvm::CodeGenOptLevel::None);
  if (opts.keepDumps)
    impl->dumps["llvm.opt"] = printLlvm(*mod);
  llvm::SmallVector<char, 0> obj;
  llvm::raw_svector_ostream os(obj);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return fail("the target machine cannot emit an object file");
  pm.run(*mod);
  impl->object.assign(obj.begin(), obj.end());
  for (auto &k : lowered)
    impl->kernels.push_back({k.name, k.symbol, k.params, k.sharedBytes, opts.subgroupSize});
  return std::make_unique<CpuCompiledModule>(std::move(impl));
}

} // namespace tessera::cpu
