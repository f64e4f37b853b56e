// Builder implementation: thin, typed wrappers around Op construction.
#include "ir/core/builder.h"

#include "ir/interp/numerics.h"

#include <cassert>
#include <cmath>

namespace tessera::ir {

Op *Builder::create(OpKind kind, std::span<Value *const> operands, std::span<const Type> results,
                    Mods mods) {
  auto op = std::make_unique<Op>(kind, loc_);
  op->mods = mods;
  op->operands.assign(operands.begin(), operands.end());
  for (const Type &t : results)
    op->addResult(t);
  return block_->append(std::move(op));
}

Value *Builder::one(OpKind k, std::span<Value *const> operands, Type result, Mods m) {
  Type types[1] = {result};
  return create(k, operands, types, m)->result(0);
}

Value *Builder::constFloat(double v, Scalar t) {
  assert(isFloatScalar(t) && "constFloat needs a float type");
  Op *op = create(OpKind::Const, {}, std::span<const Type>(), {});
  op->literal.f = numerics::roundToFloat(v, t);
  op->addResult(Type::scalar(t));
  return op->result(0);
}

Value *Builder::constInt(int64_t v, Scalar t) {
  assert(isIntScalar(t) && "constInt needs an integer type");
  Op *op = create(OpKind::Const, {}, std::span<const Type>(), {});
  int bits = bitWidth(t);
  uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  op->literal.i = static_cast<uint64_t>(v) & mask;
  op->addResult(Type::scalar(t));
  return op->result(0);
}

Value *Builder::unary(OpKind k, Value *a, Mods m) {
  Value *ops[] = {a};
  Type r = opInfo(k).form == OpForm::Predicate ? Type::scalar(Scalar::I1) : a->type;
  return one(k, ops, r, m);
}

Value *Builder::binary(OpKind k, Value *a, Value *b, Mods m) {
  Value *ops[] = {a, b};
  return one(k, ops, a->type, m);
}

Value *Builder::fma(Value *a, Value *b, Value *c) {
  Value *ops[] = {a, b, c};
  return one(OpKind::Fma, ops, a->type);
}

Value *Builder::cmp(CmpPred p, Value *a, Value *b) {
  Value *ops[] = {a, b};
  Mods m;
  m.pred = p;
  return one(OpKind::Cmp, ops, Type::scalar(Scalar::I1), m);
}

Value *Builder::select(Value *c, Value *a, Value *b) {
  Value *ops[] = {c, a, b};
  return one(OpKind::Select, ops, a->type);
}

Value *Builder::convert(Value *a, Scalar to, Mods m) {
  Value *ops[] = {a};
  return one(OpKind::Convert, ops, Type::scalar(to), m);
}

Value *Builder::bitcast(Value *a, Scalar to) {
  Value *ops[] = {a};
  return one(OpKind::Bitcast, ops, Type::scalar(to));
}

Value *Builder::workItem(OpKind k, int dim, Scalar t) {
  Mods m;
  m.dim = static_cast<uint8_t>(dim);
  return one(k, {}, Type::scalar(t), m);
}

Value *Builder::load(Value *mem, Value *index) {
  Value *ops[] = {mem, index};
  return one(OpKind::Load, ops, Type::scalar(mem->type.elem));
}

void Builder::store(Value *v, Value *mem, Value *index) {
  Value *ops[] = {v, mem, index};
  create(OpKind::Store, ops, {});
}

Value *Builder::sharedAlloc(Scalar elem, int64_t count) {
  return one(OpKind::SharedAlloc, {}, Type::shared(elem, count));
}

Value *Builder::atomic(OpKind k, Value *mem, Value *index, Value *v, Mods m) {
  Value *ops[] = {mem, index, v};
  return one(k, ops, v->type, m);
}

Value *Builder::atomicCas(Value *mem, Value *index, Value *expected, Value *desired) {
  Value *ops[] = {mem, index, expected, desired};
  return one(OpKind::AtomicCas, ops, expected->type);
}

void Builder::barrier() { create(OpKind::Barrier, {}, {}); }

Value *Builder::subgroup(OpKind k, Value *v, Mods m) {
  Value *ops[] = {v};
  return one(k, ops, v->type, m);
}

Value *Builder::shuffle(OpKind k, Value *v, Value *lane) {
  Value *ops[] = {v, lane};
  return one(k, ops, v->type);
}

namespace {
std::vector<Value *> resultsOf(Op *op) {
  std::vector<Value *> out;
  for (auto &r : op->results)
    out.push_back(r.get());
  return out;
}

std::vector<Value *> argsOf(Block &b) {
  std::vector<Value *> out;
  for (auto &a : b.args)
    out.push_back(a.get());
  return out;
}
} // namespace

std::vector<Value *> Builder::forLoop(Value *lb, Value *ub, Value *step,
                                      std::span<Value *const> inits, const RegionFn &body) {
  std::vector<Value *> operands{lb, ub, step};
  std::vector<Type> types;
  for (Value *v : inits) {
    operands.push_back(v);
    types.push_back(v->type);
  }
  Op *op = create(OpKind::For, operands, types);
  auto blk = std::make_unique<Block>();
  blk->parentOp = op;
  blk->addArg(lb->type);
  for (Value *v : inits)
    blk->addArg(v->type);
  Builder inner(*blk, loc_);
  op->regions.push_back(std::move(blk));
  std::vector<Value *> args = argsOf(op->region(0));
  body(inner, args);
  if (inits.empty() && !op->region(0).terminator())
    inner.yield();
  return resultsOf(op);
}

std::vector<Value *> Builder::ifOp(Value *c, std::span<const Type> resultTypes,
                                   const RegionFn &thenBody, const RegionFn &elseBody) {
  Value *ops[] = {c};
  Op *op = create(OpKind::If, ops, resultTypes);
  for (int i = 0; i < 2; ++i) {
    auto blk = std::make_unique<Block>();
    blk->parentOp = op;
    op->regions.push_back(std::move(blk));
    Builder inner(op->region(i), loc_);
    const RegionFn &fn = i == 0 ? thenBody : elseBody;
    if (fn)
      fn(inner, {});
    if (resultTypes.empty() && !op->region(i).terminator())
      inner.yield();
  }
  return resultsOf(op);
}

std::vector<Value *> Builder::whileLoop(std::span<Value *const> inits, const RegionFn &before,
                                        const RegionFn &body) {
  std::vector<Type> types;
  for (Value *v : inits)
    types.push_back(v->type);
  Op *op = create(OpKind::While, inits, types);
  for (int i = 0; i < 2; ++i) {
    auto blk = std::make_unique<Block>();
    blk->parentOp = op;
    for (Value *v : inits)
      blk->addArg(v->type);
    op->regions.push_back(std::move(blk));
    Builder inner(op->region(i), loc_);
    std::vector<Value *> args = argsOf(op->region(i));
    (i == 0 ? before : body)(inner, args);
    if (i == 1 && inits.empty() && !op->region(i).terminator())
      inner.yield();
  }
  return resultsOf(op);
}

namespace {
std::vector<Value *> accessOperands(Value *first, const Builder::MatrixAccess &a) {
  std::vector<Value *> ops;
  if (first)
    ops.push_back(first);
  ops.insert(ops.end(), {a.mem, a.off, a.ld});
  if (a.rows || a.cols)
    ops.insert(ops.end(), {a.rows, a.cols});
  return ops;
}
Mods layout(bool colMajor) {
  Mods m;
  m.colMajor = colMajor;
  return m;
}
} // namespace

Value *Builder::matrixLoad(const MatrixAccess &a, Type matrix) {
  return one(OpKind::MatrixLoad, accessOperands(nullptr, a), matrix, layout(a.colMajor));
}

void Builder::matrixStore(Value *m, const MatrixAccess &a) {
  create(OpKind::MatrixStore, accessOperands(m, a), {}, layout(a.colMajor));
}

Value *Builder::matrixFill(Value *v, Type matrix) {
  Value *ops[] = {v};
  return one(OpKind::MatrixFill, ops, matrix);
}

Value *Builder::matrixMad(Value *a, Value *b, Value *c) {
  Value *ops[] = {a, b, c};
  return one(OpKind::MatrixMad, ops, c->type);
}

Value *Builder::matrixMap(std::span<Value *const> matrices, Type result, const RegionFn &body) {
  Type types[1] = {result};
  Op *op = create(OpKind::MatrixMap, matrices, types);
  auto blk = std::make_unique<Block>();
  blk->parentOp = op;
  for (Value *m : matrices)
    blk->addArg(Type::scalar(m->type.elem));
  Builder inner(*blk, loc_);
  op->regions.push_back(std::move(blk));
  std::vector<Value *> args = argsOf(op->region(0));
  body(inner, args);
  return op->result(0);
}

std::vector<Value *> Builder::call(const Function &f, std::span<Value *const> args) {
  Op *op = create(OpKind::Call, args, f.resultTypes);
  op->callee = f.name;
  return resultsOf(op);
}

void Builder::yield(std::span<Value *const> values) { create(OpKind::Yield, values, {}); }
void Builder::condition(Value *c) {
  Value *ops[] = {c};
  create(OpKind::Condition, ops, {});
}
void Builder::ret(std::span<Value *const> values) { create(OpKind::Return, values, {}); }

} // namespace tessera::ir
