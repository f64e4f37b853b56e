// Element-wise judging of a case under the full profile (see judge.h for the rules).
#include "conformance/judge.h"

#include "ir/interp/numerics.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessera::conform {
namespace {

using ir::Scalar;

double minNormal(Scalar t) {
  return std::ldexp(1.0, t == Scalar::F16 ? -14 : t == Scalar::F64 ? -1022 : -126);
}
bool isSubnormal(double x, Scalar t) { return x != 0 && std::fabs(x) < minNormal(t); }

// The op under test with every type widened to f64: its value is the wide reference.
struct WideTwin {
  std::vector<std::unique_ptr<ir::Value>> args;
  ir::Op op;
  explicit WideTwin(const ir::Op &src) : op(src.kind) {
    op.mods = src.mods;
    for (size_t k = 0; k < src.operands.size(); ++k) {
      args.push_back(std::make_unique<ir::Value>(ir::Type::scalar(Scalar::F64), "a"));
      op.operands.push_back(args.back().get());
    }
    op.addResult(ir::Type::scalar(Scalar::F64));
  }
};

bool hasWideReference(const Variant &v) {
  ir::OpForm f = ir::opInfo(v.kind).form;
  if (f != ir::OpForm::Unary && f != ir::OpForm::Binary && f != ir::OpForm::Ternary)
    return false;
  return v.result == Scalar::F16 || v.result == Scalar::BF16 || v.result == Scalar::F32;
}

bool sameValue(double a, double b, bool checkZeroSign) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  if (a != b)
    return false;
  return !checkZeroSign || a != 0 || std::signbit(a) == std::signbit(b);
}

} // namespace

std::string formatValue(const ir::Literal &l, Scalar t) {
  char buf[96];
  if (ir::isFloatScalar(t)) {
    int digits = t == Scalar::F64 ? 17 : t == Scalar::F32 ? 9 : 5;
    uint64_t bits = 0;
    switch (t) {
    case Scalar::F16:
      bits = ir::numerics::toF16Bits(l.f);
      break;
    case Scalar::BF16:
      bits = ir::numerics::toBF16Bits(l.f);
      break;
    case Scalar::F32: {
      float f = static_cast<float>(l.f);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      bits = b;
      break;
    }
    default:
      std::memcpy(&bits, &l.f, 8);
    }
    std::snprintf(buf, sizeof buf, "%.*g (0x%" PRIx64 ")", digits, l.f, bits);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64, ir::numerics::signExtend(l.i, t));
  }
  return buf;
}

Judgement judge(const Variant &v, const ir::Op &op, const std::vector<ir::HostBuffer> &in,
                const ir::HostBuffer &want, const ir::HostBuffer &got) {
  Judgement j;
  Scalar rt = v.result;
  bool isFloat = ir::isFloatScalar(rt);
  double budget = isFloat ? ir::opInfo(v.kind).ulpBudget(rt).value_or(0) : 0;
  bool wide = isFloat && hasWideReference(v);
  bool exact = isFloat && !wide && budget == 0;
  j.tolerance = !isFloat || exact ? 0 : wide ? std::max(budget, 0.5) : budget + 0.5;
  WideTwin twin(op);
  std::vector<ir::Literal> operands(in.size());
  int64_t n = std::min(want.size(), got.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k)
      operands[k] = in[k].get(i);
    ir::Literal w = want.get(i), g = got.get(i);
    bool ok;
    double err;
    if (!isFloat) {
      ok = w.i == g.i;
      err = ok ? 0 : 1;
      j.maxAbs = std::max(j.maxAbs, err);
    } else {
      long double ref = w.f;
      if (wide)
        if (auto r = ir::numerics::evalScalar(twin.op, operands); r && r->error.empty())
          ref = r->value.f;
      err = ir::numerics::ulpError(g.f, ref, rt);
      double abs = std::fabs(g.f - w.f);
      if (std::isfinite(err))
        j.maxUlp = std::max(j.maxUlp, err);
      if (std::isfinite(abs))
        j.maxAbs = std::max(j.maxAbs, abs);
      if (exact)
        ok = sameValue(g.f, w.f, true);
      else
        ok = err <= j.tolerance + 1e-6 &&
             (budget > 0 || w.f != 0 || g.f != 0 || sameValue(g.f, w.f, true));
    }
    if (ok)
      continue;
    ++j.badCount;
    if (isFloat && g.f == 0 && isSubnormal(w.f, rt))
      j.flushesSubnormalResults = true;
    if (isFloat) { // does the device answer as if subnormal inputs were 0?
      bool anySub = false;
      std::vector<ir::Literal> flushed = operands;
      for (size_t k = 0; k < in.size(); ++k)
        if (ir::isFloatScalar(in[k].elem) && isSubnormal(flushed[k].f, in[k].elem)) {
          flushed[k].f = std::copysign(0.0, flushed[k].f);
          anySub = true;
        }
      if (anySub)
        if (auto r = ir::numerics::evalScalar(op, flushed);
            r && r->error.empty() && sameValue(g.f, r->value.f, false))
          j.flushesSubnormalInputs = true;
    }
    if (j.passed) {
      j.passed = false;
      j.firstBad = i;
      j.error = err;
      for (size_t k = 0; k < in.size(); ++k)
        j.inputs += (k ? ", " : "") + formatValue(operands[k], in[k].elem);
      j.expected = formatValue(w, rt);
      j.got = formatValue(g, rt);
    }
  }
  return j;
}

} // namespace tessera::conform
