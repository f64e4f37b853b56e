// Internal to the OpenCL C codegen: the emitter that turns one kernel (with its device
// functions inlined) into OpenCL C text. Split over oc_kernel.cpp (structure, control flow,
// calls), oc_for.cpp (`for` loops), oc_scalar.cpp (arithmetic, compare, select, const),
// oc_convert.cpp (convert, bitcast, f16/bf16 rounding), oc_memory.cpp (loads, stores, atomics,
// faults, work-items, subgroups), oc_matrix.cpp (matrix ops) and oc_prelude.cpp (the helper
// functions).
//
// Every IR value becomes a local `vN` of its register type: i1 bool, i8 char, i16 short, i32
// int, i64 long, f16 / bf16 float (holding a value exact in the narrow type), f32 float, f64
// double; a matrix value a private array `T vN[R * C]` (row-major) of the one work-item that
// holds it (subgroup size 1). Never emits anything whose meaning depends on the device beyond
// what OpenCL C 1.2 defines.
#pragma once

#include "backends/opencl/codegen/opencl_codegen.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace tessera::opencl::detail {

/// A buffer or shared array as the kernel sees it: a typed pointer (storage type: f16 and
/// bf16 as ushort, i1 as uchar) and its element count.
struct MemRef {
  std::string ptr;   // "p0" (a __global pointer) or "v3" (a __local array)
  std::string count; // "n0" or the array's size as a literal
  std::string space; // "__global" or "__local"
  ir::Scalar elem = ir::Scalar::F32;
  uint32_t param = UINT32_MAX; // kernel parameter index; UINT32_MAX for shared arrays
  bool shared = false;
};

/// An affine bound num * L / 2^sh + b of an i32 value, L the work-group size in dimension
/// `dim` (num == 0: the constant b). See oc_range.cpp.
struct IndexBound {
  int64_t num = 0;
  int sh = 0;
  int64_t b = 0;
  int dim = 0;
};

/// Bounds that hold for every launch; an absent end is unbounded.
struct IndexRange {
  std::optional<IndexBound> lo, hi;
  bool nonNegative() const;
};

/// The ranges of the indices of a kernel's loads and stores (oc_range.cpp).
class RangeAnalysis {
public:
  void run(const ir::Block &kernelBody);
  /// The range of load / store `op`'s index, or of `for` op's start (its lower bound); null
  /// when the op was not analysed.
  const IndexRange *index(const ir::Op &op) const;

private:
  IndexRange of(const ir::Value *v) const;
  void set(const ir::Value *v, const IndexRange &r);
  IndexRange result(const ir::Op &op) const;
  void narrow(const ir::Value *cond, bool holds);
  void walk(const ir::Block &b);
  void walkIf(const ir::Op &op);
  void walkLoop(const ir::Op &op);
  std::map<const ir::Value *, IndexRange> env_;
  std::map<const ir::Op *, IndexRange> ranges_;
  int loopDepth_ = 0; // walkLoop nesting (oc_range.cpp bounds its re-walks by it)
};

class Emitter {
public:
  Emitter(const ir::Module &m, const OpenCLCompileOptions &opts) : module_(m), opts_(opts) {}

  /// Appends kernel `f` to the source; false with error() on failure.
  bool kernel(const ir::Function &f, OpenCLKernelInfo &info);
  /// The whole translation unit: pragmas, the helpers used, then the kernels.
  std::string finish() const;
  const std::string &error() const { return err_; }

  // ----- shared by the emitter files
  bool fail(const std::string &msg);
  void line(const std::string &s);
  std::string fresh(); // a new local name "vN"
  /// Emits `T vN = expr;` for `v` and binds it; returns the name.
  std::string def(const ir::Value *v, const std::string &expr);
  std::string val(const ir::Value *v); // the C name of a scalar value ("" + error if unbound)
  void need(const std::string &helper);
  std::string loc() const; // "L:C" of the current op
  uint32_t locLine() const;
  uint32_t locCol() const;

