// The strict comparison on synthetic device outputs (no device needed): a flipped bit is an
// unexplained difference that names the element and both devices' bits; NaN equals NaN; a
// subnormal difference on a device without denorm preserve is explained; a kernel whose order
// is not fixed is a finding, never dropped; one device says that comparing needs two.
#include "conformance/report.h"
#include "conformance/strict.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::conform {
namespace {

ir::HostBuffer f32Buffer(std::initializer_list<float> values) {
  ir::HostBuffer b(ir::Scalar::F32, int64_t(values.size()));
  std::memcpy(b.bytes.data(), values.begin(), values.size() * sizeof(float));
  return b;
}

StrictCapture capture(const std::string &device, ir::HostBuffer out,
                      std::vector<ir::HostBuffer> inputs = {}) {
  StrictCapture c;
  c.caseId = "exp.f32/uniform/n4";
  c.device = device;
  c.inputs = std::move(inputs);
  c.outputs.push_back(std::move(out));
  c.names = {"%out"};
  c.subgroupSize = 8;
  return c;
}

constexpr uint64_t kAll = TSR_FEATURE_DENORM_PRESERVE;

TEST(StrictCompare, IdenticalOutputsAreIdentical) {
  RunReport r;
  r.devices = {"cpu:0", "vulkan:0"};
  r.strictCaptures = {capture("cpu:0", f32Buffer({1, 2, 3, 4})),
                      capture("vulkan:0", f32Buffer({1, 2, 3, 4}))};
  compareStrict(r, r.devices, {kAll, kAll});
  EXPECT_EQ(r.strictCompared, 1);
  EXPECT_EQ(r.strictIdentical, 1);
  EXPECT_TRUE(r.strictDiffs.empty());
  EXPECT_FALSE(r.unexpectedFailures());
}

TEST(StrictCompare, FlippedBitIsAnUnexplainedDifferenceNamingTheElement) {
  float x = 2.5f, flipped;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits ^= 1; // the last bit of the mantissa: one ULP
  std::memcpy(&flipped, &bits, 4);
  RunReport r;
  r.devices = {"cpu:0", "vulkan:0"};
  r.strictCaptures = {capture("cpu:0", f32Buffer({1, 2, 3, x}), {f32Buffer({0.5f, 1, 2, 7})}),
                      capture("vulkan:0", f32Buffer({1, 2, 3, flipped}))};
  compareStrict(r, r.devices, {kAll, kAll});
  ASSERT_EQ(r.strictDiffs.size(), 1u);
  const StrictDiff &d = r.strictDiffs[0];
  EXPECT_FALSE(d.explained);
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.count, 1);
  EXPECT_EQ(d.device, "vulkan:0");
  EXPECT_EQ(d.reference, "cpu:0");
  EXPECT_NE(d.referenceBits.find("0x40200000"), std::string::npos) << d.referenceBits;
  EXPECT_NE(d.deviceBits.find("0x40200001"), std::string::npos) << d.deviceBits;
  EXPECT_NE(d.inputs.find("7"), std::string::npos) << d.inputs; // element 3's input
  EXPECT_EQ(r.unexplainedStrictDiffs(), 1);
  EXPECT_TRUE(r.unexpectedFailures());
  std::string text = strictSummary(r);
  EXPECT_NE(text.find("UNEXPLAINED: exp.f32/uniform/n4 %out vulkan:0 vs cpu:0"), std::string::npos)
      << text;
}

TEST(StrictCompare, JsonAndJunitCarryTheDifference) {
  RunReport r;
  r.devices = {"cpu:0", "vulkan:0"};
  r.strictCaptures = {capture("cpu:0", f32Buffer({1.0f})),
                      capture("vulkan:0", f32Buffer({1.0000001f}))};
  compareStrict(r, r.devices, {kAll, kAll});
  std::string json = toJson(r), junit = toJunit(r);
  nlohmann::json doc = nlohmann::json::parse(json); // the report must be valid JSON
  ASSERT_TRUE(doc.contains("strict")) << json;
  EXPECT_EQ(doc["strict"]["reference_device"], "cpu:0") << json;
  EXPECT_EQ(doc["strict"]["unexplained"], 1) << json;
  ASSERT_EQ(doc["strict"]["differences"].size(), 1u) << json;
  EXPECT_EQ(doc["strict"]["differences"][0]["device_bits"], "1.00000012 (0x3f800001)") << json;
  EXPECT_NE(junit.find("<testsuite name=\"conform.strict\" tests=\"1\" failures=\"1\""),
            std::string::npos)
      << junit;
}

TEST(StrictCompare, NanEqualsNanAndSignedZerosDiffer) {
  ir::HostBuffer a = f32Buffer({std::numeric_limits<float>::quiet_NaN(), 0.0f});
  ir::HostBuffer b = f32Buffer({-std::numeric_limits<float>::quiet_NaN(), -0.0f});
  EXPECT_TRUE(strictSame(a, b, 0));  // NaN payloads and signs are not compared
  EXPECT_FALSE(strictSame(a, b, 1)); // +0 and -0 are different results
}

