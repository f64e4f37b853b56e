// C++ API to construct kernel IR without text (graph lowering, tests, generators).
//
// A Builder appends ops at the end of one block. Region-holding ops take callbacks that
// receive a Builder positioned in the new region plus its block arguments. Result types are
// inferred from operands per the op table; the builder does not verify (run the verifier).
#pragma once

#include "ir/core/ir.h"

#include <functional>
#include <initializer_list>
#include <span>

namespace tessera::ir {

class Builder {
public:
  explicit Builder(Block &block, Loc loc = {}) : block_(&block), loc_(loc) {}

  Block &block() const { return *block_; }
  void setLoc(Loc loc) { loc_ = loc; }

  /// Generic creation: operands, result types and modifiers as given.
  Op *create(OpKind kind, std::span<Value *const> operands, std::span<const Type> results,
             Mods mods = {});

  Value *constFloat(double v, Scalar t);
  Value *constInt(int64_t v, Scalar t);
  Value *constBool(bool v) { return constInt(v ? 1 : 0, Scalar::I1); }

  Value *unary(OpKind k, Value *a, Mods m = {});
  Value *binary(OpKind k, Value *a, Value *b, Mods m = {});
  Value *fma(Value *a, Value *b, Value *c);
  Value *add(Value *a, Value *b) { return binary(OpKind::Add, a, b); }
  Value *sub(Value *a, Value *b) { return binary(OpKind::Sub, a, b); }
  Value *mul(Value *a, Value *b) { return binary(OpKind::Mul, a, b); }
  Value *cmp(CmpPred p, Value *a, Value *b);
  Value *select(Value *c, Value *a, Value *b);
  Value *convert(Value *a, Scalar to, Mods m = {});
  Value *bitcast(Value *a, Scalar to);

  /// global_id / local_id / group_id / local_size / num_groups (dim 0..2) and the subgroup
  /// queries (dim ignored).
  Value *workItem(OpKind k, int dim = 0, Scalar t = Scalar::I32);
  Value *load(Value *mem, Value *index);
  void store(Value *v, Value *mem, Value *index);
  Value *sharedAlloc(Scalar elem, int64_t count);
  Value *atomic(OpKind k, Value *mem, Value *index, Value *v, Mods m = {});
  Value *atomicCas(Value *mem, Value *index, Value *expected, Value *desired);
  void barrier();
  Value *subgroup(OpKind k, Value *v, Mods m = {});
  Value *shuffle(OpKind k, Value *v, Value *lane);

  using RegionFn = std::function<void(Builder &, std::span<Value *const> args)>;

  /// `for %iv = lb to ub step s iter(inits)`; body receives (iv, iter args...) and must
  /// call yield() with the next iteration values (none if there are no inits).
  std::vector<Value *> forLoop(Value *lb, Value *ub, Value *step,
                               std::span<Value *const> inits, const RegionFn &body);
  /// `if c -> (resultTypes)`; elseBody may be null when there are no results.
  std::vector<Value *> ifOp(Value *c, std::span<const Type> resultTypes, const RegionFn &thenBody,
                            const RegionFn &elseBody = nullptr);
  /// `while iter(inits) { before: condition } do { body }`.
  std::vector<Value *> whileLoop(std::span<Value *const> inits, const RegionFn &before,
                                 const RegionFn &body);
  std::vector<Value *> call(const Function &f, std::span<Value *const> args);

  // --- subgroup-scope matrices (docs/ir.md "Matrix ops")
  /// Where a matrix_load / matrix_store reads or writes: element (r, c) at
  /// off + r*ld + c (off + c*ld + r when colMajor); rows/cols set = `bounds %rows, %cols`.
  struct MatrixAccess {
    Value *mem = nullptr;
    Value *off = nullptr;
    Value *ld = nullptr;
    Value *rows = nullptr; // both or neither
    Value *cols = nullptr;
    bool colMajor = false;
  };
  Value *matrixLoad(const MatrixAccess &a, Type matrix);
  void matrixStore(Value *m, const MatrixAccess &a);
  Value *matrixFill(Value *v, Type matrix);
  /// d = c + a * b; the result has c's type.
  Value *matrixMad(Value *a, Value *b, Value *c);
  /// `matrix_map(%x = m...) -> result { body }`: body receives one scalar per operand (its
  /// element type) and must call yield() with one scalar of result's element type.
  Value *matrixMap(std::span<Value *const> matrices, Type result, const RegionFn &body);

  void yield(std::span<Value *const> values = {});
  void condition(Value *c);
  void ret(std::span<Value *const> values = {});

private:
  Value *one(OpKind k, std::span<Value *const> operands, Type result, Mods m = {});

  Block *block_;
  Loc loc_;
};

} // namespace tessera::ir