  static std::string regType(ir::Scalar s);
  static std::string storeType(ir::Scalar s);
  static std::string unsignedType(ir::Scalar s); // i8 -> uchar ...; i1 -> uchar
  static bool narrowFloat(ir::Scalar s) { return s == ir::Scalar::F16 || s == ir::Scalar::BF16; }
  /// `expr` (a float holding an f32-or-wider result) rounded once to f16 / bf16; unchanged for
  /// other types.
  std::string rounded(ir::Scalar t, const std::string &expr);
  std::string intLiteral(ir::Scalar t, uint64_t bits) const;
  std::string floatLiteral(ir::Scalar t, double x);
  /// `tsr_fault(control, kind, L, C, param, index, count);`
  std::string faultCall(const std::string &kind, uint32_t param, const std::string &index,
                        const std::string &count) const;
  bool checked() const { return opts_.bounds == TSR_BOUNDS_CHECKED; }
  bool bounded() const { return opts_.bounds != TSR_BOUNDS_UNCHECKED; }
  /// The work-group size in dimension `d` as C text: the constant of a sized compile, else
  /// the generic source's macro (opencl_abi.h, "Per-size programs").
  std::string localSize(int d) const;

  // ----- oc_scalar.cpp / oc_convert.cpp
  bool emitScalar(const ir::Op &op);
  bool emitConvert(const ir::Op &op);
  bool emitBitcast(const ir::Op &op);
  std::string convertExpr(const ir::Mods &m, ir::Scalar s, ir::Scalar d, const std::string &x);

  // ----- oc_memory.cpp
  bool emitLoad(const ir::Op &op);
  bool emitStore(const ir::Op &op);
  bool emitAtomic(const ir::Op &op);
  bool emitWorkItem(const ir::Op &op);
  bool emitSubgroup(const ir::Op &op);
  bool emitSharedAlloc(const ir::Op &op);
  MemRef *mem(const ir::Value *v);
  std::string loadElem(const MemRef &m, const std::string &idx);
  std::string storeElem(const MemRef &m, const std::string &idx, const std::string &v);
  /// A test that load / store `op`'s `index` is inside `m` for the whole launch (oc_range.cpp):
  /// "true" when that holds for every launch, "" when nothing is known.
  std::string inRangeTest(const ir::Op &op, const MemRef &m, const ir::Value *index);
  /// A lower bound >= 0 of i32 `for` op's start that holds for every work-item of the launch,
  /// as C text of a long (a literal, or an expression of the work-group size); "" when the
  /// index ranges give none (oc_range.cpp).
  std::string startLowerBound(const ir::Op &forOp) const;
  /// `h` for this compile: a constant in a sized compile (nullopt when that is not an i32).
  std::optional<IndexBound> forThisCompile(IndexBound h) const;
  /// C text (a long) of bound `h`: a literal, or floor(num * L / 2^sh) + b of localSize().
  std::string boundText(const IndexBound &h) const;
  RangeAnalysis ranges_;
  /// The statement that records an out-of-bounds fault of `m` at `idx` (checked mode).
  std::string boundsFault(const MemRef &m, const std::string &kind, const std::string &idx);

  // ----- oc_matrix.cpp
  bool emitMatrix(const ir::Op &op);
  std::string declareMatrix(const ir::Type &t, std::string *name);
  std::string copyMatrix(const ir::Type &t, const std::string &dst, const std::string &src);

  // ----- oc_kernel.cpp
  bool emitBlock(const ir::Block &b, std::vector<std::string> *yields);
  bool emitOp(const ir::Op &op);
  bool emitIf(const ir::Op &op);
  bool emitFor(const ir::Op &op); // oc_for.cpp
  /// The add ops of a `for` body that are emitted as non-wrapping C adds (see oc_for.cpp).
  std::set<const ir::Op *> nswAdds_;
  /// The loads and stores of a `for` body proved in range before the loop (oc_for.cpp).
  std::set<const ir::Op *> inRangeMem_;
  /// Emits the test that `for` loop `op`'s fast form may run (nothing overflows, the loads
  /// and stores in inRangeMem_ stay in range) into a new bool named in *fast; false when the
  /// loop has no fast form (oc_for.cpp).
  bool fastForGuard(const ir::Op &op, const std::string &iv, const std::string &ub,
                    const std::string &step, bool stepKnownPositive, std::string *fast);
  bool emitWhile(const ir::Op &op);
  bool emitCall(const ir::Op &op);
  void emitPoll(const std::string &counter);
  /// The poll of a loop around a barrier: the flag made workgroup-uniform through local
  /// memory every kPollInterval iterations; a cancel leaves the loop in every work-item.
  void emitUniformPoll(const std::string &counter);
  /// `if (cancelled) { record the deadline fault; leave }` (see emitPoll).
  void emitCancelExit();
  /// Declares the variable of a loop-carried / if value of type `t`; returns the name.
  std::string declareVar(const ir::Type &t, const std::string &init);
  void assignVars(const std::vector<std::string> &dst, const std::vector<std::string> &src,
                  const std::vector<ir::Type> &types);

