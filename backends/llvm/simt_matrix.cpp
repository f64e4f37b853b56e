// SIMT lowering of the matrix ops (docs/ir.md, "Matrix ops"; docs/backends.md): every matrix
// value is a private array of the lane's registers in the layout of its type
// (matrix_layout.h). Fragment layouts are emitted fully unrolled, with constant indices, so
// that SROA turns the arrays into registers; the portable layouts (Replicated, LaneColumns)
// are emitted as loops over arrays in private memory.
//
// matrix_mad takes the target's instruction (matrixInstrs) when a, b and c are fragments of
// it, else an FMA loop that any lane can run on its own (a and b readable at every element it
// needs). Loads and stores follow the IR's addressing exactly (index off + r * ld + c, or
// off + c * ld + r for .col, in i64) and touch nothing outside `bounds` or a layout's padding.
// Must never use shared memory or shuffles (correct on any subgroup size), and never leave a
// register of a matrix undefined (padding holds 0 or a computed value).
#include "backends/llvm/simt_lowering.h"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>

namespace tessera::llvmgen {

using ir::MatrixUse;
using ir::OpKind;
using ir::Scalar;

namespace {

bool isConst(llvm::Value *v, bool value) {
  auto *c = llvm::dyn_cast<llvm::ConstantInt>(v);
  return c && c->isOne() == value;
}

} // namespace

// ----------------------------------------------------------------------------- storage

MatrixLayout SimtLowering::layoutOf(const ir::Type &t) const {
  static const std::vector<MatrixInstr> none;
  const std::vector<MatrixInstr> &instrs = cfg_.matrixInstructions ? hooks_.matrixInstrs() : none;
  return matrixLayout(t.elem, t.rows, t.cols, t.use, cfg_.subgroupSize, instrs);
}

llvm::Type *SimtLowering::storageType(const ir::Type &t) const {
  bool packed = t.use != MatrixUse::Acc && layoutOf(t).scheme == MatrixScheme::Fragment;
  return packed ? memType(ctx_, t.elem) : regType(ctx_, t.elem);
}

llvm::Value *SimtLowering::newMatrix(const ir::Type &t) {
  llvm::IRBuilder<> ab(entry_, entry_->begin());
  unsigned as = out_.getDataLayout().getAllocaAddrSpace();
  auto *arr = llvm::ArrayType::get(storageType(t), layoutOf(t).perLane);
  llvm::AllocaInst *a = ab.CreateAlloca(arr, as, nullptr, "mx");
  a->setAlignment(llvm::Align(16));
  return a;
}

llvm::Value *SimtLowering::slot(const ir::Type &t, llvm::Value *m, llvm::Value *e) {
  return b_.CreateInBoundsGEP(storageType(t), m, b_.CreateZExt(e, b_.getInt64Ty()));
}

void SimtLowering::copyMatrix(const ir::Type &t, llvm::Value *dst, llvm::Value *src) {
  if (dst == src)
    return;
  uint64_t bytes = out_.getDataLayout().getTypeAllocSize(storageType(t)) * layoutOf(t).perLane;
  b_.CreateMemCpy(dst, llvm::Align(16), src, llvm::Align(16), bytes);
}

void SimtLowering::yieldMatrices(const std::vector<const ir::Value *> &vals,
                                 const std::vector<llvm::Value *> &storage,
                                 const std::vector<llvm::Value *> &next) {
  // `yield %y, %x` in a loop over (%x, %y) must not read %x's storage after writing it.
  std::vector<llvm::Value *> from = next;
  for (size_t k = 0; k < storage.size(); ++k) {
    if (!storage[k] || from[k] == storage[k])
      continue;
    bool another = std::find(storage.begin(), storage.end(), from[k]) != storage.end();
    if (!another)
      continue;
    llvm::Value *tmp = newMatrix(vals[k]->type);
    copyMatrix(vals[k]->type, tmp, from[k]);
    from[k] = tmp;
  }
  for (size_t k = 0; k < storage.size(); ++k)
    if (storage[k])
      copyMatrix(vals[k]->type, storage[k], from[k]);
}

// ----------------------------------------------------------------------------- iteration

void SimtLowering::forCount(uint32_t n, const std::function<void(llvm::Value *)> &body) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *loop = newBlock("mx.loop"), *done = newBlock("mx.done");
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt32Ty(), 2);
  i->addIncoming(b_.getInt32(0), pre);
  body(i);
  llvm::Value *next = b_.CreateAdd(i, b_.getInt32(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt32(n)), loop, done);
  b_.SetInsertPoint(done);
}

llvm::Value *SimtLowering::emitGuarded(llvm::Value *cond,
                                       const std::function<llvm::Value *()> &then,
                                       llvm::Value *otherwise) {
  if (isConst(cond, true))
    return then();
  if (isConst(cond, false))
    return otherwise;
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *yes = newBlock("mx.in"), *merge = newBlock("mx.merge");
  b_.CreateCondBr(cond, yes, merge);
  b_.SetInsertPoint(yes);
  llvm::Value *v = then();
  llvm::BasicBlock *yesEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  if (!v)
    return nullptr;
  llvm::PHINode *phi = b_.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, yesEnd);
  phi->addIncoming(otherwise, pre);
  return phi;
}

