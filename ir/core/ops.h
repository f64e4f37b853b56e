// Op kinds and their static properties, generated from ops.def (the single op table).
//
// Everything that needs to know "what is op X" (syntax family, allowed types, purity,
// precision budget) asks here. Never duplicate a property of an op elsewhere.
#pragma once

#include "ir/core/types.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tessera::ir {

enum class OpKind : uint16_t {
#define OP(Enum, ...) Enum,
#include "ir/core/ops.def"
#undef OP
};

/// Syntax and typing family of an op.
enum class OpForm : uint8_t {
  Unary,          // %r = op %a : T                      T -> T
  Binary,         // %r = op %a, %b : T                  T, T -> T
  Ternary,        // %r = op %a, %b, %c : T              T, T, T -> T
  Predicate,      // %r = op %a : T                      T -> i1
  Compare,        // %r = cmp.PRED %a, %b : T            T, T -> i1
  Select,         // %r = select %c, %a, %b : T          i1, T, T -> T
  Convert,        // %r = convert[.u][.sat][.rXX] %a : S -> D
  Bitcast,        // %r = bitcast %a : S -> D            same bit width
  Const,          // %r = const LITERAL : T
  WorkItem,       // %r = global_id.x : i32              (integer result)
  Load,           // %r = load %mem[%i] : T
  Store,          // store %v, %mem[%i] : T
  SharedAlloc,    // %r = shared_alloc : shared<T, N>
  Atomic,         // %old = atomic_add %mem[%i], %v : T
  AtomicCas,      // %old = atomic_cas %mem[%i], %cmp, %new : T
  Barrier,        // barrier
  SubgroupReduce, // %r = subgroup_add %v : T
  Shuffle,        // %r = shuffle %v, %lane : T          (lane: i32)
  For,            // %r... = for %i = %lb to %ub step %s iter(%a = %x : T, ...) : I { ... }
  If,             // %r... = if %c -> (T, ...) { ... } else { ... }
  While,          // %r... = while iter(%a = %x : T, ...) { ... condition %c } do { ... }
  Terminator,     // yield %v... | condition %c | return [%v...]
  Call,           // %r... = call @f(%a, ...) : (T, ...) -> (R, ...)
  // Subgroup-scope matrices (docs/ir.md "Matrix ops"); M = matrix<T, R, C, U>.
  MatrixLoad,  // %m = matrix_load[.col] %A[%off] stride %ld [bounds %r, %c] : M
  MatrixStore, // matrix_store[.col] %m, %A[%off] stride %ld [bounds %r, %c] : M
  MatrixFill,  // %m = matrix_fill %v : M
  MatrixMad,   // %d = matrix_mad %a, %b, %c : Ma, Mb, Mc          (result: Mc)
  MatrixMap,   // %r = matrix_map(%x = %m, ...) -> M { ... yield %v }
};

/// Which scalar types an op's value operands may have.
enum class TypeClass : uint8_t { Any, Int, Float, Number /* int or float, not i1 */ };

/// Modifier families an op accepts after its mnemonic (`div.u`, `cmp.olt`, `global_id.y`).
enum class ModSet : uint8_t { None, Sign, Pred, Conv, Dim, Layout };

enum class CmpPred : uint8_t {
  // integers
  Eq, Ne, Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge,
  // floats: ordered (false if either is NaN) and unordered (true if either is NaN)
  Oeq, One, Olt, Ole, Ogt, Oge, Ord, Ueq, Une, FUlt, FUle, FUgt, FUge, Uno,
};

/// Rounding mode of a conversion. Default: rte, except float -> int which defaults to rtz.
enum class Round : uint8_t { Default, Rte, Rtz, Rtp, Rtn };

/// Modifiers carried by one op instance. Only the fields of the op's ModSet are meaningful.
struct Mods {
  bool isUnsigned = false; // Sign and Conv: integers are unsigned (default signed)
  bool sat = false;        // Conv: saturate instead of wrapping / overflowing to inf
  Round round = Round::Default;
  CmpPred pred = CmpPred::Eq;
  uint8_t dim = 0; // Dim: 0 = x, 1 = y, 2 = z
  bool colMajor = false; // Layout (`.col`): element (r, c) at off + c*ld + r, not off + r*ld + c

  friend bool operator==(const Mods &, const Mods &) = default;
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpForm form;
  TypeClass operands;
  ModSet mods;
  bool pure;
  /// ULP budget under the full profile; index with budgetIndex(). 0 = correctly rounded,
  /// negative = not a float-valued op.
  double ulp[4];

  /// The budget for a result of scalar type `s` (f16, bf16, f32, f64), or nullopt for
  /// integer types and ops that have no float result.
  std::optional<double> ulpBudget(Scalar s) const;
};

/// Forms whose result is a pure function of scalar operands (numerics::evalScalar evaluates
/// them): const, unary, binary, ternary, predicate, compare, select, convert, bitcast.
bool isScalarForm(OpForm f);

/// The five matrix forms (matrix_load, matrix_store, matrix_fill, matrix_mad, matrix_map).
bool isMatrixForm(OpForm f);

const OpInfo &opInfo(OpKind k);
std::span<const OpInfo> allOps();
std::optional<OpKind> lookupOp(std::string_view mnemonic);

std::string_view cmpPredName(CmpPred p);
std::optional<CmpPred> parseCmpPred(std::string_view name);
bool isIntPred(CmpPred p);
std::string_view roundName(Round r); // "" for Default
std::optional<Round> parseRound(std::string_view name);

} // namespace tessera::ir
