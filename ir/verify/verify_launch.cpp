// Verifier rules for a kernel's launch spec: dimensions, one initialiser per parameter in
// parameter order, and generators that make sense for the element type. Never modifies the
// IR and never decides how a generator samples (that is ir/interp/launch.cpp).
#include "ir/verify/verifier_impl.h"

#include <cmath>
#include <cstdint>

namespace tessera::ir::verify_detail {
namespace {

constexpr uint64_t kMaxWorkgroupItems = 1024;
constexpr int64_t kMaxBufferElements = int64_t{1} << 31;

const char *kindName(ArgInit::Kind k) {
  switch (k) {
  case ArgInit::Kind::Scalar:
    return "scalar";
  case ArgInit::Kind::Uniform:
    return "uniform";
  case ArgInit::Kind::Normal:
    return "normal";
  case ArgInit::Kind::Iota:
    return "iota";
  case ArgInit::Kind::Fill:
    return "fill";
  case ArgInit::Kind::Special:
    return "special";
  }
  return "?";
}

bool isIntegral(double x) { return std::isfinite(x) && x == std::trunc(x); }

/// Whether the finite `x` rounds (to nearest, ties to even) to an infinity in float type `t`:
/// |x| >= 2^emax * (2 - 2^-p), half an ulp above the largest finite value (f16: 65520). Such
/// a value written as a literal is an error ("float literal out of range"); so it is here.
bool overflowsFloat(double x, Scalar t) {
  if (!isFloatScalar(t) || t == Scalar::F64) // f64 holds every finite double
    return false;
  return std::isfinite(x) &&
         std::fabs(x) >= std::ldexp(2.0 - std::ldexp(1.0, -mantissaBits(t)), maxExponent(t));
}

/// Whether `x` is an integer that type `t` can hold read as signed or as unsigned
/// (i8: -128..255); i1 holds 0 and 1 only.
bool inIntRange(double x, Scalar t) {
  if (!isIntegral(x))
    return false;
  if (t == Scalar::I1)
    return x == 0 || x == 1;
  int w = bitWidth(t);
  return x >= -std::ldexp(1.0, w - 1) && x <= std::ldexp(1.0, w) - 1;
}

/// The same for a parameter written as an integer literal, exactly (no double in between:
/// i64 fill(2^64 - 1) is in range, fill(2^64) is not).
bool inIntRange(const IntParam &p, double x, Scalar t) {
  if (!p.set)
    return inIntRange(x, t);
  if (t == Scalar::I1)
    return !p.negative && p.magnitude <= 1;
  int w = bitWidth(t);
  uint64_t half = uint64_t{1} << (w - 1);
  return p.negative ? p.magnitude <= half : p.magnitude <= half + (half - 1);
}

/// lo > hi, exactly when both were written as integers.
bool exceeds(const ArgInit &a) {
  if (!a.ia.set || !a.ib.set)
    return a.a > a.b;
  if (a.ia.negative != a.ib.negative)
    return a.ib.negative;
  return a.ia.negative ? a.ia.magnitude < a.ib.magnitude : a.ia.magnitude > a.ib.magnitude;
}

class LaunchChecker {
public:
  LaunchChecker(Reporter &r, const Function &k)
      : r_(r), k_(k), l_(*k.launch), who_("launch @" + k.name) {}

  void run() {
    Loc loc = where(l_.loc);
    checkDims(l_.grid, "grid", loc);
    checkDims(l_.workgroup, "workgroup", loc);
    uint64_t items = uint64_t{l_.workgroup[0]} * l_.workgroup[1] * l_.workgroup[2];
    if (items > kMaxWorkgroupItems)
      r_.error(loc, who_ + ": workgroup has " + std::to_string(items) +
                        " work-items, more than " + std::to_string(kMaxWorkgroupItems));
    std::vector<Value *> params = k_.params();
    if (l_.args.size() != params.size()) {
      r_.error(loc, who_ + " initialises " + std::to_string(l_.args.size()) +
                        " argument(s), but the kernel has " + std::to_string(params.size()) +
                        " parameter(s)");
      return;
    }
    for (size_t i = 0; i < params.size(); ++i)
      checkArg(l_.args[i], *params[i], i);
  }

private:
  Loc where(Loc loc) const { return loc.line ? loc : k_.loc; }

  void checkDims(const std::array<uint32_t, 3> &d, const char *what, Loc loc) {
    static const char *kAxis[] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i)
      if (d[i] < 1)
        r_.error(loc, who_ + ": " + what + " dimension " + kAxis[i] + " must be >= 1");
  }