void SimtLowering::forEachElement(
    const MatrixLayout &l,
    const std::function<void(llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *)> &body) {
  llvm::Type *i64 = b_.getInt64Ty();
  llvm::Value *lane = b_.CreateZExt(laneId_, i64);
  switch (l.scheme) {
  case MatrixScheme::Fragment: {
    auto term = [&](const LaneTerm &t) {
      llvm::Value *v = b_.CreateAnd(b_.CreateLShr(lane, t.shift), t.mask);
      return b_.CreateMul(v, llvm::ConstantInt::get(i64, t.mul));
    };
    const FragmentLayout &f = *l.frag;
    llvm::Value *laneRow = term(f.row), *laneCol = term(f.col);
    for (uint32_t e = 0; e < l.perLane; ++e) {
      // The element part of the coordinate is a constant; lane 0 has a zero lane part.
      MatrixLayout::Coord c0 = l.coord(0, e);
      uint32_t maxRow = c0.row + f.row.max(), maxCol = c0.col + f.col.max();
      llvm::Value *row = b_.CreateAdd(laneRow, llvm::ConstantInt::get(i64, c0.row));
      llvm::Value *col = b_.CreateAdd(laneCol, llvm::ConstantInt::get(i64, c0.col));
      llvm::Value *valid = b_.getTrue();
      if (c0.row >= l.rows || c0.col >= l.cols)
        valid = b_.getFalse();
      else if (maxRow >= l.rows || maxCol >= l.cols)
        valid = b_.CreateAnd(b_.CreateICmpULT(row, llvm::ConstantInt::get(i64, l.rows)),
                             b_.CreateICmpULT(col, llvm::ConstantInt::get(i64, l.cols)));
      body(b_.getInt32(e), row, col, valid);
    }
    return;
  }
  case MatrixScheme::LaneColumns:
    // Register t * R + r of lane l holds (r, l + t * sg).
    forCount((l.cols + l.sg - 1) / l.sg, [&](llvm::Value *t) {
      llvm::Value *col = b_.CreateAdd(lane, b_.CreateZExt(b_.CreateMul(t, b_.getInt32(l.sg)), i64));
      llvm::Value *valid = l.cols % l.sg == 0
                               ? b_.getTrue()
                               : b_.CreateICmpULT(col, llvm::ConstantInt::get(i64, l.cols));
      forCount(l.rows, [&](llvm::Value *r) {
        body(b_.CreateAdd(b_.CreateMul(t, b_.getInt32(l.rows)), r), b_.CreateZExt(r, i64), col,
             valid);
      });
    });
    return;
  case MatrixScheme::Replicated:
    forCount(l.rows, [&](llvm::Value *r) {
      forCount(l.cols, [&](llvm::Value *c) {
        body(b_.CreateAdd(b_.CreateMul(r, b_.getInt32(l.cols)), c), b_.CreateZExt(r, i64),
             b_.CreateZExt(c, i64), b_.getTrue());
      });
    });
    return;
  }
}

// ----------------------------------------------------------------------------- ops

llvm::Error SimtLowering::emitMatrixOp(const ir::Op &op) {
  switch (op.info().form) {
  case ir::OpForm::MatrixLoad:
    return emitMatrixLoad(op);
  case ir::OpForm::MatrixStore:
    return emitMatrixStore(op);
  case ir::OpForm::MatrixFill:
    return emitMatrixFill(op);
  case ir::OpForm::MatrixMap:
    return emitMatrixMap(op);
  case ir::OpForm::MatrixMad:
    return emitMatrixMad(op);
  default:
    return err(op, "not a matrix op");
  }
}

namespace {

/// The memory operands of matrix_load / matrix_store, integers as i64; rows and cols are
/// null without `bounds`.
struct Access {
  llvm::Value *mem, *off, *ld, *rows = nullptr, *cols = nullptr;
};

/// From the lowered operands mem, off, ld [, rows, cols].
Access accessOf(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &v) {
  auto wide = [&](size_t i) { return b.CreateSExtOrTrunc(v[i], b.getInt64Ty()); };
  Access a{v[0], wide(1), wide(2)};
  if (v.size() == 5) {
    a.rows = wide(3);
    a.cols = wide(4);
  }
  return a;
}

} // namespace

// Element (r, c) is at off + r * ld + c (.col: off + c * ld + r); with `bounds`, only
// elements with r < rows and c < cols are accessed (rows/cols read signed).
static llvm::Value *elementIndex(llvm::IRBuilder<> &b, const Access &a, bool colMajor,
                                 llvm::Value *row, llvm::Value *col) {
  llvm::Value *major = colMajor ? col : row, *minor = colMajor ? row : col;
  return b.CreateAdd(a.off, b.CreateAdd(b.CreateMul(major, a.ld), minor));
}

