// SIMT lowering of matrix_mad (d = c + a * b; docs/ir.md, "Matrix ops"), in two forms:
//  - the target's instruction (mma.sync, MFMA, WMMA) when a, b and c are fragments of it:
//    for every tile of d, c's tile then one instruction per K tile, fully unrolled;
//  - otherwise an FMA loop per register of d: every lane reads a[row][k] and b[k][col] from
//    its own registers (a Replicated; b Replicated, or LaneColumns like d).
// Float sums are fused multiply-adds in k order (the precision contract allows any order,
// fused or not); i8 x i8 -> i32 wraps. Must never read a register outside a matrix's array.
#include "backends/llvm/simt_lowering.h"

#include <llvm/IR/Intrinsics.h>

namespace tessera::llvmgen {

using ir::MatrixUse;
using ir::Scalar;

llvm::Error SimtLowering::emitMatrixMad(const ir::Op &op) {
  const ir::Type &ta = op.operands[0]->type, &tb = op.operands[1]->type, &tc = op.operands[2]->type;
  llvm::Value *a = get(op.operands[0]), *b = get(op.operands[1]), *c = get(op.operands[2]);
  llvm::Value *d = newMatrix(tc);
  MatrixLayout la = layoutOf(ta), lb = layoutOf(tb), lc = layoutOf(tc);
  bool fragments = la.scheme == MatrixScheme::Fragment && lb.scheme == MatrixScheme::Fragment &&
                   lc.scheme == MatrixScheme::Fragment;
  const MatrixInstr *instr = fragments ? findMatrixInstr(hooks_.matrixInstrs(), ta.elem) : nullptr;
  if (instr && instr->acc == tc.elem) {
    emitInstrMad(*instr, ta, tb, tc, a, b, c, d);
  } else {
    if (la.scheme == MatrixScheme::Fragment || lb.scheme == MatrixScheme::Fragment)
      return err(op, "matrix_mad: " + ir::toString(ta) + " x " + ir::toString(tb) + " -> " +
                         ir::toString(tc) + " has no lowering on " + cfg_.targetName);
    emitLoopMad(ta, tb, tc, a, b, c, d);
  }
  set(op.results[0].get(), d);
  return llvm::Error::success();
}

void SimtLowering::emitInstrMad(const MatrixInstr &instr, const ir::Type &ta, const ir::Type &tb,
                                const ir::Type &tc, llvm::Value *a, llvm::Value *b, llvm::Value *c,
                                llvm::Value *d) {
  MatrixLayout la = layoutOf(ta), lb = layoutOf(tb), lc = layoutOf(tc);
  // Rows and columns are padded to whole tiles alike in all three (matrixLayout).
  assert(la.tilesR == lc.tilesR && lb.tilesC == lc.tilesC && la.tilesC == lb.tilesR &&
         "matrix_mad operands' tiles disagree");
  auto loadTile = [&](const ir::Type &t, llvm::Value *m, uint32_t base, uint32_t n) {
    std::vector<llvm::Value *> v;
    for (uint32_t i = 0; i < n; ++i)
      v.push_back(b_.CreateLoad(storageType(t), slot(t, m, b_.getInt32(base + i))));
    return v;
  };
  for (uint32_t ti = 0; ti < lc.tilesR; ++ti)
    for (uint32_t tj = 0; tj < lc.tilesC; ++tj) {
      uint32_t base = lc.tileBase(ti, tj);
      std::vector<llvm::Value *> acc = loadTile(tc, c, base, instr.c.size());
      for (uint32_t tk = 0; tk < la.tilesC; ++tk) {
        std::vector<llvm::Value *> av = loadTile(ta, a, la.tileBase(ti, tk), instr.a.size());
        std::vector<llvm::Value *> bv = loadTile(tb, b, lb.tileBase(tk, tj), instr.b.size());
        acc = hooks_.emitMatrixInstr(b_, instr, av, bv, acc);
      }
      for (uint32_t i = 0; i < instr.c.size(); ++i)
        b_.CreateStore(acc[i], slot(tc, d, b_.getInt32(base + i)));
    }
}

void SimtLowering::emitLoopMad(const ir::Type &ta, const ir::Type &tb, const ir::Type &tc,
                               llvm::Value *a, llvm::Value *b, llvm::Value *c, llvm::Value *d) {
  MatrixLayout lb = layoutOf(tb), lc = layoutOf(tc);
  uint32_t K = ta.cols, N = tb.cols, sg = cfg_.subgroupSize;
  bool isInt = tc.elem == Scalar::I32;
  llvm::Type *i32 = b_.getInt32Ty(), *st = storageType(tc);
  llvm::Type *at = storageType(ta), *bt = storageType(tb);
  forEachElement(lc, [&](llvm::Value *e, llvm::Value *row, llvm::Value *col, llvm::Value *valid) {
    llvm::Value *cd = slot(tc, c, e);
    llvm::Value *acc0 = b_.CreateLoad(st, cd);
    // Padding registers (rows or columns past the matrix) just keep c: a and b have no row
    // or column for them.
    auto *isValid = llvm::dyn_cast<llvm::ConstantInt>(valid);
    if (isValid && isValid->isZero()) {
      b_.CreateStore(acc0, slot(tc, d, e));
      return;
    }
    llvm::Value *r = b_.CreateTrunc(b_.CreateSelect(valid, row, b_.getInt64(0)), i32);
    llvm::Value *cl = b_.CreateTrunc(b_.CreateSelect(valid, col, b_.getInt64(0)), i32);
    // b's register of (k, col): Replicated k * N + col; LaneColumns (col / sg) * K + k (this
    // lane owns col, as it owns d's).
    llvm::Value *bBase = lb.scheme == MatrixScheme::LaneColumns
                             ? b_.CreateMul(b_.CreateUDiv(cl, b_.getInt32(sg)), b_.getInt32(K))
                             : cl;
    llvm::Value *bStep = b_.getInt32(lb.scheme == MatrixScheme::LaneColumns ? 1 : N);
    llvm::Value *aBase = b_.CreateMul(r, b_.getInt32(K));
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *loop = newBlock("mad.k"), *done = newBlock("mad.done");
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode *k = b_.CreatePHI(i32, 2), *acc = b_.CreatePHI(st, 2);
    k->addIncoming(b_.getInt32(0), pre);
    acc->addIncoming(acc0, pre);
    llvm::Value *x = b_.CreateLoad(at, slot(ta, a, b_.CreateAdd(aBase, k)));
    llvm::Value *y = b_.CreateLoad(bt, slot(tb, b, b_.CreateAdd(bBase, b_.CreateMul(k, bStep))));
    llvm::Value *next;
    if (isInt) {
      next = b_.CreateAdd(acc, b_.CreateMul(b_.CreateSExt(x, i32), b_.CreateSExt(y, i32)));
    } else {
      // f16/bf16 are held in f32 (exactly), and their products are exact in f32.
      next = b_.CreateIntrinsic(llvm::Intrinsic::fma, {st}, {x, y, acc});
    }
    llvm::Value *k1 = b_.CreateAdd(k, b_.getInt32(1));
    k->addIncoming(k1, loop);
    acc->addIncoming(next, loop);
    b_.CreateCondBr(b_.CreateICmpULT(k1, b_.getInt32(K)), loop, done);
    b_.SetInsertPoint(done);
    b_.CreateStore(next, slot(tc, d, e));
  });
}

} // namespace tessera::llvmgen
