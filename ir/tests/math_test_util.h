// Test harness of the math decompositions: builds `y[i] = op(x[i] [, x2[i]])` at one float
// type, decomposes it with nothing native, runs the decomposed IR on the fp64 interpreter
// (which executes each basic op exactly rounded, like every backend) and measures the worst
// error against long double libm. The reference is libm, never the code under test.
#pragma once

#include "ir/interp/numerics.h"
#include "ir/tests/interp_test_util.h"
#include "ir/transforms/math_decompose.h"
#include "ir/verify/verifier.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace tessera::ir::mathtest {

struct Worst {
  double ulp = 0;      // the largest error seen, in ULP of the result type
  double x = 0, y = 0; // where
  double got = 0;
  long double want = 0;
  size_t mismatches = 0; // special values (NaN, inf, signed zero) that did not match
  std::string firstMismatch;
};

/// Runs `op` (unary when `ys` is empty) on `xs` (and `ys`) at type `t` after decomposeMath
/// with `opts`, and compares with `ref`. Values are given as doubles and rounded to `t`.
/// `outputs`, when given, receives every result (to compare two variants bit for bit).
inline Worst measure(OpKind op, Scalar t, const std::vector<double> &xs,
                     const std::vector<double> &ys,
                     const std::function<long double(long double, long double)> &ref,
                     MathDecomposeOptions opts = {}, std::vector<double> *outputs = nullptr) {
  using namespace testutil;
  bool binary = !ys.empty();
  KernelBuilder k("math");
  Value *x = k.param(Type::buffer(t, Access::ReadOnly), "x");
  Value *y2 = binary ? k.param(Type::buffer(t, Access::ReadOnly), "x2") : nullptr;
  Value *out = k.param(Type::buffer(t), "y");
  {
    Builder b = k.builder();
    Value *i = b.workItem(OpKind::GlobalId);
    Value *r = binary ? b.binary(op, b.load(x, i), b.load(y2, i)) : b.unary(op, b.load(x, i));
    b.store(r, out, i);
    b.ret();
  }
  decomposeMath(k.m, opts);
  Diagnostics d = verifyModule(k.m);
  Worst w;
  if (!d.empty()) {
    w.mismatches = 1;
    w.firstMismatch = "decomposed module does not verify: " + d.front().str();
    return w;
  }
  int64_t n = int64_t(xs.size());
  HostBuffer bx(t, n), by(t, n), bo(t, n);
  for (int64_t i = 0; i < n; ++i) {
    Literal l;
    l.f = numerics::roundToFloat(xs[size_t(i)], t);
    bx.set(i, l);
    if (binary) {
      l.f = numerics::roundToFloat(ys[size_t(i)], t);
      by.set(i, l);
    }
  }
  std::vector<KernelArg> args{buf(bx)};
  if (binary)
    args.push_back(buf(by));
  args.push_back(buf(bo));
  LaunchDims dims = dims1(uint32_t(n), 1);
  InterpResult res = run(k, dims, args);
  if (!res.ok) {
    w.mismatches = 1;
    w.firstMismatch = "interpreter: " + res.error;
    return w;
  }
  for (int64_t i = 0; i < n; ++i) {
    double xi = bx.get(i).f, yi = binary ? by.get(i).f : 0, got = bo.get(i).f;
    if (outputs)
      outputs->push_back(got);
    long double want = ref(xi, yi);
    // The reference rounded to t: special values must match exactly.
    double wantT = numerics::roundToFloat(double(want), t);
    bool special = std::isnan(wantT) || std::isinf(wantT) || wantT == 0;
    if (special) {
      bool same = (std::isnan(wantT) && std::isnan(got)) ||
                  (got == wantT && std::signbit(got) == std::signbit(wantT));
      if (!same) {
        if (!w.mismatches++)
          w.firstMismatch = "x=" + std::to_string(xi) + (binary ? " y=" + std::to_string(yi) : "") +
                            ": got " + std::to_string(got) + ", want " + std::to_string(wantT);
      }
      continue;
    }
    double e = numerics::ulpError(got, want, t);
    if (!(e <= w.ulp)) {
      w = Worst{e, xi, yi, got, want, w.mismatches, w.firstMismatch};
    }
  }
  return w;
}

/// `n` values spread over [lo, hi]: uniform, plus every power of two inside, plus
/// neighbours of the ends.
inline std::vector<double> spread(double lo, double hi, size_t n) {
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(lo + (hi - lo) * double(i) / double(n > 1 ? n - 1 : 1));
  return v;
}

} // namespace tessera::ir::mathtest