static llvm::Value *inBounds(llvm::IRBuilder<> &b, const Access &a, llvm::Value *valid,
                             llvm::Value *row, llvm::Value *col) {
  if (!a.rows)
    return valid;
  return b.CreateAnd(valid,
                     b.CreateAnd(b.CreateICmpSLT(row, a.rows), b.CreateICmpSLT(col, a.cols)));
}

llvm::Error SimtLowering::emitMatrixLoad(const ir::Op &op) {
  const ir::Type &t = op.results[0]->type;
  std::vector<llvm::Value *> operands;
  for (const ir::Value *v : op.operands)
    operands.push_back(get(v));
  Access a = accessOf(b_, operands);
  llvm::Value *m = newMatrix(t);
  llvm::Type *mt = memType(ctx_, t.elem), *st = storageType(t);
  bool convert = st != mt;
  forEachElement(
      layoutOf(t), [&](llvm::Value *e, llvm::Value *row, llvm::Value *col, llvm::Value *valid) {
        llvm::Value *cond = inBounds(b_, a, valid, row, col);
        llvm::Value *v = emitGuarded(
            cond,
            [&]() -> llvm::Value * {
              llvm::Value *addr =
                  b_.CreateGEP(mt, a.mem, elementIndex(b_, a, op.mods.colMajor, row, col));
              llvm::Value *x = b_.CreateLoad(mt, addr);
              return convert ? fromMem(b_, x, t.elem) : x;
            },
            llvm::Constant::getNullValue(st));
        b_.CreateStore(v, slot(t, m, e));
      });
  set(op.results[0].get(), m);
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitMatrixStore(const ir::Op &op) {
  const ir::Type &t = op.operands[0]->type;
  std::vector<llvm::Value *> operands;
  for (size_t i = 1; i < op.operands.size(); ++i) // after the matrix
    operands.push_back(get(op.operands[i]));
  Access a = accessOf(b_, operands);
  llvm::Value *m = get(op.operands[0]);
  MatrixLayout l = layoutOf(t);
  llvm::Type *mt = memType(ctx_, t.elem), *st = storageType(t);
  llvm::Value *lane = b_.CreateZExt(laneId_, b_.getInt64Ty());
  forEachElement(l, [&](llvm::Value *e, llvm::Value *row, llvm::Value *col, llvm::Value *valid) {
    llvm::Value *cond = inBounds(b_, a, valid, row, col);
    if (l.scheme == MatrixScheme::Replicated) // one lane per element: column c by lane c % sg
      cond = b_.CreateAnd(cond, b_.CreateICmpEQ(b_.CreateAnd(col, l.sg - 1), lane));
    emitGuarded(
        cond,
        [&]() -> llvm::Value * {
          llvm::Value *x = b_.CreateLoad(st, slot(t, m, e));
          if (st != mt)
            x = toMem(b_, x, t.elem);
          b_.CreateStore(x,
                         b_.CreateGEP(mt, a.mem, elementIndex(b_, a, op.mods.colMajor, row, col)));
          return nullptr;
        },
        nullptr);
  });
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitMatrixFill(const ir::Op &op) {
  const ir::Type &t = op.results[0]->type;
  llvm::Value *m = newMatrix(t);
  llvm::Type *st = storageType(t);
  llvm::Value *v = get(op.operands[0]);
  if (st != regType(ctx_, t.elem))
    v = toMem(b_, v, t.elem);
  llvm::Value *zero = llvm::Constant::getNullValue(st);
  // Padding of a/b fragments must stay 0: it multiplies the other operand's padding.
  forEachElement(layoutOf(t),
                 [&](llvm::Value *e, llvm::Value *, llvm::Value *, llvm::Value *valid) {
                   b_.CreateStore(b_.CreateSelect(valid, v, zero), slot(t, m, e));
                 });
  set(op.results[0].get(), m);
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitMatrixMap(const ir::Op &op) {
  const ir::Type &t = op.results[0]->type;
  const ir::Block &region = *op.regions[0];
  llvm::Value *m = newMatrix(t);
  llvm::Error error = llvm::Error::success();
  // Every operand is an acc matrix of the same shape: one layout, register e is the same
  // element in all of them.
  forEachElement(layoutOf(t), [&](llvm::Value *e, llvm::Value *, llvm::Value *, llvm::Value *) {
    if (error)
      return;
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const ir::Type &ot = op.operands[k]->type;
      set(region.args[k].get(), b_.CreateLoad(storageType(ot), slot(ot, get(op.operands[k]), e)));
    }
    std::vector<llvm::Value *> yields;
    if (llvm::Error e2 = emitBlock(region, yields)) {
      error = std::move(e2);
      return;
    }
    b_.CreateStore(yields.at(0), slot(t, m, e));
  });
  if (error)
    return error;
  set(op.results[0].get(), m);
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
