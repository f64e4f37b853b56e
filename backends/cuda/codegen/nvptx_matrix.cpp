// NVPTX matrix instructions for the SIMT lowering: mma.sync.aligned m16n8k16 (bf16, f16 ->
// f32) and m16n8k32 (s8 -> s32), row.col, through the NVVM intrinsics. The fragment tables
// are the PTX ISA's (mma_layout.h); fragment elements are packed low to high into the
// instruction's .b32 registers (two 16-bit or four 8-bit elements each).
//
// Must never use .satfinite (the IR's i32 sums wrap) or a tf32 form (f32 inputs stay on
// the exact FMA loop: tf32 would break the precision contract).
#include "backends/cuda/codegen/cuda_codegen_impl.h"
#include "backends/cuda/codegen/mma_layout.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::cuda {

using llvmgen::FragmentLayout;
using llvmgen::LaneTerm;
using llvmgen::MatrixInstr;

namespace {

// groupID = lane >> 2, threadID_in_group = lane % 4 (the ISA's names).
constexpr LaneTerm kGroup{2, 7, 1};
LaneTerm threadInGroup(uint32_t mul) { return {0, 3, mul}; }

// The accumulator of every m16n8 shape: row groupID (+8 for c2, c3), column
// threadID_in_group * 2 + (i & 1).
FragmentLayout accLayout() { return {kGroup, threadInGroup(2), {0, 0, 8, 8}, {0, 1, 0, 1}}; }

MatrixInstr m16n8k16(const char *name, ir::Scalar in) {
  // a: row groupID (+8 for a2, a3, a6, a7); column threadID_in_group * 2 + (i & 1) (+8 for
  // i >= 4). b: row threadID_in_group * 2 + (i & 1) (+8 for i >= 2); column groupID.
  return {name,
          in,
          ir::Scalar::F32,
          16,
          8,
          16,
          {kGroup, threadInGroup(2), {0, 0, 8, 8, 0, 0, 8, 8}, {0, 1, 0, 1, 8, 9, 8, 9}},
          {threadInGroup(2), kGroup, {0, 1, 8, 9}, {0, 0, 0, 0}},
          accLayout()};
}

MatrixInstr m16n8k32s8() {
  // a: row groupID (+8 for 4 <= i < 8 and i >= 12); column threadID_in_group * 4 + (i & 3)
  // (+16 for i >= 8). b: row threadID_in_group * 4 + (i & 3) (+16 for i >= 4); column groupID.
  return {"mma.sync.m16n8k32.s8",
          ir::Scalar::I8,
          ir::Scalar::I32,
          16,
          8,
          32,
          {kGroup,
           threadInGroup(4),
           {0, 0, 0, 0, 8, 8, 8, 8, 0, 0, 0, 0, 8, 8, 8, 8},
           {0, 1, 2, 3, 0, 1, 2, 3, 16, 17, 18, 19, 16, 17, 18, 19}},
          {threadInGroup(4), kGroup, {0, 1, 2, 3, 16, 17, 18, 19}, {0, 0, 0, 0, 0, 0, 0, 0}},
          accLayout()};
}

/// `elems` packed `per` to a register, low to high: <per x T> bitcast to i32 (or kept as
/// <2 x half> where the intrinsic takes that).
std::vector<llvm::Value *> pack(llvm::IRBuilder<> &b, llvm::ArrayRef<llvm::Value *> elems,
                                unsigned per, bool asI32) {
  std::vector<llvm::Value *> regs;
  llvm::Type *vt = llvm::FixedVectorType::get(elems[0]->getType(), per);
  for (size_t i = 0; i < elems.size(); i += per) {
    llvm::Value *v = llvm::PoisonValue::get(vt);
    for (unsigned j = 0; j < per; ++j)
      v = b.CreateInsertElement(v, elems[i + j], b.getInt32(j));
    regs.push_back(asI32 ? b.CreateBitCast(v, b.getInt32Ty()) : v);
  }
  return regs;
}

} // namespace

const std::vector<MatrixInstr> &mmaInstrs() {
  static const std::vector<MatrixInstr> instrs = {
      m16n8k16("mma.sync.m16n8k16.bf16", ir::Scalar::BF16),
      m16n8k16("mma.sync.m16n8k16.f16", ir::Scalar::F16), m16n8k32s8()};
  return instrs;
}

const std::vector<MatrixInstr> &NvptxHooks::matrixInstrs() const { return mmaInstrs(); }

std::vector<llvm::Value *> NvptxHooks::emitMatrixInstr(llvm::IRBuilder<> &b,
                                                       const MatrixInstr &instr,
                                                       llvm::ArrayRef<llvm::Value *> a,
                                                       llvm::ArrayRef<llvm::Value *> bv,
                                                       llvm::ArrayRef<llvm::Value *> c) {
  using namespace llvm::Intrinsic;
  ID id = nvvm_mma_m16n8k16_row_col_bf16;
  unsigned per = 2;
  bool asI32 = true;
  if (instr.in == ir::Scalar::F16) {
    id = nvvm_mma_m16n8k16_row_col_f32_f32; // d and c f32; a and b <2 x half>
    asI32 = false;
  } else if (instr.in == ir::Scalar::I8) {
    id = nvvm_mma_m16n8k32_row_col_s8;
    per = 4;
  }
  std::vector<llvm::Value *> args = pack(b, a, per, asI32);
  std::vector<llvm::Value *> bregs = pack(b, bv, per, asI32);
  args.insert(args.end(), bregs.begin(), bregs.end());
  args.insert(args.end(), c.begin(), c.end());
  llvm::CallInst *r = b.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id), args);
  // LLVM 19 declares the mma intrinsics IntrNoMem only: without `convergent` a pass could
  // sink one into a branch that only some lanes take (e.g. a guarded store of d), and
  // mma.sync.aligned needs the whole warp.
  r->addFnAttr(llvm::Attribute::Convergent);
  std::vector<llvm::Value *> d;
  for (unsigned i = 0; i < c.size(); ++i)
    d.push_back(b.CreateExtractValue(r, i));
  return d;
}

} // namespace tessera::cuda
