// Conversions and bitcasts of the OpenCL C codegen (docs/ir.md "Conversions").
//
// Every conversion rounds once: f16 results through vstore_half_r* from the widest source
// (float or double), bf16 results from the source truncated to f32 plus a sticky bit
// (tsr_bf16), f32 through convert_float_r*; float -> int rounds with rint / trunc / ceil /
// floor, then saturates by compares (NaN gives 0), so nothing relies on the device's
// out-of-range conversion behaviour. Must never round twice where the reference rounds once.
#include "backends/opencl/codegen/oc_emitter.h"

#include <algorithm>

namespace tessera::opencl::detail {

using ir::Round;
using ir::Scalar;

namespace {

/// The OpenCL suffix of a rounding mode: the IR's own names (rte, rtz, rtp, rtn).
std::string modeName(Round r, Round dflt) {
  return std::string(ir::roundName(r == Round::Default ? dflt : r));
}

int modeIndex(Round r) { // tsr_bf16's mode argument
  switch (r) {
  case Round::Rtz:
    return 1;
  case Round::Rtp:
    return 2;
  case Round::Rtn:
    return 3;
  default:
    return 0;
  }
}

/// 2^e as a C float / double literal.
std::string pow2(int e, bool dbl) { return "0x1p" + std::to_string(e) + (dbl ? "" : "f"); }

} // namespace

std::string Emitter::convertExpr(const ir::Mods &m, Scalar s, Scalar d, const std::string &x) {
  bool srcInt = ir::isIntScalar(s), dstInt = ir::isIntScalar(d);
  std::string D = regType(d);
  if (srcInt && dstInt) {
    if (d == Scalar::I1)
      return "(" + x + " != 0)";
    int ws = ir::bitWidth(s), wd = ir::bitWidth(d);
    if (s == Scalar::I1 || m.isUnsigned) {
      std::string ux = "(" + unsignedType(s) + ")" + x;
      if (m.sat && wd < ws)
        return "(" + D + ")convert_" + unsignedType(d) + "_sat(" + ux + ")";
      return "(" + D + ")" + ux;
    }
    if (m.sat && wd < ws)
      return "convert_" + D + "_sat(" + x + ")";
    return "(" + D + ")" + x;
  }
  if (srcInt) { // int -> float
    std::string src = s == Scalar::I1 ? "(uchar)" + x
                      : m.isUnsigned  ? "(" + unsignedType(s) + ")" + x
                                      : x;
    std::string mode = modeName(m.round, Round::Rte);
    std::string r;
    if (d == Scalar::F32 || d == Scalar::F64) {
      r = "convert_" + D + "_" + mode + "(" + src + ")";
    } else if (d == Scalar::F16) {
      // Through f32 in the same mode: an integer that f32 rounds is >= 2^24, past f16's range
      // whatever the rounding, so the two roundings give the one of the reference.
      std::string h = std::string("tsr_f16_") + mode + "_float";
      need(h);
      r = h + "(convert_float_" + mode + "(" + src + "))";
    } else { // bf16: truncate to f32, then one rounding with the sticky bit
      std::string t = fresh(), st = fresh();
      std::string S = s == Scalar::I1 ? "uchar" : m.isUnsigned ? unsignedType(s) : regType(s);
      line("float " + t + " = convert_float_rtz(" + src + ");");
      line("int " + st + " = convert_" + S + "(" + t + ") != " + src + ";");
      need("tsr_bf16");
      r = "tsr_bf16(" + t + ", " + st + ", " + std::to_string(modeIndex(m.round)) + ")";
    }
    if (m.sat && d == Scalar::F16) {
      need("tsr_f16_sat");
      r = "tsr_f16_sat(" + r + ", 0)";
    }
    return r; // bf16, f32 and f64 hold every integer's magnitude: .sat changes nothing
  }
  if (dstInt) { // float -> int: round, saturate, NaN -> 0
    bool dbl = s == Scalar::F64;
    if (d == Scalar::I1)
      return "(!isnan(" + x + ") && " + x + " != 0)";
    const char *fn = "trunc";
    switch (m.round) {
    case Round::Rte:
      fn = "rint";
      break;
    case Round::Rtp:
      fn = "ceil";
      break;
    case Round::Rtn:
      fn = "floor";
      break;
    default:
      break;
    }
    std::string t = fresh(), ft = dbl ? "double " : "float ";
    if (m.round == Round::Rte) // PoCL's rint of a compile-time 1e10 made the kernel take its
      // cancellation exit (a false deadline); a value past 2^23 (2^52) is an integer already
      line(ft + t + " = fabs(" + x + ") < " + (dbl ? "0x1p52" : "0x1p23f") + " ? rint(" + x +
           ") : " + x + ";");
    else
      line(ft + t + " = " + fn + "(" + x + ");");
    int w = ir::bitWidth(d);
    // The value converted is always in range (0 otherwise): a conversion out of range is
    // undefined in C, and with a compile-time NaN or 1e10 PoCL's optimiser made the whole
    // expression INT_MIN, or jumped to the kernel's cancellation exit (a false deadline).
    std::string safe = fresh(), z = dbl ? "0.0" : "0.0f";
    if (m.isUnsigned) {
      std::string U = unsignedType(d);
      line(ft + safe + " = " + t + " > 0 && " + t + " < " + pow2(w, dbl) + " ? " + t + " : " + z +
           ";");
      return "(" + D + ")(isnan(" + t + ") || " + t + " <= 0 ? (" + U + ")0 : " + t +
             " >= " + pow2(w, dbl) + " ? (" + U + ")" + intLiteral(d, ~0ull) + " : (" + U + ")" +
             safe + ")";
    }
    uint64_t signBit = 1ull << (static_cast<unsigned>(std::clamp(w, 1, 64)) - 1);
    line(ft + safe + " = " + t + " >= -" + pow2(w - 1, dbl) + " && " + t + " < " +
         pow2(w - 1, dbl) + " ? " + t + " : " + z + ";");
    return "(isnan(" + t + ") ? (" + D + ")0 : " + t + " < -" + pow2(w - 1, dbl) + " ? " +
           intLiteral(d, signBit) + " : " + t + " >= " + pow2(w - 1, dbl) + " ? " +
           intLiteral(d, signBit - 1) + " : (" + D + ")" + safe + ")";
  }
  // float -> float
  if (s == d)
    return x;
  std::string mode = modeName(m.round, Round::Rte);
  std::string r;
  bool widening = (d == Scalar::F64) || (d == Scalar::F32 && s != Scalar::F64);
  if (widening)
    return d == Scalar::F64 ? "(double)" + x : x; // exact
  std::string srcT = s == Scalar::F64 ? "double" : "float";
  if (d == Scalar::F32) {
    r = std::string("convert_float_") + mode + "(" + x + ")";
  } else if (d == Scalar::F16) {
    std::string h = std::string("tsr_f16_") + mode + "_" + srcT;
    need(h);
    r = h + "(" + x + ")";
  } else if (s == Scalar::F64) {
    need("tsr_bf16_double");
    r = "tsr_bf16_double(" + x + ", " + std::to_string(modeIndex(m.round)) + ")";
  } else {
    need("tsr_bf16");
    r = "tsr_bf16(" + x + ", 0, " + std::to_string(modeIndex(m.round)) + ")";
  }
  if (m.sat) {
    if (d == Scalar::F32)
      r = "(isinf(" + r + ") && !isinf(" + x + ") ? copysign(FLT_MAX, " + r + ") : " + r + ")";
    else {
      std::string h = d == Scalar::F16 ? "tsr_f16_sat" : "tsr_bf16_sat";
      need(h);
      r = h + "(" + r + ", isinf(" + x + "))";
    }
  }
  return r;
}

bool Emitter::emitConvert(const ir::Op &op) {
  Scalar s = op.operands[0]->type.elem, d = op.result()->type.elem;
  std::string x = val(op.operands[0]);
  def(op.result(), convertExpr(op.mods, s, d, x));
  return true;
}

bool Emitter::emitBitcast(const ir::Op &op) {
  Scalar s = op.operands[0]->type.elem, d = op.result()->type.elem;
  std::string x = val(op.operands[0]);
  // The bits of the source as an unsigned integer of its width.
  std::string bits;
  switch (s) {
  case Scalar::F16:
    need("tsr_f16_bits");
    bits = "tsr_f16_bits(" + x + ")";
    break;
  case Scalar::BF16:
    bits = "(ushort)(as_uint(" + x + ") >> 16)";
    break;
  case Scalar::F32:
    bits = "as_uint(" + x + ")";
    break;
  case Scalar::F64:
    bits = "as_ulong(" + x + ")";
    break;
  default:
    bits = "(" + unsignedType(s) + ")" + x;
    break;
  }
  std::string e;
  switch (d) {
  case Scalar::F16:
    need("tsr_f16_from_bits");
    e = "tsr_f16_from_bits(" + bits + ")";
    break;
  case Scalar::BF16:
    e = "as_float((uint)" + bits + " << 16)"; // exact, NaN bits included (docs/ir.md)
    break;
  case Scalar::F32:
    e = "as_float(" + bits + ")";
    break;
  case Scalar::F64:
    e = "as_double(" + bits + ")";
    break;
  default:
    e = "(" + regType(d) + ")" + bits;
    break;
  }
  def(op.result(), e);
  return true;
}

} // namespace tessera::opencl::detail
