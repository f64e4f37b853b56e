// Test helper for the lowering tests: parse a graph, lower it, run the plan on the kernel-IR
// reference interpreter and compare every output with the graph reference evaluator
// (eval.h), which shares no code with lowering.
//
// Tolerances (why): the interpreter rounds every kernel-IR op correctly, the evaluator every
// graph node; they differ where one graph op is several kernel ops (gelu, silu, var, mean:
// each rounded in f32, f16 and bf16 also once more when stored) and in the order of sums.
// So f32 allows 1e-5 relative + absolute (~80 ulp: a composite op's few roundings amplified
// by cancellation, e.g. x - mean), scaled by (1 + R/64) for a sum over R elements (the
// order's error grows with R); f16 and bf16 two units of their last place (double rounding
// through f32 can move a result by one), f64 1e-12. Integers and bool must be exact.
#pragma once

#include "ir/graph/eval.h"
#include "ir/graph/lower.h"
#include "ir/graph/plan_interp.h"
#include "ir/graph/text.h"
#include "ir/graph/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace tessera::graph::testing {

struct CheckOptions {
  ScheduleCaps caps;
  uint32_t subgroupSize = 0;      // the interpreter's; 0 = caps.subgroupSize
  int64_t reduceLength = 0;       // longest reduction, for the f32 tolerance
  std::vector<HostTensor> inputs; // default: randomTensor per parameter
  uint64_t seed = 1;
};

inline double tolerance(DType t) {
  switch (t) {
  case DType::F16:
    return 2 * 9.765625e-4;
  case DType::BF16:
    return 2 * 7.8125e-3;
  case DType::F32:
    return 1e-5;
  case DType::F64:
    return 1e-12;
  default:
    return 0;
  }
}

inline bool parseOrFail(const std::string &text, Graph *g) {
  std::string err;
  if (!parseGraph(text, "test.tg", g, &err) || !verifyGraph(*g, &err)) {
    ADD_FAILURE() << err << "\n" << text;
    return false;
  }
  return true;
}

/// Lowers `text`, runs it on the interpreter and compares with evaluate(). `planOut` gets the
/// plan (for assertions on kernels and module text).
inline ::testing::AssertionResult
lowerAndCompare(const std::string &text, const CheckOptions &o = {}, Plan *planOut = nullptr) {
  Graph g;
  if (!parseOrFail(text, &g))
    return ::testing::AssertionFailure() << "bad test graph";
  Plan plan;
  std::string err;
  if (!lower(g, o.caps, &plan, &err))
    return ::testing::AssertionFailure() << "lower: " << err << "\n" << text << "\n" << plan.module;
  if (planOut)
    *planOut = plan;
  std::vector<HostTensor> in = o.inputs;
  if (in.empty())
    for (size_t p = 0; p < g.params.size(); ++p)
      in.push_back(randomTensor(g.params[p].type, o.seed * 1000 + p));
  std::vector<HostTensor> want, got;
  if (!evaluate(g, in, &want, &err))
    return ::testing::AssertionFailure() << "evaluate: " << err;
  PlanInterpOptions io;
  io.subgroupSize = o.subgroupSize ? o.subgroupSize : o.caps.subgroupSize;
  if (!runPlanOnInterpreter(plan, g, in, &got, &err, io))
    return ::testing::AssertionFailure() << "interpreter: " << err << "\n" << plan.module;
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
  for (size_t k = 0; k < want.size(); ++k) {
    if (got[k].type.shape != want[k].type.shape || got[k].type.dtype != want[k].type.dtype)
      return ::testing::AssertionFailure() << "output " << k << ": " << typeToString(got[k].type)
                                           << ", expected " << typeToString(want[k].type);
    double tol = tolerance(want[k].type.dtype);
    if (want[k].type.dtype == DType::F32)
      tol *= 1 + static_cast<double>(o.reduceLength) / 64;
    for (size_t i = 0; i < want[k].data.size(); ++i) {
      double a = got[k].data[i], b = want[k].data[i];
      if (std::isnan(a) && std::isnan(b))
        continue;
      if (a == b)
        continue;
      if (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= tol * (1 + std::fabs(b)))
        continue;
      std::ostringstream s;
      s.precision(17);
      s << "output " << k << " (" << typeToString(want[k].type) << ") element " << i << ": got "
        << a << ", expected " << b << " (tolerance " << tol << ")\n"
        << text << "\n"
        << plan.module;
      return ::testing::AssertionFailure() << s.str();
    }
  }
  return ::testing::AssertionSuccess();
}

/// The kinds of the plan's kernels, e.g. {"row"} or {"pointwise", "reduce"}.
inline std::vector<std::string> kinds(const Plan &p) {
  std::vector<std::string> r;
  for (const PlanKernelInfo &k : p.kernels)
    r.push_back(k.kind);
  return r;
}

} // namespace tessera::graph::testing
