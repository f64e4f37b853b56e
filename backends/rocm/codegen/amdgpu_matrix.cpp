// AMDGPU matrix instructions for the SIMT lowering (see matrix_instrs.h): MFMA on CDNA
// (gfx90a, gfx942) and WMMA on RDNA3 (gfx1100), through the llvm.amdgcn intrinsics, with
// fragment elements packed low to high into the intrinsic's vector operands.
//
// Must never use the clamp (saturating) forms (the IR's i32 sums wrap), the f32/xf32
// inputs (f32 matrices stay on the exact FMA loop), or MFMA's broadcast controls (cbsz,
// abid, blgp are 0).
#include "backends/rocm/codegen/matrix_instrs.h"
#include "backends/rocm/codegen/rocm_codegen_impl.h"

#include <llvm/IR/IntrinsicsAMDGPU.h>

#include <cstring>

namespace tessera::rocm {

using llvmgen::FragmentLayout;
using llvmgen::LaneTerm;
using llvmgen::MatrixInstr;

namespace {

constexpr LaneTerm kLane16{0, 15, 1}; // lane % 16
constexpr LaneTerm kNone{0, 0, 0};

std::vector<uint16_t> iota(uint16_t n, uint16_t step = 1) {
  std::vector<uint16_t> v(n);
  for (uint16_t i = 0; i < n; ++i)
    v[i] = static_cast<uint16_t>(i * step);
  return v;
}

/// MFMA 16x16xK (wave64) with `per` consecutive k per lane: a[i][k] in lane
/// i + 16 * (k / per), element k % per; b[k][j] in lane j + 16 * (k / per); d[i][j] in lane
/// j + 16 * (i / 4), element i % 4.
MatrixInstr mfma16(const char *name, ir::Scalar in, ir::Scalar acc, uint16_t per) {
  LaneTerm kLane{4, 3, per};
  return {name,
          in,
          acc,
          16,
          16,
          uint32_t(4 * per),
          {kLane16, kLane, std::vector<uint16_t>(per, 0), iota(per)},
          {kLane, kLane16, iota(per), std::vector<uint16_t>(per, 0)},
          {LaneTerm{4, 3, 4}, kLane16, iota(4), {0, 0, 0, 0}}};
}

/// WMMA 16x16x16 (wave32): a[i][k] in lanes i and i + 16, element k; b[k][j] in lanes j and
/// j + 16, element k; d[i][j] in lane j + 16 * (i % 2), element i / 2.
MatrixInstr wmma16(const char *name, ir::Scalar in, ir::Scalar acc) {
  return {name,
          in,
          acc,
          16,
          16,
          16,
          {kLane16, kNone, std::vector<uint16_t>(16, 0), iota(16)},
          {kNone, kLane16, iota(16), std::vector<uint16_t>(16, 0)},
          {LaneTerm{4, 1, 1}, kLane16, iota(8, 2), std::vector<uint16_t>(8, 0)}};
}

} // namespace

const std::vector<MatrixInstr> &matrixInstrs(std::string_view arch) {
  using ir::Scalar;
  static const std::vector<MatrixInstr> gfx90a = {
      mfma16("mfma.f32.16x16x16bf16_1k", Scalar::BF16, Scalar::F32, 4),
      mfma16("mfma.f32.16x16x16f16", Scalar::F16, Scalar::F32, 4),
      mfma16("mfma.i32.16x16x16i8", Scalar::I8, Scalar::I32, 4)};
  static const std::vector<MatrixInstr> gfx942 = {
      mfma16("mfma.f32.16x16x16bf16_1k", Scalar::BF16, Scalar::F32, 4),
      mfma16("mfma.f32.16x16x16f16", Scalar::F16, Scalar::F32, 4),
      mfma16("mfma.i32.16x16x32_i8", Scalar::I8, Scalar::I32, 8)};
  static const std::vector<MatrixInstr> gfx1100 = {
      wmma16("wmma.f32.16x16x16.bf16", Scalar::BF16, Scalar::F32),
      wmma16("wmma.f32.16x16x16.f16", Scalar::F16, Scalar::F32),
      wmma16("wmma.i32.16x16x16.iu8", Scalar::I8, Scalar::I32)};
  static const std::vector<MatrixInstr> none;
  if (arch == "gfx90a")
    return gfx90a;
  if (arch == "gfx942")
    return gfx942;
  if (arch == "gfx1100")
    return gfx1100;
  return none;
}

const std::vector<MatrixInstr> &AmdgpuHooks::matrixInstrs() const {
  return rocm::matrixInstrs(arch_);
}

std::vector<llvm::Value *> AmdgpuHooks::emitMatrixInstr(llvm::IRBuilder<> &b,
                                                        const MatrixInstr &instr,
                                                        llvm::ArrayRef<llvm::Value *> a,
                                                        llvm::ArrayRef<llvm::Value *> bv,
                                                        llvm::ArrayRef<llvm::Value *> c) {
  using namespace llvm::Intrinsic;
  auto vec = [&](llvm::ArrayRef<llvm::Value *> elems) {
    llvm::Value *v = llvm::PoisonValue::get(
        llvm::FixedVectorType::get(elems[0]->getType(), unsigned(elems.size())));
    for (unsigned i = 0; i < elems.size(); ++i)
      v = b.CreateInsertElement(v, elems[i], b.getInt32(i));
    return v;
  };
  // i8 fragments go as whole registers: 4 (i32), 8 (i64) or 16 (<4 x i32>) bytes.
  auto bytes = [&](llvm::ArrayRef<llvm::Value *> elems) -> llvm::Value * {
    llvm::Value *v = vec(elems);
    if (elems.size() == 16)
      return b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), 4));
    return b.CreateBitCast(v, b.getIntNTy(8 * unsigned(elems.size())));
  };
  bool isInt = instr.in == ir::Scalar::I8;
  llvm::Value *av = isInt ? bytes(a) : vec(a), *bw = isInt ? bytes(bv) : vec(bv);
  llvm::Value *cv = vec(c), *d = nullptr;
  bool wmma = std::strncmp(instr.name, "wmma", 4) == 0;
  if (wmma && isInt) {
    d = b.CreateIntrinsic(amdgcn_wmma_i32_16x16x16_iu8, {cv->getType(), av->getType()},
                          {b.getTrue(), av, b.getTrue(), bw, cv, b.getFalse()});
  } else if (wmma) {
    ID id =
        instr.in == ir::Scalar::BF16 ? amdgcn_wmma_f32_16x16x16_bf16 : amdgcn_wmma_f32_16x16x16_f16;
    d = b.CreateIntrinsic(id, {cv->getType(), av->getType()}, {av, bw, cv});
  } else {
    ID id = instr.in == ir::Scalar::BF16  ? amdgcn_mfma_f32_16x16x16bf16_1k
            : instr.in == ir::Scalar::F16 ? amdgcn_mfma_f32_16x16x16f16
            : a.size() == 4               ? amdgcn_mfma_i32_16x16x16i8
                                          : amdgcn_mfma_i32_16x16x32_i8;
    d = b.CreateIntrinsic(id, {}, {av, bw, cv, b.getInt32(0), b.getInt32(0), b.getInt32(0)});
  }
  std::vector<llvm::Value *> out;
  for (unsigned i = 0; i < c.size(); ++i)
    out.push_back(b.CreateExtractElement(d, b.getInt32(i)));
  return out;
}

} // namespace tessera::rocm
