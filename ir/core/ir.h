// In-memory kernel IR: values, ops with structured regions, functions, modules.
//
// Ownership is strictly a tree: Module -> Function -> Block -> Op -> (results, regions).
// A value is used by raw pointer; passes that erase ops must first drop their uses.
// Regions hold exactly one block (structured control flow: no CFG, no branches).
// This header must never include anything from hal/ or backends/.
#pragma once

#include "ir/core/ops.h"
#include "ir/core/types.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {

/// A position in a source file (1-based). line == 0 means "no location" (built in C++).
struct Loc {
  uint32_t line = 0;
  uint32_t col = 0;
};

class Op;
class Block;

class Value {
public:
  Value(Type type, std::string name) : type(type), name(std::move(name)) {}

  Type type;
  std::string name;       // hint for the printer, without '%'; may be empty
  Op *def = nullptr;      // defining op; null for block arguments
  Block *owner = nullptr; // the block whose argument this is; null for op results
  unsigned index = 0;     // result number or argument number
};

/// A literal of a `const` op. Floats are kept as the exact double; integers as their
/// two's-complement bits truncated to the type's width.
struct Literal {
  double f = 0;
  uint64_t i = 0;
};

class Op {
public:
  explicit Op(OpKind kind, Loc loc = {}) : kind(kind), loc(loc) {}

  const OpInfo &info() const { return opInfo(kind); }
  Value *result(unsigned i = 0) const { return results.at(i).get(); }
  Block &region(unsigned i) const { return *regions.at(i); }
  Value *addResult(Type t, std::string name = {});

  OpKind kind;
  Mods mods;
  Loc loc;
  Literal literal;     // const only
  std::string callee;  // call only: the function name without '@'
  std::vector<Value *> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<std::unique_ptr<Block>> regions;
  Block *parent = nullptr;
};

class Block {
public:
  Value *addArg(Type t, std::string name = {});
  /// Appends `op` (taking ownership) and returns it.
  Op *append(std::unique_ptr<Op> op);
  /// The last op if it is a terminator (yield, condition, return), else null.
  Op *terminator() const;

  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op *parentOp = nullptr; // null for a function body
};

/// A generator parameter written as an integer literal, exactly (sign and magnitude): a
/// double holds 53 bits, so i64 `fill(2^53 + 1)` or `uniform(INT64_MIN, INT64_MAX)` would be
/// rounded; both INT64_MIN and UINT64_MAX fit here.
struct IntParam {
  bool set = false; // false: the parameter was not an integer literal (use the double)
  bool negative = false;
  uint64_t magnitude = 0;
};

/// How a launch spec initialises one kernel argument.
struct ArgInit {
  enum class Kind : uint8_t { Scalar, Uniform, Normal, Iota, Fill, Special };
  std::string param; // kernel parameter name (without '%')
  Kind kind = Kind::Scalar;
  int64_t count = 0; // buffer elements (buffers only)
  double a = 0, b = 0; // generator parameters (uniform lo/hi, normal mean/std, iota start/step, fill value)
  Literal scalar;      // Scalar only
  Loc loc;
  IntParam ia, ib; // a and b exactly, when written as integers: integer buffers read these
};

/// Everything a tool needs to run a kernel without flags: grid (number of workgroups per
/// dimension, as in CUDA / Vulkan dispatch), workgroup size, a seed and argument initialisers.
struct LaunchSpec {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> workgroup{1, 1, 1};
  uint64_t seed = 0;
  std::vector<ArgInit> args; // one per kernel parameter, in parameter order
  Loc loc;
};

class Function {
public:
  Function(bool isKernel, std::string name) : isKernel(isKernel), name(std::move(name)) {
    body = std::make_unique<Block>();
  }
  std::vector<Value *> params() const;

  bool isKernel;
  std::string name; // without '@'
  std::vector<Type> resultTypes; // device functions only
  std::unique_ptr<Block> body;   // its arguments are the parameters
  std::optional<LaunchSpec> launch; // kernels only
  Loc loc;
};

class Module {
public:
  Function *addFunction(bool isKernel, std::string name);
  Function *lookup(std::string_view name) const;

  std::string filename; // for diagnostics
  std::vector<std::unique_ptr<Function>> functions;
};

/// Whether `f` contains a matrix op (matrix_load, _store, _fill, _mad, _map) at any depth:
/// such a kernel needs whole subgroups (docs/ir.md "Matrix ops", launch rule).
bool usesMatrixOps(const Function &f);

/// For a backend that cannot compile matrix ops yet: empty when `m` has none, else
/// `file:line:col: error: 'matrix_mad': matrix ops are not supported by the <backend>
/// backend yet` for the first one (in function and text order).
std::string unsupportedMatrixOps(const Module &m, std::string_view backend);

/// Depth-first walk over every op nested in `b` (pre-order).
template <typename F> void walk(Block &b, F &&fn) {
  for (auto &op : b.ops) {
    fn(*op);
    for (auto &r : op->regions)
      walk(*r, fn);
  }
}

} // namespace tessera::ir
