// Scalar ops of the OpenCL C codegen: constants, arithmetic, bitwise ops, shifts, compares,
// select, predicates and the math ops left native.
//
// Integer arithmetic is done in the unsigned type of its width (wrapping is then defined in
// C), signedness comes from casts, shifts mask their amount to the width, and division
// follows the defined-result rule in every mode (checked mode also records the fault). Float
// results of f16 / bf16 ops are computed in f32 and rounded once; f32 div and sqrt are the
// device's (PoCL's are correctly rounded) except under strict, where they go through f64.
#include "backends/opencl/codegen/oc_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessera::opencl::detail {

using ir::CmpPred;
using ir::OpKind;
using ir::Scalar;

std::string Emitter::rounded(Scalar t, const std::string &expr) {
  if (t == Scalar::F16) {
    need("tsr_f16_rte_float");
    return "tsr_f16_rte_float(" + expr + ")";
  }
  if (t == Scalar::BF16) {
    need("tsr_bf16");
    return "tsr_bf16(" + expr + ", 0, 0)";
  }
  return expr;
}

std::string Emitter::intLiteral(Scalar t, uint64_t bits) const {
  int w = ir::bitWidth(t);
  if (t == Scalar::I1)
    return (bits & 1) ? "true" : "false";
  uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
  bits &= mask;
  int64_t v = static_cast<int64_t>(bits);
  if (w < 64 && (bits >> (w - 1)) & 1)
    v = static_cast<int64_t>(bits | ~mask); // sign-extend
  if (v > -1000000 && v < 1000000)
    return "(" + regType(t) + ")" + std::to_string(v) + (w == 64 ? "l" : "");
  char buf[40];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bits));
  return "(" + regType(t) + ")" + buf + (w == 64 ? "ul" : "u");
}

