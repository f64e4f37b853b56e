// Element-wise judging of a case under the full profile (see judge.h for the rules).
#include "conformance/judge.h"

#include "ir/interp/numerics.h"
#include "tessera/output_check.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessera::conform {
namespace {

using ir::Scalar;

using ir::numerics::isSubnormal;

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

// One ULP of f32 at |x| (the unit Vulkan's table is written in), at least the subnormal step.
double ulp32(double x) {
  int e = 0;
  std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, std::max(e, -125) - 24);
}

// One ULP of the f16 / bf16 result at |x|.
double narrowUlp(double x, Scalar t) {
  int e = 0;
  std::frexp(std::fabs(x), &e);
  return t == Scalar::F16 ? std::ldexp(1.0, std::max(e, -13) - 11)
                          : std::ldexp(1.0, std::max(e, -125) - 8);
}

constexpr double kPi = 3.14159265358979323846;

// The absolute error the Vulkan SPIR-V precision table allows for `k` at these f64 operands
// (computed for the f32 evaluation; narrow types add their final rounding on top). < 0: the
// table gives no bound here (the element is not checked). NaN: no relaxed rule for `k`.
double relaxedAbsError(ir::OpKind k, const std::vector<ir::Literal> &a, double ref) {
  using K = ir::OpKind;
  auto expErr = [](double x, double r) { return (3 + 2 * std::fabs(x)) * ulp32(r); };
  auto log2Err = [](double x, double r) {
    return x >= 0.5 && x <= 2.0 ? std::ldexp(1.0, -21) : 3 * ulp32(r);
  };
  const double sinCosErr = std::ldexp(1.0, -11);
  double x = a.empty() ? 0 : a[0].f;
  switch (k) {
  case K::Exp:
  case K::Exp2:
    return expErr(x, ref);
  case K::Log:
  case K::Log2:
    return log2Err(x, ref);
  case K::Sin:
  case K::Cos:
    return std::fabs(x) <= kPi ? sinCosErr : -1;
  case K::Tan: { // sin(x) / cos(x)
    if (std::fabs(x) > kPi)
      return -1;
    double c = std::fabs(std::cos(x));
    return c < sinCosErr * 2 ? -1 : sinCosErr * (1 + std::fabs(ref)) / (c - sinCosErr) + ulp32(ref);
  }
  case K::Fma: { // fl(fl(a*b) + c): two correct roundings
    double prod = a[0].f * a[1].f;
    return 0.5 * ulp32(prod) + 0.5 * ulp32(ref);
  }
  case K::Rem: { // x - y*trunc(x/y), the division within 2.5 ULP: the quotient may be off by one
    double y = std::fabs(a[1].f), q = std::fabs(a[0].f / a[1].f);
    return y * (1 + 3 * ulp32(q)) + ulp32(a[0].f) + ulp32(ref);
  }
  case K::Pow: { // exp2(y * log2(x))
    if (!(a[0].f > 0))
      return std::nan("");
    double l = std::log2(a[0].f), t = a[1].f * l;
    double dt = std::fabs(a[1].f) * log2Err(a[0].f, l) + ulp32(t);
    return std::fabs(ref) * (std::expm1(std::log(2.0) * dt)) + expErr(t, ref);
  }
  case K::Expm1: // exp(x) - 1
    return expErr(x, std::exp(x)) + ulp32(ref);
  case K::Sigmoid: { // 1 / (1 + e^-x)
    double e = std::exp(-x);
    return ref * ref * expErr(-x, e) + 2 * ulp32(ref);
  }
  case K::Tanh: { // (e^2x - 1) / (e^2x + 1): the exp error is in ULPs of e^2|x| >= 1
    double e = std::exp(-2 * std::fabs(x));
    return 2 / ((1 + e) * (1 + e)) * expErr(2 * x, 1 / e) + 2 * ulp32(ref);
  }
  case K::Log1p: // log(1 + x)
    return log2Err(1 + x, ref) + ulp32(1 + x) / std::max(std::fabs(1 + x), 1e-300) + ulp32(ref);
  default:
    return std::nan("");
  }
}