TEST(StrictCompare, SubnormalDifferenceIsExplainedOnlyWithoutDenormPreserve) {
  float sub = std::ldexp(1.0f, -140);
  for (bool preserve : {true, false}) {
    RunReport r;
    r.devices = {"cpu:0", "vulkan:0"};
    r.strictCaptures = {capture("cpu:0", f32Buffer({sub})), capture("vulkan:0", f32Buffer({0}))};
    compareStrict(r, r.devices, {kAll, preserve ? kAll : 0});
    ASSERT_EQ(r.strictDiffs.size(), 1u);
    EXPECT_EQ(r.strictDiffs[0].explained, !preserve);
    EXPECT_EQ(r.unexpectedFailures(), preserve);
    bool finding = false;
    for (const Finding &f : r.findings)
      finding |= f.device == "vulkan:0" && f.capability == "strict-no-denorm-preserve";
    EXPECT_EQ(finding, !preserve);
  }
}

TEST(StrictCompare, DivDifferenceIsExplainedOnlyWhereCorrectRoundingIsNotPromised) {
  // (other device, its features, the case's div/sqrt types) -> explained?
  struct Row {
    const char *device;
    uint64_t features;
    uint8_t types;
    bool explained;
  } rows[] = {
      {"cuda:0", kAll | TSR_FEATURE_FP64, kDivSqrtF32 | kDivSqrtF64, false}, // div.rn, sqrt.rn
      {"vulkan:0", kAll | TSR_FEATURE_FP64, kDivSqrtF64, true},              // OpFDiv f64: 2.5 ULP
      {"vulkan:0", kAll | TSR_FEATURE_FP64, kDivSqrtF32, false}, // corrected through f64
      {"vulkan:0", kAll, kDivSqrtF32, true},                     // no f64 to correct through
      {"vulkan:0", kAll | TSR_FEATURE_FP64, 0, false},           // no div: no excuse
  };
  for (const Row &row : rows) {
    RunReport r;
    r.devices = {"cpu:0", row.device};
    StrictCapture a = capture("cpu:0", f32Buffer({1.0f}));
    StrictCapture b = capture(row.device, f32Buffer({1.0000001f}));
    a.divSqrt = b.divSqrt = row.types;
    r.strictCaptures = {a, b};
    compareStrict(r, r.devices, {kAll | TSR_FEATURE_FP64, row.features});
    ASSERT_EQ(r.strictDiffs.size(), 1u);
    EXPECT_EQ(r.strictDiffs[0].explained, row.explained)
        << row.device << " types " << int(row.types) << ": " << r.strictDiffs[0].reason;
    EXPECT_EQ(r.unexpectedFailures(), !row.explained);
  }
}

TEST(StrictCompare, NotOrderFixedCaseIsAFindingNotAFailure) {
  RunReport r;
  r.devices = {"cpu:0", "vulkan:0"};
  StrictCapture a = capture("cpu:0", f32Buffer({1.0f}));
  StrictCapture b = capture("vulkan:0", f32Buffer({1.0000001f}));
  a.caseId = b.caseId = "kernel/sum/sum";
  a.orderDependence = b.orderDependence = "float atomic_add (the order of the updates ...)";
  r.strictCaptures = {a, b};
  compareStrict(r, r.devices, {kAll, kAll});
  ASSERT_EQ(r.strictDiffs.size(), 1u);
  EXPECT_TRUE(r.strictDiffs[0].explained);
  EXPECT_NE(r.strictDiffs[0].reason.find("not order-fixed"), std::string::npos);
  EXPECT_FALSE(r.unexpectedFailures());
  bool finding = false;
  for (const Finding &f : r.findings)
    finding |= f.capability == "strict-not-order-fixed" && f.cases.size() == 1 &&
               f.cases[0] == "kernel/sum/sum (differs)";
  EXPECT_TRUE(finding);
}

TEST(StrictCompare, ExpectedFailureExplainsItsDifference) {
  for (const char *status : {"xfail", "pass"}) {
    RunReport r;
    r.devices = {"cpu:0", "vulkan:0"};
    r.strictCaptures = {capture("cpu:0", f32Buffer({1.0f})), capture("vulkan:0", f32Buffer({0}))};
    CaseResult c;
    c.id = "exp.f32/uniform/n4";
    c.device = "vulkan:0";
    c.status = status;
    c.message = "lavapipe folds x * 0.0";
    r.results.push_back(c);
    compareStrict(r, r.devices, {kAll, kAll});
    ASSERT_EQ(r.strictDiffs.size(), 1u);
    bool xfail = std::string(status) == "xfail";
    EXPECT_EQ(r.strictDiffs[0].explained, xfail);
    if (xfail)
      EXPECT_NE(r.strictDiffs[0].reason.find("lavapipe folds"), std::string::npos);
  }
}

