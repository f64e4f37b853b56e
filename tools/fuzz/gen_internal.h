// Internal state of the kernel generator, shared by kernel_gen.cpp (kernel structure,
// statements, memory, control flow) and value_gen.cpp (scalar ops and the taint rules).
// Not a public interface: only tools/fuzz includes it.
#pragma once

#include "ir/core/builder.h"
#include "tools/fuzz/kernel_gen.h"

#include <vector>

namespace tessera::fuzz::detail {

/// A value the generator may use, with what it knows about it.
struct GV {
  ir::Value *v = nullptr;
  /// Every correct device computes exactly the interpreter's bits (up to NaN payloads).
  /// False for results of approximate ops (exp, div, pow, ...): those may
  /// only flow, unamplified, to a store (neg, abs, min, max, select, narrowing converts).
  bool exact = true;
  /// A float whose NaN bits (sign included) are fixed by the program: loads, constants,
  /// conversions from ints. Arithmetic NaNs have an unspecified sign (x86 returns -NaN), so
  /// only these may feed copysign's sign operand or a float -> int bitcast.
  bool nanSafe = true;
};

struct FuncSig {
  ir::Function *f = nullptr;
  std::vector<ir::Scalar> params;
  ir::Scalar result = ir::Scalar::I32;
  bool resultExact = true;
};

struct InBuf {
  ir::Value *buf;
  ir::Scalar t;
  int64_t len; // a power of two: indices are masked with len - 1
};

struct OutBuf {
  ir::Value *buf;
  ir::Scalar t;
};

/// A buffer or shared array that only atomics touch, all with one kind (and for xchg / cas
/// one pair of constants), so its final value is independent of the work-items' order.
struct AccMem {
  ir::Value *mem = nullptr;
  ir::Scalar t = ir::Scalar::I32;
  ir::OpKind kind = ir::OpKind::AtomicAdd;
  bool isUnsigned = false;
  int64_t c1 = 0, c2 = 0; // xchg: c1; cas: expected c1, desired c2
  int64_t len = 16;       // a power of two
};

class Gen {
public:
  Gen(const GenOptions &o, ir::Module &m) : rng(o.seed), o(o), m(m), opsLeft(o.maxOps) {}

  // --- value_gen.cpp: scalar values
  bool hasType(ir::Scalar t) const;
  bool excluded(ir::OpKind k, ir::Scalar t) const;
  ir::Scalar randType();
  ir::Scalar randIntType(bool withBool);
  ir::Scalar randFloatType();
  /// A visible value of type t (exact ones only if needExact), or a fresh constant.
  GV pick(ir::Builder &b, ir::Scalar t, bool needExact);
  GV constant(ir::Builder &b, ir::Scalar t);
  /// Emits one op (plus its operand fix-ups) producing a value of type t and records it.
  GV genValue(ir::Builder &b, ir::Scalar t);
  /// An i32 index in [0, len) (len a power of two) derived from some visible integer.
  ir::Value *indexInto(ir::Builder &b, int64_t len);
  void push(const GV &g) { scopes.back().push_back(g); }

  // --- kernel_gen.cpp: structure
  void buildModule();
  void genBlock(ir::Builder &b, int depth, int count);
  void genStmt(ir::Builder &b, int depth);
  // --- control_gen.cpp: structured control flow
  void genIf(ir::Builder &b, int depth);
  void genFor(ir::Builder &b, int depth);
  void genWhile(ir::Builder &b, int depth);
  void genUniformBarrierLoop(ir::Builder &b, uint32_t wgLinear);
  std::vector<ir::Value *> carriedInits(ir::Builder &b, std::vector<GV> &inits);
  /// Element `slot` of this work-item's block of kSlots in every output buffer.
  ir::Value *slotIndex(ir::Builder &b, uint64_t slot);
  void observe(ir::Builder &b);

  static constexpr uint64_t kSlots = 4; // output elements per work-item and output buffer

  Rng rng;
  GenOptions o;
  ir::Module &m;
  std::vector<std::vector<GV>> scopes;
  int opsLeft;
  bool inKernel = false; // false while generating a device function
  std::vector<FuncSig> funcs;
  std::vector<InBuf> ins;
  std::vector<OutBuf> outs;
  std::vector<AccMem> accs;       // global accumulators
  std::vector<AccMem> sharedAccs; // workgroup-shared accumulators
  ir::Value *gid = nullptr;       // linear global id (i32)
  ir::Value *lid = nullptr;       // linear local id (i32)
  ir::Value *lsize = nullptr;     // linear workgroup size (i32)
  ir::Value *slotBase = nullptr;  // gid * kSlots

private:
  GV genFloat(ir::Builder &b, ir::Scalar t);
  GV genInt(ir::Builder &b, ir::Scalar t);
  GV genBool(ir::Builder &b);
  GV genConvert(ir::Builder &b, ir::Scalar t);
  ir::Value *safeDivisor(ir::Builder &b, ir::Value *d, bool isUnsigned);
};

} // namespace tessera::fuzz::detail
