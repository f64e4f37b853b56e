// Scalar building blocks shared by the row and column reduction kernels (lower_reduce.cpp),
// defined in lower_reduce_ops.cpp. Not used outside ir/graph/.
#pragma once

#include "ir/graph/lower_kernel.h"

#include <string>
#include <utility>

namespace tessera::graph::detail {

/// How one reduction accumulates.
struct Red {
  OpKind op;
  DType in;       // the input's dtype
  DType acc;      // accumulator dtype (F32, F64 or I64; the input's for amax/amin/argmax)
  std::string ty; // computeType(acc)
};

/// `f64Sums`: a float sum, mean or var accumulates in f64 (var's passes on a device with f64:
/// the mean of data far from zero needs more than f32's digits, as eager's f64 Welford has).
Red redOf(const Graph &g, const Node &n, bool f64Sums = false);
/// The accumulator's initial value (0, 1, -inf/+inf or the integer extremes).
std::string initValue(KernelText &k, const Red &r);
/// The input element converted to the accumulator type.
std::string toAcc(KernelText &k, const Red &r, const std::string &x);
/// Two partials combined (add, mul, NaN-propagating max/min).
std::string combine(KernelText &k, const Red &r, const std::string &a, const std::string &b);
/// argmax: is (bv, bi) better than (av, ai)? NaN is the maximum, the first index wins ties,
/// index -1 marks an empty partial.
std::string argBetter(KernelText &k, const Red &r, const std::string &av, const std::string &ai,
                      const std::string &bv, const std::string &bi);
/// `%fresh = s`; returns the name.
std::string ln(KernelText &k, const std::string &s, const char *hint = "r");
/// One element folded into a running value (acc, acci): returns the new (value, index), the
/// index only for argmax (var's second pass squares the deviation from `mean` first).
std::pair<std::string, std::string> foldElement(KernelText &k, const Red &r, std::string x,
                                                const std::string &mean, const std::string &acc,
                                                const std::string &acci, const std::string &j,
                                                bool arg);
/// One element folded into a loop's running value: emits the in-range branch's yield and the
/// out-of-range branch (var's second pass squares the deviation from `mean` first).
void emitFoldElement(KernelText &k, const Red &r, std::string x, const std::string &mean,
                     const std::string &acc, const std::string &acci, const std::string &j,
                     bool arg);
/// The reduction's value from its total, in the result's compute type, rounded to its dtype.
std::string finalValue(KernelText &k, const Graph &g, const Node &n, const Red &r,
                       const std::string &total, const std::string &count);
/// The subgroup's total of `x` (NaN propagated for amax/amin).
std::string subgroupTotal(KernelText &k, const Red &r, const std::string &x);

} // namespace tessera::graph::detail