  void checkArg(const ArgInit &a, const Value &param, size_t i) {
    Loc loc = where(a.loc.line ? a.loc : l_.loc);
    if (!param.name.empty() && a.param != param.name) {
      r_.error(loc, who_ + ": initialiser " + std::to_string(i + 1) + " is for %" + a.param +
                        ", expected %" + param.name + " (initialisers follow parameter order)");
      return;
    }
    std::string arg = who_ + ": %" + (param.name.empty() ? a.param : param.name);
    const Type &t = param.type;
    if (t.isScalar()) {
      if (a.kind != ArgInit::Kind::Scalar) {
        r_.error(loc, arg + " is a scalar and takes a literal, not a generator");
        return;
      }
      if (t.isInt() && !fitsInt(a.scalar.i, t.elem))
        r_.error(loc, arg + ": literal does not fit " + toString(t));
      if (t.isFloat() && !isRepresentable(a.scalar.f, t.elem))
        r_.error(loc, arg + ": literal is not exactly representable in " + toString(t));
      return;
    }
    if (t.kind != Type::Kind::Buffer)
      return; // reported with the kernel's parameters
    if (a.kind == ArgInit::Kind::Scalar) {
      r_.error(loc, arg + " is a buffer and needs '[count] = generator'");
      return;
    }
    if (a.count < 0 || a.count > kMaxBufferElements)
      r_.error(loc, arg + ": buffer element count " + std::to_string(a.count) +
                        " must be in [0, 2^31]");
    checkGenerator(a, t.elem, arg, loc);
  }

  void checkGenerator(const ArgInit &a, Scalar elem, const std::string &arg, Loc loc) {
    std::string gen = arg + ": '" + kindName(a.kind) + "' ";
    std::string ty = std::string(scalarName(elem));
    bool isInt = isIntScalar(elem);
    switch (a.kind) {
    case ArgInit::Kind::Uniform:
      if (!std::isfinite(a.a) || !std::isfinite(a.b))
        return r_.error(loc, gen + "bounds must be finite");
      if (exceeds(a))
        return r_.error(loc, gen + "needs lo <= hi");
      if (isInt && (!inIntRange(a.ia, a.a, elem) || !inIntRange(a.ib, a.b, elem)))
        r_.error(loc, gen + "bounds must be integers in the range of " + ty);
      if (overflowsFloat(a.a, elem) || overflowsFloat(a.b, elem))
        r_.error(loc, gen + "bounds must be finite in " + ty + " (one rounds to infinity)");
      return;
    case ArgInit::Kind::Normal:
      if (isInt)
        return r_.error(loc, gen + "needs a float element type, got " + ty);
      if (!std::isfinite(a.a) || !std::isfinite(a.b) || a.b < 0)
        return r_.error(loc, gen + "needs a finite mean and a finite std >= 0");
      if (overflowsFloat(a.a, elem) || overflowsFloat(a.b, elem))
        r_.error(loc, gen + "mean and std must be finite in " + ty + " (one rounds to infinity)");
      return;
    case ArgInit::Kind::Iota:
      if (!std::isfinite(a.a) || !std::isfinite(a.b))
        return r_.error(loc, gen + "start and step must be finite");
      if (isInt && (!isIntegral(a.a) || !isIntegral(a.b)))
        r_.error(loc, gen + "start and step must be integers for " + ty);
      if (overflowsFloat(a.a, elem) || overflowsFloat(a.b, elem))
        r_.error(loc, gen + "start and step must be finite in " + ty + " (one rounds to infinity)");
      return;
    case ArgInit::Kind::Fill:
      if (isInt && !inIntRange(a.ia, a.a, elem))
        r_.error(loc, gen + "value must be an integer in the range of " + ty);
      if (overflowsFloat(a.a, elem))
        r_.error(loc, gen + "value is out of range for " + ty +
                          " (it rounds to infinity; write inf for an infinity)");
      return;
    case ArgInit::Kind::Special:
    case ArgInit::Kind::Scalar:
      return;
    }
  }

  Reporter &r_;
  const Function &k_;
  const LaunchSpec &l_;
  std::string who_;
};

} // namespace

void verifyLaunch(Reporter &r, const Function &kernel) {
  if (!kernel.launch)
    return;
  LaunchChecker(r, kernel).run();
}

} // namespace tessera::ir::verify_detail
