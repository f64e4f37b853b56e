// Where the Shader (Vulkan) and Kernel (Level Zero) flavours of the lowering differ: the
// Kernel entry point's parameters (backends/levelzero/levelzero_abi.h), buffer addressing
// through CrossWorkgroup pointers, the OpenCL.std names of the extended instructions, group
// and SPV_INTEL_subgroups instructions for subgroup ops, and the f32 atomic add. Every op's
// semantics stay in the other files; this file only picks the instruction that carries them.
// Must never change the Shader flavour's output.
//
// Kernel subgroup ops (OpGroup*, OpSubgroupShuffle*INTEL) are defined only when every
// work-item of the subgroup reaches them (subgroup-uniform control flow), as OpenCL's
// sub_group_* and intel_sub_group_shuffle are; docs/ir.md asks the same of the IR's subgroup
// ops, so a valid IR kernel meets it.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>
#include <spirv/unified1/OpenCL.std.h>

#include <cassert>

namespace tessera::spirv::detail {

using ir::Scalar;

uint32_t openclInst(uint32_t inst) {
  switch (inst) {
  case GLSLstd450FAbs:
    return OpenCLLIB::Fabs;
  case GLSLstd450Floor:
    return OpenCLLIB::Floor;
  case GLSLstd450Ceil:
    return OpenCLLIB::Ceil;
  case GLSLstd450Trunc:
    return OpenCLLIB::Trunc;
  case GLSLstd450RoundEven:
    // Not OpenCL's `round` (half away from zero): rint in the default rounding mode
    // (to nearest even) is the IR's `round` (docs/ir.md) and GLSL's RoundEven.
    return OpenCLLIB::Rint;
  case GLSLstd450Fma:
    return OpenCLLIB::Fma; // correctly rounded in OpenCL (GLSL's may be split)
  case GLSLstd450Sqrt:
    return OpenCLLIB::Sqrt;
  case GLSLstd450InverseSqrt:
    return OpenCLLIB::Rsqrt;
  case GLSLstd450Exp:
    return OpenCLLIB::Exp;
  case GLSLstd450Exp2:
    return OpenCLLIB::Exp2;
  case GLSLstd450Log:
    return OpenCLLIB::Log;
  case GLSLstd450Log2:
    return OpenCLLIB::Log2;
  case GLSLstd450Sin:
    return OpenCLLIB::Sin;
  case GLSLstd450Cos:
    return OpenCLLIB::Cos;
  case GLSLstd450Tan:
    return OpenCLLIB::Tan;
  case GLSLstd450Pow:
    return OpenCLLIB::Pow; // the lowering handles pow's special values around it either way
  default:
    // FMin/FMax and the packing instructions are never asked for in the Kernel flavour
    // (min/max are exact IEEE selects, scalar f16 parameters are bits): a new use must be
    // mapped above with its semantics checked, not passed through.
    assert(false && "GLSL.std.450 instruction without an OpenCL.std mapping");
    return OpenCLLIB::Fabs;
  }
}

bool builtinIsSizeT(spv::BuiltIn bi) {
  switch (bi) {
  case spv::BuiltInGlobalInvocationId:
  case spv::BuiltInLocalInvocationId:
  case spv::BuiltInLocalInvocationIndex:
  case spv::BuiltInWorkgroupId:
  case spv::BuiltInNumWorkgroups:
  case spv::BuiltInWorkgroupSize:
  case spv::BuiltInGlobalSize:
  case spv::BuiltInGlobalOffset:
    return true;
  default:
    return false; // SubgroupSize, SubgroupId, SubgroupLocalInvocationId: uint
  }
}

std::string Lowering::capsFieldName(const char *field) const {
  std::string f(field);
  if (!kernel_)
    return "caps." + f;
  // The fields the Level Zero target fills from its record (LevelZeroCaps::lowering); the
  // others are true on every Level Zero device.
  if (f == "float64")
    return "levelzero.fp64";
  if (f == "shaderBufferInt64Atomics" || f == "shaderSharedInt64Atomics")
    return "levelzero.int64Atomics";
  if (f == "maxComputeSharedMemorySize")
    return "levelzero.maxSharedBytes";
  if (f == "subgroupSize")
    return "levelzero.subgroupSize";
  return "caps." + f;
}

void Lowering::noContraction(Id r) {
  if (!kernel_)
    b_.decorate(r, spv::DecorationNoContraction);
}

spv::Op Lowering::groupOp(spv::Op nonUniform) const {
  if (!kernel_)
    return nonUniform;
  switch (nonUniform) {
  case spv::OpGroupNonUniformIAdd:
    return spv::OpGroupIAdd;
  case spv::OpGroupNonUniformFAdd:
    return spv::OpGroupFAdd;
  case spv::OpGroupNonUniformSMin:
    return spv::OpGroupSMin;
  case spv::OpGroupNonUniformUMin:
    return spv::OpGroupUMin;
  case spv::OpGroupNonUniformFMin:
    return spv::OpGroupFMin; // ignores NaN lanes (fmin); the caller settles zeros and NaN
  case spv::OpGroupNonUniformSMax:
    return spv::OpGroupSMax;
  case spv::OpGroupNonUniformUMax:
    return spv::OpGroupUMax;
  case spv::OpGroupNonUniformFMax:
    return spv::OpGroupFMax;
  case spv::OpGroupNonUniformAny:
    return spv::OpGroupAny;
  case spv::OpGroupNonUniformAll:
    return spv::OpGroupAll;
  default:
    assert(false && "no Kernel group instruction for this GroupNonUniform one");
    return nonUniform;
  }
}

Id Lowering::subgroupShuffle(Id T, Id x, Id lane, bool isXor) {
  if (!kernel_) {
    b_.capability(spv::CapabilityGroupNonUniformShuffle);
    return b_.op(isXor ? spv::OpGroupNonUniformShuffleXor : spv::OpGroupNonUniformShuffle, T,
                 {constU32(spv::ScopeSubgroup), x, lane});
  }
  subgroupsUsed_ = true;
  // OpenCL has no core shuffle; SPV_INTEL_subgroups' (intel_sub_group_shuffle[_xor]) is
  // what Level Zero devices take. No scope operand: always the subgroup.
  b_.capability(spv::CapabilitySubgroupShuffleINTEL);
  b_.extension("SPV_INTEL_subgroups");
  return b_.op(isXor ? spv::OpSubgroupShuffleXorINTEL : spv::OpSubgroupShuffleINTEL, T, {x, lane});
}

Id Lowering::bufferCount32(const MemRef &m) {
  if (!kernel_)
    return b_.op(spv::OpArrayLength, u32T(), {m.var, 0});
  Id i64 = b_.typeInt(64);
  Id max = constInt(i64, UINT32_MAX);
  Id big = b_.op(spv::OpUGreaterThan, boolT(), {m.length, max});
  return b_.op(spv::OpUConvert, u32T(), {b_.op(spv::OpSelect, i64, {big, max, m.length})});
}

Id Lowering::bufferElementPtr(const MemRef &m, Id index, bool wide) {
  Id memT = memType(m.elem);
  if (!kernel_)
    return b_.op(spv::OpAccessChain, b_.typePointer(spv::StorageClassStorageBuffer, memT),
                 {m.var, constU32(0), index});
  // Element indices of a pointer access chain are signed: a 32-bit IR index (signed, as
  // docs/ir.md says) is sign-extended, never read as a huge unsigned one.
  Id i = wide ? index : b_.op(spv::OpSConvert, b_.typeInt(64), {index});
  return b_.op(spv::OpInBoundsPtrAccessChain, b_.typePointer(spv::StorageClassCrossWorkgroup, memT),
               {m.var, i});
}

namespace {

/// The parameter type that carries scalar `s` by value (levelzero_abi.h).
Id abiScalarType(Lowering &L, Scalar s) {
  switch (s) {
  case Scalar::I1:
    return L.b_.typeInt(8);
  case Scalar::F16:
  case Scalar::BF16:
    return L.b_.typeInt(16);
  default:
    return L.regType(s);
  }
}

} // namespace

Id Lowering::beginKernelFunction(const ir::Function &f) {
  // Types first (they may fail on the caps), then OpFunction and its parameters, which must
  // precede every other instruction of the function.
  Id u8 = b_.typeInt(8), i64 = b_.typeInt(64), u32 = u32T();
  Id bytePtr = b_.typePointer(spv::StorageClassCrossWorkgroup, u8);
  std::vector<Id> types;
  std::vector<std::string> names;
  for (const ir::Value *p : f.params()) {
    if (p->type.kind == ir::Type::Kind::Buffer) {
      types.insert(types.end(), {bytePtr, i64, i64});
      names.insert(names.end(), {p->name, p->name + "_offset", p->name + "_bytes"});
      continue;
    }
    if (!p->type.isScalar())
      return fail("parameter %" + p->name + " of type " + ir::toString(p->type) +
                  " cannot be a kernel parameter on " + targetName());
    if (!checkScalar(p->type.elem))
      return 0;
    types.push_back(abiScalarType(*this, p->type.elem));
    names.push_back(p->name);
  }
  types.insert(types.end(), {u32, u32, u32, b_.typePointer(spv::StorageClassCrossWorkgroup, u32)});
  names.insert(names.end(), {"local_size_x", "local_size_y", "local_size_z", "tsr_control"});
  Id voidT = b_.typeVoid();
  Id fn = b_.beginFunction(voidT, b_.typeFunction(voidT, types));
  kparams_.clear();
  for (size_t k = 0; k < types.size(); ++k) {
    kparams_.push_back(b_.functionParameter(types[k]));
    if (!names[k].empty())
      b_.name(kparams_.back(), names[k]);
  }
  size_t n = kparams_.size();
  for (uint32_t d = 0; d < 3; ++d)
    wgDims_[d] = kparams_[n - 4 + d];
  control_ = kparams_[n - 1];
  return fn;
}

bool Lowering::declareKernelParams(const ir::Function &f, KernelInfo &info) {
  Id u8 = b_.typeInt(8), i64 = b_.typeInt(64);
  size_t k = 0;
  for (const ir::Value *p : f.params()) {
    info.params.push_back(p->type);
    info.paramOffsets.push_back(0);
    if (p->type.kind != ir::Type::Kind::Buffer) {
      Id raw = kparams_[k++];
      Id v = raw;
      switch (p->type.elem) {
      case Scalar::I1:
        v = b_.op(spv::OpINotEqual, boolT(), {raw, constInt(u8, 0)});
        break;
      case Scalar::F16: // exact: every half is an f32
        v = f16BitsToF32(b_.op(spv::OpUConvert, u32T(), {raw}));
        break;
      case Scalar::BF16:
        v = bf16BitsToF32(b_.op(spv::OpUConvert, u32T(), {raw}));
        break;
      default:
        break;
      }
      define(p, v);
      continue;
    }
    Id base = kparams_[k], offset = kparams_[k + 1], bytes = kparams_[k + 2];
    k += 3;
    if (!checkStorage(p->type.elem, false))
      return false;
    // The view: base + offset bytes, as a pointer to its elements; its length in elements
    // (a partial trailing element is not part of the view).
    Id memT = memType(p->type.elem);
    Id first = b_.op(spv::OpInBoundsPtrAccessChain,
                     b_.typePointer(spv::StorageClassCrossWorkgroup, u8), {base, offset});
    MemRef m{p, 0, p->type.elem, false, 0, 0};
    m.var = b_.op(spv::OpBitcast, b_.typePointer(spv::StorageClassCrossWorkgroup, memT), {first});
    m.length = b_.op(spv::OpUDiv, i64, {bytes, constInt(i64, ir::byteSize(p->type.elem))});
    if (!p->name.empty())
      b_.name(m.var, p->name + "_view");
    mems_[p] = m;
  }
  return true;
}

Id Lowering::atomicFAddLoop(Id ptr, spv::StorageClass sc, Id scope, Id v) {
  // OpenCL has no f32 atomic add without an extension the device may lack
  // (SPV_EXT_shader_atomic_float_add): add on the bits with compare-exchange until no other
  // work-item changed them in between; the value seen before the add is the op's result.
  Id u32 = u32T(), f32 = f32T();
  Id relaxed = constU32(spv::MemorySemanticsMaskNone);
  Id bits = b_.op(spv::OpBitcast, b_.typePointer(sc, u32), {ptr});
  Id init = b_.op(spv::OpAtomicLoad, u32, {bits, scope, relaxed});
  LoopBlocks l = b_.beginLoop();
  PhiRef expected = b_.phi(u32, {{init, l.preheader}});
  b_.loopHeaderEnd(l, 0);
  Id sum = b_.op(spv::OpFAdd, f32, {b_.op(spv::OpBitcast, f32, {expected.id}), v});
  Id seen = b_.op(spv::OpAtomicCompareExchange, u32,
                  {bits, scope, relaxed, relaxed, b_.op(spv::OpBitcast, u32, {sum}), expected.id});
  b_.breakUnless(l, b_.op(spv::OpINotEqual, boolT(), {seen, expected.id}));
  b_.beginContinue(l);
  b_.addIncoming(expected, seen, l.cont);
  b_.endLoop(l);
  return b_.op(spv::OpBitcast, f32, {expected.id});
}

Id Lowering::f32ToF16Bits(Id v, int mode) {
  // On the bits: the half result is trunc = (exponent part) + (significand >> s), with s = 13
  // for normal halves and more for subnormal ones, plus one when the bits shifted out round
  // it up in `mode`; a carry into the exponent is the right next value (up to infinity).
  Id u32 = u32T();
  auto op = [&](spv::Op o, Id x, Id y) { return b_.op(o, u32, {x, y}); };
  auto cmp = [&](spv::Op o, Id x, Id y) { return b_.op(o, boolT(), {x, y}); };
  auto sel = [&](Id c, Id x, Id y) { return b_.op(spv::OpSelect, u32, {c, x, y}); };
  auto land = [&](Id x, Id y) { return b_.op(spv::OpLogicalAnd, boolT(), {x, y}); };
  auto lor = [&](Id x, Id y) { return b_.op(spv::OpLogicalOr, boolT(), {x, y}); };
  Id x = b_.op(spv::OpBitcast, u32, {v});
  Id sign = op(spv::OpBitwiseAnd, op(spv::OpShiftRightLogical, x, constU32(16)), constU32(0x8000));
  Id negative = cmp(spv::OpINotEqual, sign, constU32(0));
  Id a = op(spv::OpBitwiseAnd, x, constU32(0x7fffffff));
  Id e = op(spv::OpShiftRightLogical, a, constU32(23));
  Id frac = op(spv::OpBitwiseAnd, a, constU32(0x7fffff));
  Id normal = cmp(spv::OpINotEqual, e, constU32(0));
  Id m = sel(normal, op(spv::OpBitwiseOr, frac, constU32(0x800000)), frac);
  // s = clamp(126 - e, 13, 31): e is at most 254 here, so 126 - e is computed signed.
  Id sRaw = op(spv::OpISub, constU32(126), e);
  Id s = sel(b_.op(spv::OpSLessThan, boolT(), {sRaw, constU32(13)}), constU32(13), sRaw);
  s = sel(cmp(spv::OpUGreaterThan, s, constU32(31)), constU32(31), s);
  Id hi = sel(cmp(spv::OpUGreaterThanEqual, e, constU32(113)),
              op(spv::OpShiftLeftLogical, op(spv::OpISub, e, constU32(113)), constU32(10)),
              constU32(0));
  Id trunc = op(spv::OpIAdd, hi, op(spv::OpShiftRightLogical, m, s));
  Id one = constU32(1);
  Id rem = op(spv::OpBitwiseAnd, m, op(spv::OpISub, op(spv::OpShiftLeftLogical, one, s), one));
  Id halfway = op(spv::OpShiftLeftLogical, one, op(spv::OpISub, s, one));
  Id inexact = cmp(spv::OpINotEqual, rem, constU32(0));
  Id up = b_.constBool(false);
  switch (mode) {
  case 0: // to nearest, ties to even
    up = lor(cmp(spv::OpUGreaterThan, rem, halfway),
             land(cmp(spv::OpIEqual, rem, halfway),
                  cmp(spv::OpINotEqual, op(spv::OpBitwiseAnd, trunc, one), constU32(0))));
    break;
  case 2: // toward +inf
    up = land(inexact, b_.op(spv::OpLogicalNot, boolT(), {negative}));
    break;
  case 3: // toward -inf
    up = land(inexact, negative);
    break;
  default: // toward zero
    break;
  }
  Id r = op(spv::OpIAdd, trunc, sel(up, one, constU32(0)));
  // |v| >= 2^16: infinity, or the largest finite half where the mode rounds toward zero.
  Id towardZero = mode == 1   ? b_.constBool(true)
                  : mode == 2 ? negative
                  : mode == 3 ? b_.op(spv::OpLogicalNot, boolT(), {negative})
                              : b_.constBool(false);
  Id overflow = sel(towardZero, constU32(0x7bff), constU32(0x7c00));
  r = sel(cmp(spv::OpUGreaterThanEqual, e, constU32(143)), overflow, r);
  // NaN stays a quiet NaN with the top of its payload; infinity stays infinity.
  Id nan =
      op(spv::OpBitwiseOr, constU32(0x7e00),
         op(spv::OpBitwiseAnd, op(spv::OpShiftRightLogical, a, constU32(13)), constU32(0x3ff)));
  r = sel(cmp(spv::OpUGreaterThan, a, constU32(0x7f800000)), nan, r);
  r = sel(cmp(spv::OpIEqual, a, constU32(0x7f800000)), constU32(0x7c00), r);
  return op(spv::OpBitwiseOr, r, sign);
}

Id Lowering::f16BitsToF32(Id bits32) {
  // Normal and special halves by moving the fields; subnormal ones (and zero) as an exact
  // product hm * 2^-24, which is a normal f32 (never flushed).
  Id u32 = u32T(), f32 = f32T();
  auto op = [&](spv::Op o, Id x, Id y) { return b_.op(o, u32, {x, y}); };
  Id h = op(spv::OpBitwiseAnd, bits32, constU32(0xffff));
  Id sign = op(spv::OpShiftLeftLogical, op(spv::OpBitwiseAnd, h, constU32(0x8000)), constU32(16));
  Id he = op(spv::OpShiftRightLogical, op(spv::OpBitwiseAnd, h, constU32(0x7c00)), constU32(10));
  Id hm = op(spv::OpBitwiseAnd, h, constU32(0x3ff));
  Id normal = op(spv::OpBitwiseOr,
                 op(spv::OpShiftLeftLogical, op(spv::OpIAdd, he, constU32(112)), constU32(23)),
                 op(spv::OpShiftLeftLogical, hm, constU32(13)));
  Id special =
      op(spv::OpBitwiseOr, constU32(0x7f800000), op(spv::OpShiftLeftLogical, hm, constU32(13)));
  Id small = b_.op(
      spv::OpBitcast, u32,
      {b_.op(spv::OpFMul, f32, {b_.op(spv::OpConvertUToF, f32, {hm}), constFloat(f32, 0x1p-24)})});
  Id r = b_.op(spv::OpSelect, u32,
               {b_.op(spv::OpIEqual, boolT(), {he, constU32(31)}), special, normal});
  r = b_.op(spv::OpSelect, u32, {b_.op(spv::OpIEqual, boolT(), {he, constU32(0)}), small, r});
  return b_.op(spv::OpBitcast, f32, {op(spv::OpBitwiseOr, r, sign)});
}

Id Lowering::f64ToF32Odd(Id d) {
  // Rounded to nearest, then, when inexact with an even last bit, moved one step toward d
  // (on the bits: away from zero when |d| is the larger). Infinity from a finite d becomes
  // the largest finite float (odd), which every narrower rounding still takes to infinity.
  Id f32 = f32T(), f64 = b_.typeFloat(64), u32 = u32T();
  Id f = b_.op(spv::OpFConvert, f32, {d});
  Id back = b_.op(spv::OpFConvert, f64, {f});
  Id inexact = b_.op(spv::OpFOrdNotEqual, boolT(), {back, d}); // false for NaN
  Id bits = b_.op(spv::OpBitcast, u32, {f});
  Id even = b_.op(spv::OpIEqual, boolT(),
                  {b_.op(spv::OpBitwiseAnd, u32, {bits, constU32(1)}), constU32(0)});
  Id larger = b_.op(spv::OpFOrdGreaterThan, boolT(),
                    {glsl(f64, GLSLstd450FAbs, {d}), glsl(f64, GLSLstd450FAbs, {back})});
  Id moved = b_.op(spv::OpSelect, u32,
                   {larger, b_.op(spv::OpIAdd, u32, {bits, constU32(1)}),
                    b_.op(spv::OpISub, u32, {bits, constU32(1)})});
  Id odd =
      b_.op(spv::OpSelect, u32, {b_.op(spv::OpLogicalAnd, boolT(), {inexact, even}), moved, bits});
  return b_.op(spv::OpBitcast, f32, {odd});
}

} // namespace tessera::spirv::detail
