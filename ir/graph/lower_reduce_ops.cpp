// Scalar building blocks of the reduction kernels (lower_reduce.cpp): how a reduction
// accumulates (its accumulator type and initial value), folds one element, combines two
// partials and turns its total into the node's value. Declared in lower_reduce_ops.h.
#include "ir/graph/lower_reduce_ops.h"

#include <cmath>
#include <cstdint>

namespace tessera::graph::detail {

Red redOf(const Graph &g, const Node &n, bool f64Sums) {
  Red r;
  r.op = n.op;
  r.in = g.typeOf(n.inputs[0]).dtype;
  if (n.op == OpKind::Amax || n.op == OpKind::Amin || n.op == OpKind::Argmax)
    r.acc = r.in;
  else if (r.in == DType::F64 || (f64Sums && isFloat(r.in) && n.op != OpKind::Prod))
    r.acc = DType::F64;
  else if (isFloat(r.in))
    r.acc = DType::F32;
  else
    r.acc = DType::I64;
  r.ty = computeType(r.acc);
  return r;
}

std::string initValue(KernelText &k, const Red &r) {
  bool f = isFloat(r.acc);
  switch (r.op) {
  case OpKind::Prod:
    return emitConst(k, 1, r.acc);
  case OpKind::Amax:
  case OpKind::Argmax:
    if (f)
      return emitConst(k, -INFINITY, r.acc);
    return emitIntConst(k, r.acc == DType::I32 ? INT32_MIN : INT64_MIN, r.ty);
  case OpKind::Amin:
    if (f)
      return emitConst(k, INFINITY, r.acc);
    return emitIntConst(k, r.acc == DType::I32 ? INT32_MAX : INT64_MAX, r.ty);
  default:
    return emitConst(k, 0, r.acc);
  }
}

/// The input element converted to the accumulator type.
std::string toAcc(KernelText &k, const Red &r, const std::string &x) {
  std::string from = computeType(r.in);
  if (from == r.ty)
    return x;
  std::string c = k.fresh("ac");
  k.line(c + " = convert " + x + " : " + from + " -> " + r.ty);
  return c;
}

std::string combine(KernelText &k, const Red &r, const std::string &a, const std::string &b) {
  std::string c = k.fresh("cb");
  switch (r.op) {
  case OpKind::Prod:
    k.line(c + " = mul " + a + ", " + b + " : " + r.ty);
    return c;
  case OpKind::Amax:
  case OpKind::Amin:
    return emitMaxMin(k, r.op == OpKind::Amax, a, b, r.acc);
  default:
    k.line(c + " = add " + a + ", " + b + " : " + r.ty);
    return c;
  }
}

/// argmax: is (bv, bi) better than (av, ai)? NaN is the maximum, the first index wins ties,
/// index -1 marks an empty partial.
std::string argBetter(KernelText &k, const Red &r, const std::string &av, const std::string &ai,
                      const std::string &bv, const std::string &bi) {
  auto ln = [&](const std::string &s) {
    std::string v = k.fresh("am");
    k.line(v + " = " + s);
    return v;
  };
  bool f = isFloat(r.acc);
  std::string zero = emitIntConst(k, 0, "i64");
  std::string bValid = ln("cmp.sge " + bi + ", " + zero + " : i64");
  std::string aEmpty = ln("cmp.slt " + ai + ", " + zero + " : i64");
  std::string gt = ln(std::string(f ? "cmp.ogt " : "cmp.sgt ") + bv + ", " + av + " : " + r.ty);
  std::string eq = ln(std::string(f ? "cmp.oeq " : "cmp.eq ") + bv + ", " + av + " : " + r.ty);
  if (f) {
    std::string bn = ln("isnan " + bv + " : " + r.ty), an = ln("isnan " + av + " : " + r.ty);
    std::string notAn = ln("not " + an + " : i1");
    std::string nanWins = ln("and " + bn + ", " + notAn + " : i1");
    gt = ln("or " + gt + ", " + nanWins + " : i1");
    std::string both = ln("and " + bn + ", " + an + " : i1");
    eq = ln("or " + eq + ", " + both + " : i1");
  }
  std::string earlier = ln("cmp.slt " + bi + ", " + ai + " : i64");
  std::string tie = ln("and " + eq + ", " + earlier + " : i1");
  std::string better = ln("or " + gt + ", " + tie + " : i1");
  better = ln("or " + aEmpty + ", " + better + " : i1");
  return ln("and " + bValid + ", " + better + " : i1");
}

std::string ln(KernelText &k, const std::string &s, const char *hint) {
  std::string v = k.fresh(hint);
  k.line(v + " = " + s);
  return v;
}

/// One element `x` (in the accumulator type) folded into the running (acc[, acci]) of a row or
/// column loop, whose index is `j`: var's second pass squares its deviation from `mean`
/// first; argmax keeps the better (value, index) pair. Emits the `yield` of the loop body's
/// in-range branch and the out-of-range branch that keeps the running value.
std::pair<std::string, std::string> foldElement(KernelText &k, const Red &r, std::string x,
                                                const std::string &mean, const std::string &acc,
                                                const std::string &acci, const std::string &j,
                                                bool arg) {
  if (!mean.empty()) { // var's second pass: squared deviation from the mean
    std::string d = ln(k, "sub " + x + ", " + mean + " : " + r.ty);
    x = ln(k, "mul " + d + ", " + d + " : " + r.ty);
  }
  if (!arg)
    return {combine(k, r, acc, x), ""};
  std::string b = argBetter(k, r, acc, acci, x, j);
  return {ln(k, "select " + b + ", " + x + ", " + acc + " : " + r.ty),
          ln(k, "select " + b + ", " + j + ", " + acci + " : i64")};
}

void emitFoldElement(KernelText &k, const Red &r, std::string x, const std::string &mean,
                     const std::string &acc, const std::string &acci, const std::string &j,
                     bool arg) {
  auto [v, i] = foldElement(k, r, std::move(x), mean, acc, acci, j, arg);
  k.line("yield " + v + (arg ? ", " + i : ""));
  k.close("} else {");
  k.line("  yield " + acc + (arg ? ", " + acci : ""));
  k.line("}");
}

/// The reduction's value from its accumulated total(s), in the result's compute type and
/// rounded to its dtype. `count` is the i64 number of elements reduced; `m2` the sum of squared
/// deviations for var.
std::string finalValue(KernelText &k, const Graph &g, const Node &n, const Red &r,
                       const std::string &total, const std::string &count) {
  DType rt = n.type.dtype;
  std::string v = total;
  if (n.op == OpKind::Mean || n.op == OpKind::Var) {
    std::string cnt = ln(k, "convert " + count + " : i64 -> " + r.ty);
    if (n.op == OpKind::Var) { // divide by max(count - correction, 0): 0 gives inf or NaN
      std::string corr = emitConst(k, n.attrs.getFloat("correction", 1), r.acc);
      std::string d = ln(k, "sub " + cnt + ", " + corr + " : " + r.ty);
      std::string z = emitConst(k, 0, r.acc);
      std::string neg = ln(k, "cmp.olt " + d + ", " + z + " : " + r.ty);
      cnt = ln(k, "select " + neg + ", " + z + ", " + d + " : " + r.ty);
    }
    v = ln(k, "div " + total + ", " + cnt + " : " + r.ty);
  }
  std::string rc = computeType(rt);
  if (rc != r.ty && n.op != OpKind::Argmax)
    v = ln(k, "convert " + v + " : " + r.ty + " -> " + rc);
  (void)g;
  return emitRound(k, rt, v);
}

/// The subgroup's total of `x` (sum, mean and var: subgroup_add; amax/amin: subgroup_max/min
/// with NaN propagated, since the IR's subgroup max ignores NaN and torch's amax does not).
std::string subgroupTotal(KernelText &k, const Red &r, const std::string &x) {
  bool sum = r.op != OpKind::Amax && r.op != OpKind::Amin;
  std::string op = sum ? "subgroup_add" : r.op == OpKind::Amax ? "subgroup_max" : "subgroup_min";
  std::string p = ln(k, op + " " + x + " : " + r.ty);
  if (sum || !isFloat(r.acc))
    return p;
  std::string isn = ln(k, "isnan " + x + " : " + r.ty);
  std::string n32 = ln(k, "convert " + isn + " : i1 -> i32");
  std::string any = ln(k, "subgroup_max " + n32 + " : i32");
  std::string z32 = emitIntConst(k, 0, "i32");
  std::string has = ln(k, "cmp.ne " + any + ", " + z32 + " : i32");
  return ln(k, "select " + has + ", " + emitConst(k, NAN, r.acc) + ", " + p + " : " + r.ty);
}

} // namespace tessera::graph::detail