std::string Emitter::floatLiteral(Scalar t, double x) {
  bool dbl = t == Scalar::F64;
  if (std::isnan(x))
    return dbl ? "as_double(0x7FF8000000000000ul)" : "as_float(0x7FC00000u)";
  if (std::isinf(x))
    return std::string(x < 0 ? "-" : "") + (dbl ? "(double)INFINITY" : "INFINITY");
  char buf[64];
  if (!dbl) {
    float f = static_cast<float>(x);
    if (f == std::trunc(f) && std::fabs(f) < 1e6f)
      std::snprintf(buf, sizeof buf, "%.1ff", static_cast<double>(f));
    else
      std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
    return buf;
  }
  if (x == std::trunc(x) && std::fabs(x) < 1e6)
    std::snprintf(buf, sizeof buf, "%.1f", x);
  else
    std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

namespace {

std::string floatSuffix(Scalar t) { return t == Scalar::F64 ? "double" : "float"; }

/// The C operator of a compare, and whether it is the unordered (negated) form.
bool floatCompare(CmpPred p, std::string *cop, bool *negate) {
  *negate = false;
  switch (p) {
  case CmpPred::Oeq:
    *cop = "==";
    return true;
  case CmpPred::Olt:
    *cop = "<";
    return true;
  case CmpPred::Ole:
    *cop = "<=";
    return true;
  case CmpPred::Ogt:
    *cop = ">";
    return true;
  case CmpPred::Oge:
    *cop = ">=";
    return true;
  case CmpPred::Une:
    *cop = "!=";
    return true;
  // unordered: not the opposite ordered compare
  case CmpPred::Ult:
  case CmpPred::FUlt:
    *cop = ">=";
    *negate = true;
    return true;
  case CmpPred::Ule:
  case CmpPred::FUle:
    *cop = ">";
    *negate = true;
    return true;
  case CmpPred::Ugt:
  case CmpPred::FUgt:
    *cop = "<=";
    *negate = true;
    return true;
  case CmpPred::Uge:
  case CmpPred::FUge:
    *cop = "<";
    *negate = true;
    return true;
  default:
    return false;
  }
}

} // namespace

bool Emitter::emitScalar(const ir::Op &op) {
  const ir::Value *r = op.result();
  Scalar t = r->type.elem;
  bool isFloat = ir::isFloatScalar(t);
  std::vector<std::string> a;
  for (const ir::Value *v : op.operands)
    a.push_back(val(v));
  // A library call whose operands are all compile-time constants reads them through volatile
  // copies: PoCL's optimiser folded such calls through code that is undefined for NaN or inf
  // (floor / trunc / exp of a constant NaN lost its store, rint of inf and pow(1, NaN) made
  // the kernel take its cancellation exit: a false DEADLINE_EXCEEDED). At run time the same
  // values are handled (a loaded NaN, or a select of constants, gives the right result).
  bool libraryCall = op.kind == OpKind::Floor || op.kind == OpKind::Ceil ||
                     op.kind == OpKind::Trunc || op.kind == OpKind::Round ||
                     op.kind == OpKind::Sqrt || op.kind == OpKind::Rem ||
                     ir::isDecomposableMathOp(op.kind);
  if (isFloat && libraryCall &&
      std::all_of(op.operands.begin(), op.operands.end(),
                  [](const ir::Value *v) { return isConst(v); })) {
    for (size_t i = 0; i < a.size(); ++i) {
      std::string o = fresh();
      line("volatile " + regType(op.operands[i]->type.elem) + " " + o + " = " + a[i] + ";");
      a[i] = o;
    }
  }
  std::string T = regType(t);
  std::string U = unsignedType(t);
  // wrapping integer ops in the unsigned type of the width (i8 / i16 / i32 through uint)
  std::string W = ir::bitWidth(t) == 64 ? "ulong" : "uint";
  auto wrap = [&](const std::string &o) {
    return "(" + T + ")((" + W + ")" + a[0] + " " + o + " (" + W + ")" + a[1] + ")";
  };
  std::string e;
  switch (op.kind) {
  case OpKind::Const:
    e = isFloat ? floatLiteral(t, op.literal.f) : intLiteral(t, op.literal.i);
    break;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul: {
    const char *o = op.kind == OpKind::Add ? "+" : op.kind == OpKind::Sub ? "-" : "*";
    if (nswAdds_.count(&op)) // a signed add proved not to overflow (oc_for.cpp)
      e = "(" + a[0] + " + " + a[1] + ")";
    else
      e = isFloat ? rounded(t, a[0] + " " + o + " " + a[1]) : wrap(o);
    break;
  }
  case OpKind::Div:
  case OpKind::Rem: {
    bool isDiv = op.kind == OpKind::Div;
    if (isFloat) {
      if (!isDiv)
        e = "fmod(" + a[0] + ", " + a[1] + ")"; // exact
      else if (t != Scalar::F64 && opts_.strict && opts_.caps.fp64)
        // correctly rounded: the f64 quotient of two f32 values rounded once more to f32 (or
        // f16 / bf16) is innocuous (53 >= 2p + 2)
        e = rounded(t, "(float)((double)" + a[0] + " / (double)" + a[1] + ")");
      else
        e = rounded(t, a[0] + " / " + a[1]);
      break;
    }
    // Integer division: a zero divisor, and -1 dividing MIN (signed), become 1.
    bool u = op.mods.isUnsigned;
    std::string zero = "(" + a[1] + " == 0)";
    std::string ovf;
    if (!u) {
      uint64_t minBits = 1ull << (ir::bitWidth(t) - 1);
      ovf = "(" + a[0] + " == " + intLiteral(t, minBits) + " && " + a[1] + " == (" + T + ")-1)";
    }
    if (checked()) {
      need("tsr_fault");
      line("if " + zero);
      line("  " + faultCall("5u /* TSR_FAULT_DIVISION_BY_ZERO */", UINT32_MAX, "0", "0"));
      if (!u) {
        line("if " + ovf);
        line("  " + faultCall("6u /* TSR_FAULT_DIVISION_OVERFLOW */", UINT32_MAX, "0", "0"));
      }
    }
    std::string bad = u ? zero : "(" + zero + " || " + ovf + ")";
    std::string d = fresh();
    line(T + " " + d + " = " + bad + " ? (" + T + ")1 : " + a[1] + ";");
    const char *o = isDiv ? "/" : "%";
    e = u ? "(" + T + ")((" + U + ")" + a[0] + " " + o + " (" + U + ")" + d + ")"
          : "(" + T + ")(" + a[0] + " " + o + " " + d + ")";
    break;
  }
  case OpKind::Min:
  case OpKind::Max: {
    bool isMin = op.kind == OpKind::Min;
    if (isFloat) {
      std::string h = std::string(isMin ? "tsr_minnum_" : "tsr_maxnum_") + floatSuffix(t);
      need(h);
      e = h + "(" + a[0] + ", " + a[1] + ")"; // exact: no rounding needed
      break;
    }
    std::string x = a[0], y = a[1];
    if (op.mods.isUnsigned) {
      x = "(" + U + ")" + x;
      y = "(" + U + ")" + y;
    }
    e = "(" + x + (isMin ? " < " : " > ") + y + " ? " + a[0] + " : " + a[1] + ")";
    break;
  }
  case OpKind::Neg:
    e = isFloat ? "-" + a[0] : "(" + T + ")((" + W + ")0 - (" + W + ")" + a[0] + ")";
    break;
  case OpKind::Abs:
    e = isFloat ? "fabs(" + a[0] + ")"
                : "(" + T + ")(" + a[0] + " < 0 ? (" + W + ")0 - (" + W + ")" + a[0] + " : (" + W +
                      ")" + a[0] + ")";
    break;
  case OpKind::Fma:
    if (t == Scalar::F32 || t == Scalar::F64) {
      e = "fma(" + a[0] + ", " + a[1] + ", " + a[2] + ")"; // correctly rounded in OpenCL C
    } else if (opts_.caps.fp64) {
      need("tsr_fma_odd");
      std::string odd = "tsr_fma_odd(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
      if (t == Scalar::F16) {
        need("tsr_f16_rte_double");
        e = "tsr_f16_rte_double(" + odd + ")";
      } else {
        need("tsr_bf16_double");
        e = "tsr_bf16_double(" + odd + ", 0)";
      }
    } else { // without f64: rounded twice (may differ from the reference at ties)
      e = rounded(t, "fma(" + a[0] + ", " + a[1] + ", " + a[2] + ")");
    }
    break;
  case OpKind::And:
    e = t == Scalar::I1 ? a[0] + " & " + a[1] : "(" + T + ")(" + a[0] + " & " + a[1] + ")";
    break;
  case OpKind::Or:
    e = t == Scalar::I1 ? a[0] + " | " + a[1] : "(" + T + ")(" + a[0] + " | " + a[1] + ")";
    break;
  case OpKind::Xor:
    e = t == Scalar::I1 ? a[0] + " ^ " + a[1] : "(" + T + ")(" + a[0] + " ^ " + a[1] + ")";
    break;
  case OpKind::Not:
    e = t == Scalar::I1 ? "!" + a[0] : "(" + T + ")~" + a[0];
    break;
  case OpKind::Shl:
  case OpKind::Shr: {
    if (t == Scalar::I1) { // the amount modulo 1 is 0
      e = a[0];
      break;
    }
    std::string amt = "((" + W + ")" + a[1] + " & " + std::to_string(ir::bitWidth(t) - 1) + "u)";
    if (op.kind == OpKind::Shl)
      e = "(" + T + ")((" + W + ")" + a[0] + " << " + amt + ")";
    else if (op.mods.isUnsigned)
      e = "(" + T + ")((" + U + ")" + a[0] + " >> " + amt + ")";
    else
      e = "(" + T + ")(" + a[0] + " >> " + amt + ")";
    break;
  }
  case OpKind::Copysign:
    e = "copysign(" + a[0] + ", " + a[1] + ")";
    break;
  case OpKind::Floor:
    e = "floor(" + a[0] + ")";
    break;
  case OpKind::Ceil:
    e = "ceil(" + a[0] + ")";
    break;
  case OpKind::Trunc:
    e = "trunc(" + a[0] + ")";
    break;
  case OpKind::Round:
    e = "rint(" + a[0] + ")";
    break; // half to even
  case OpKind::Sqrt:
    if (t != Scalar::F64 && opts_.strict && opts_.caps.fp64)
      e = rounded(t, "(float)sqrt((double)" + a[0] + ")");
    else
      e = rounded(t, "sqrt(" + a[0] + ")");
    break;
  case OpKind::IsNan:
    e = "isnan(" + a[0] + ") != 0";
    break;
  case OpKind::IsInf:
    e = "isinf(" + a[0] + ") != 0";
    break;
  case OpKind::Cmp: {
    Scalar s = op.operands[0]->type.elem;
    CmpPred p = op.mods.pred;
    if (ir::isIntScalar(s)) {
      std::string x = a[0], y = a[1], cop;
      bool uns = p == CmpPred::Ult || p == CmpPred::Ule || p == CmpPred::Ugt || p == CmpPred::Uge;
      if (uns) {
        x = "(" + unsignedType(s) + ")" + x;
        y = "(" + unsignedType(s) + ")" + y;
      }
      switch (p) {
      case CmpPred::Eq:
        cop = "==";
        break;
      case CmpPred::Ne:
        cop = "!=";
        break;
      case CmpPred::Slt:
      case CmpPred::Ult:
        cop = "<";
        break;
      case CmpPred::Sle:
      case CmpPred::Ule:
        cop = "<=";
        break;
      case CmpPred::Sgt:
      case CmpPred::Ugt:
        cop = ">";
        break;
      case CmpPred::Sge:
      case CmpPred::Uge:
        cop = ">=";
        break;
      default:
        return fail("float predicate on integers");
      }
      e = x + " " + cop + " " + y;
      break;
    }
    std::string cop;
    bool neg = false;
    if (p == CmpPred::Ord)
      e = "!isnan(" + a[0] + ") && !isnan(" + a[1] + ")";
    else if (p == CmpPred::Uno)
      e = "isnan(" + a[0] + ") || isnan(" + a[1] + ")";
    else if (p == CmpPred::One)
      e = "(" + a[0] + " < " + a[1] + " || " + a[0] + " > " + a[1] + ")";
    else if (p == CmpPred::Ueq)
      e = "!(" + a[0] + " < " + a[1] + " || " + a[0] + " > " + a[1] + ")";
    else if (floatCompare(p, &cop, &neg))
      e = std::string(neg ? "!(" : "(") + a[0] + " " + cop + " " + a[1] + ")";
    else
      return fail("integer predicate on floats");
    break;
  }
  case OpKind::Select:
    e = a[0] + " ? " + a[1] + " : " + a[2];
    break;
  default:
    if (ir::isDecomposableMathOp(op.kind) && op.kind != OpKind::Sigmoid) {
      // Native math (nativeMath): the builtin of the same name, rounded once for f16 / bf16.
      std::string fn(op.info().name);
      std::string args = a[0] + (a.size() > 1 ? ", " + a[1] : "");
      std::string call = fn + "(" + args + ")";
      // PoCL's tanh never reaches 1: 0.99999994 at 1e30 and inf (within tanh's 5 ulp budget,
      // yet 1 + tanh(x) is then 6e-8, not 0, and a tanh GELU of -1e30 gave -3e22). Past the
      // point where tanh rounds to +-1 in the register's type (f32 above 9.01, f64 above
      // 19.07), the result is +-1 exactly.
      if (op.kind == OpKind::Tanh) {
        bool dbl = t == Scalar::F64;
        call = "(fabs(" + a[0] + ") > " + (dbl ? "19.5" : "9.5f") + " ? copysign(" +
               (dbl ? "1.0" : "1.0f") + ", " + a[0] + ") : " + call + ")";
      }
      e = rounded(t, call);
      break;
    }
    return fail("not supported by the OpenCL backend at " + std::string(ir::scalarName(t)));
  }
  def(r, e);
  return true;
}

} // namespace tessera::opencl::detail