TEST(StrictCompare, CaseMissingOnOneDeviceIsListed) {
  RunReport r;
  r.devices = {"cpu:0", "vulkan:0"};
  r.strictCaptures = {capture("cpu:0", f32Buffer({1}))};
  compareStrict(r, r.devices, {kAll, kAll});
  bool listed = false;
  for (const Finding &f : r.findings)
    listed |= f.capability == "strict-not-compared" && f.device == "vulkan:0";
  EXPECT_TRUE(listed);
}

TEST(StrictCompare, OneDeviceSaysComparingNeedsTwo) {
  RunReport r;
  r.devices = {"cpu:0"};
  r.strictCaptures = {capture("cpu:0", f32Buffer({1}))};
  compareStrict(r, r.devices, {kAll});
  EXPECT_EQ(r.strictCompared, 0);
  EXPECT_NE(r.strictNote.find("needs two devices"), std::string::npos);
  EXPECT_NE(strictSummary(r).find("needs two devices"), std::string::npos);
}

const char *kOrderKernels = R"(
kernel @fsum(%x: buffer<f32, readonly>, %s: buffer<f32>) {
  %i = global_id.x : i32
  %z = const 0 : i32
  %v = load %x[%i] : f32
  %o = atomic_add %s[%z], %v : f32
}
kernel @icount(%x: buffer<i32, readonly>, %s: buffer<i32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : i32
  %one = const 1 : i32
  %o = atomic_add %s[%v], %one : i32
}
kernel @slot(%s: buffer<i32>, %out: buffer<i32>) {
  %i = global_id.x : i32
  %z = const 0 : i32
  %one = const 1 : i32
  %o = atomic_add %s[%z], %one : i32
  store %i, %out[%o] : i32
}
kernel @sg(%x: buffer<f32, readonly>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %r = subgroup_add %v : f32
  store %r, %y[%i] : f32
}
kernel @fmad(%x: buffer<f32>) {
  %z = const 0 : i32
  %ld = const 8 : i32
  %a = matrix_load %x[%z] stride %ld : matrix<f32, 8, 8, a>
  %b = matrix_load %x[%z] stride %ld : matrix<f32, 8, 8, b>
  %c = matrix_load %x[%z] stride %ld : matrix<f32, 8, 8, acc>
  %d = matrix_mad %a, %b, %c : matrix<f32, 8, 8, a>, matrix<f32, 8, 8, b>, matrix<f32, 8, 8, acc>
  matrix_store %d, %x[%z] stride %ld : matrix<f32, 8, 8, acc>
}
kernel @imad(%x: buffer<i8>, %y: buffer<i32>) {
  %z = const 0 : i32
  %ld = const 8 : i32
  %a = matrix_load %x[%z] stride %ld : matrix<i8, 8, 8, a>
  %b = matrix_load %x[%z] stride %ld : matrix<i8, 8, 8, b>
  %c = matrix_load %y[%z] stride %ld : matrix<i32, 8, 8, acc>
  %d = matrix_mad %a, %b, %c : matrix<i8, 8, 8, a>, matrix<i8, 8, 8, b>, matrix<i32, 8, 8, acc>
  matrix_store %d, %y[%z] stride %ld : matrix<i32, 8, 8, acc>
}
kernel @plain(%x: buffer<f32, readonly>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %r = exp %v : f32
  store %r, %y[%i] : f32
}
)";

TEST(StrictOrder, ClassifiesKernels) {
  ir::ParseResult pr = ir::parseModule(kOrderKernels, "order.tir");
  ASSERT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
  const ir::Module &m = *pr.module;
  EXPECT_NE(orderDependence(m, *m.lookup("fsum")).find("float atomic_add"), std::string::npos);
  EXPECT_EQ(orderDependence(m, *m.lookup("icount")), ""); // integer sums commute exactly
  EXPECT_NE(orderDependence(m, *m.lookup("slot")).find("old value is used"), std::string::npos);
  EXPECT_NE(orderDependence(m, *m.lookup("sg")).find("subgroup_add"), std::string::npos);
  EXPECT_EQ(subgroupSizeDependence(m, *m.lookup("sg")), "subgroup_add");
  EXPECT_EQ(orderDependence(m, *m.lookup("fmad")),
            "float matrix_mad (the summation order is the target's)");
  EXPECT_EQ(orderDependence(m, *m.lookup("imad")), ""); // i8 x i8 -> i32 is exact
  EXPECT_EQ(orderDependence(m, *m.lookup("plain")), "");
  EXPECT_EQ(subgroupSizeDependence(m, *m.lookup("plain")), "");
}

} // namespace
} // namespace tessera::conform