  const ir::Module &module_;
  const OpenCLCompileOptions &opts_;
  std::string body_;
  int indent_ = 0;
  /// The deepest indent_ of the current kernel (see kMaxBlockNesting).
  int maxIndent_ = 0;
  /// Spaces before a line: two per level up to 32 levels (deeper code, calls inlined into
  /// nested ifs, would otherwise grow the source quadratically: 1.5 GB for 16000 levels).
  size_t padding() const { return size_t(std::min(indent_, 32)) * 2; }
  unsigned next_ = 0;
  std::map<const ir::Value *, std::string> vals_;
  std::map<const ir::Value *, MemRef> mems_;
  std::set<std::string> helpers_;
  const ir::Op *curOp_ = nullptr;
  std::string err_;
  uint64_t matrixBytes_ = 0;
  int callDepth_ = 0;
  /// The current kernel has a barrier: a cancelled work-item must not `return` from inside a
  /// loop (PoCL's work-group loops need every work-item to reach each barrier), so it sets
  /// `tsr_stop`, leaves its loops and runs the rest of the kernel with partial results.
  bool hasBarrier_ = false;
  /// The barrier sites emitted so far in the module: site k calls tsr_barrier_k (finish()).
  unsigned barrierSites_ = 0;
  /// A barrier at a site of its own (`tsr_barrier_k();` plus `comment`).
  void barrierSite(const std::string &comment = "");
  /// Whether `b` (or a function it calls) contains a barrier.
  bool containsBarrier(const ir::Block &b) const;

  // Barriers in divergent control flow (oc_kernel.cpp, emitVote): PoCL's work-group loops
  // assume every work-item reaches each barrier and crashed the process when only some did.
  /// The current kernel's control ops whose decision is workgroup-uniform by analysis.
  std::unordered_set<const ir::Op *> uniformDecisions_;
  /// Whether control op `op` contains a barrier and may decide differently per work-item.
  bool needsVote(const ir::Op &op) const;
  /// A new bool variable holding condition `cond` made workgroup-uniform: if the work-items
  /// disagree, records TSR_FAULT_DIVERGENT_BARRIER and holds false in every work-item.
  std::string emitVote(const std::string &cond);
};

/// The OpenCL C test for work-item (0, 0, 0) of the workgroup (votes and uniform polls).
constexpr const char *kFirstWorkItem =
    "get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0";
/// Iterations between two reads of the cancel flag in a loop.
constexpr unsigned kPollInterval = 1024;
/// The deepest block nesting of a kernel's OpenCL C: clang (PoCL's compiler) refuses more than
/// 256 nested brackets ("bracket nesting level exceeded"); a line's parentheses take a few.
constexpr int kMaxBlockNesting = 254;
/// The types of values vs[from..].
std::vector<ir::Type> typesOf(const std::vector<std::unique_ptr<ir::Value>> &vs, size_t from = 0);
inline bool isConst(const ir::Value *v) { return v->def && v->def->kind == ir::OpKind::Const; }
/// A constant `for` of at most this many iterations, with no loop inside, is not polled.
constexpr uint64_t kShortLoop = 4096;
/// The iterations of a `for` whose bounds and step are constants (its type's width, signed).
uint64_t constTripCount(const ir::Op &forOp);

/// The helper functions in the order they are emitted, each with the helpers it calls.
struct Helper {
  const char *name;
  const char *deps; // space-separated
  const char *text;
};
const std::vector<Helper> &helperTable();

} // namespace tessera::opencl::detail