// Relaxed-profile cases that are not an error bound: the NaN an inherited formula produces
// for special operands (fma as mul then add: inf*y + -inf; rem as x - y*trunc(x/y): y = inf),
// an infinity where the product overflowed before the add (fma as mul then add), and
// subnormals flushed to zero, which Vulkan allows without the DenormPreserve execution
// mode (still reported as a capability finding by the caller).
enum class Special { No, Formula, FlushedResult, FlushedInputs };

Special relaxedSpecialCase(ir::OpKind k, const std::vector<ir::Literal> &a, double got,
                           double want, Scalar rt, const ir::Op &op) {
  auto yes = [](bool b) { return b ? Special::Formula : Special::No; };
  bool fmaFormula = k == ir::OpKind::Fma && rt != Scalar::F64; // f64 has no relaxed rules
  if (std::isnan(got)) {
    if (fmaFormula)
      return yes(std::isnan(a[0].f * a[1].f + a[2].f));
    if (k == ir::OpKind::Rem)
      return yes(std::isnan(a[0].f - a[1].f * std::trunc(a[0].f / a[1].f)));
    return Special::No;
  }
  if (fmaFormula && std::isinf(got)) { // the product overflowed before the add
    double p = a[0].f * a[1].f;
    if (rt != Scalar::F64)
      p = double(float(p));
    return yes(p + a[2].f == got);
  }
  if (got == 0 && isSubnormal(want, rt))
    return Special::FlushedResult;
  // A subnormal divisor may be flushed to 0, and Vulkan leaves x / 0 (so x - y*trunc(x/y))
  // undefined.
  if (k == ir::OpKind::Rem && std::isfinite(a[1].f) && isSubnormal(a[1].f, rt))
    return Special::FlushedInputs;
  std::vector<ir::Literal> flushed = a;
  bool any = false;
  for (auto &l : flushed)
    if (std::isfinite(l.f) && isSubnormal(l.f, rt)) {
      l.f = std::copysign(0.0, l.f);
      any = true;
    }
  if (!any)
    return Special::No;
  auto r = ir::numerics::evalScalar(op, flushed);
  return r && r->error.empty() && sameValue(got, r->value.f, false) ? Special::FlushedInputs
                                                                     : Special::No;
}

} // namespace

const char *profileName(Profile p) { return precisionProfileName(p); }

std::string formatValue(const ir::Literal &l, Scalar t) { return formatElement(l, t); }

Judgement judge(const Variant &v, const ir::Op &op, const std::vector<ir::HostBuffer> &in,
                const ir::HostBuffer &want, const ir::HostBuffer &got, Profile profile) {
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
      if (std::isnan(g.f) && std::isnan(w.f)) {
        uint64_t gb = 0, wb = 0;
        std::memcpy(&gb, &g.f, 8);
        std::memcpy(&wb, &w.f, 8);
        j.nanPayloadDiffers |= gb != wb;
      }
      if (exact)
        ok = sameValue(g.f, w.f, true);
      else
        ok = err <= j.tolerance + 1e-6 &&
             (budget > 0 || w.f != 0 || g.f != 0 || sameValue(g.f, w.f, true));
      if (!ok && profile == Profile::Relaxed) { // flushing passes, but is still reported
        Special sp = relaxedSpecialCase(v.kind, operands, g.f, w.f, rt, op);
        ok = sp != Special::No;
        j.flushesSubnormalResults |= sp == Special::FlushedResult;
        j.flushesSubnormalInputs |= sp == Special::FlushedInputs;
      }
      if (!ok && profile == Profile::Relaxed && rt != Scalar::F64 && !std::isnan(g.f) &&
          std::isfinite(double(ref))) {
        double allowed = relaxedAbsError(v.kind, operands, double(ref));
        if (!std::isnan(allowed)) // narrow types round the f32 value once more
          ok = allowed < 0 || std::fabs(g.f - double(ref)) <=
                                  allowed + (rt == Scalar::F32 ? 0 : narrowUlp(w.f, rt));
      }
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
