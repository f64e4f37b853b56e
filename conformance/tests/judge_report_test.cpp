// Tests of judging (a deliberately wrong "device result" is caught: the interpreter's output
// compared with a perturbed copy of itself) and of the JSON / JUnit writers (the JSON read back
// with nlohmann::json).
#include "conformance/judge.h"
#include "conformance/report.h"
#include "conformance/runner.h"

#include "ir/interp/numerics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace tessera::conform {
namespace {

struct Sample {
  Catalog cat = buildCatalog();
  const Case *c = nullptr;
  std::unique_ptr<ir::Module> m;
  std::vector<ir::HostBuffer> in;
  ir::HostBuffer out;

  explicit Sample(const std::string &id) {
    for (const Case &k : cat.cases)
      if (k.id == id)
        c = &k;
    EXPECT_NE(c, nullptr) << id;
    if (!c)
      return;
    m = buildKernel(variant());
    std::string err;
    EXPECT_TRUE(interpretCase(cat, *c, 1, in, out, &err)) << err;
  }
  const Variant &variant() const { return cat.variants[c->variant]; }
  Judgement judgeAgainst(const ir::HostBuffer &got) const {
    return judge(variant(), *kernelOp(*m), in, out, got);
  }
};

TEST(Judge, ReferenceAgainstItselfPasses) {
  for (const char *id : {"exp.f32/uniform/n1000", "add.i32/uniform/n1000", "div.f16/special/n441",
                         "cmp.olt.f64/special/n441"}) {
    Sample s(id);
    if (!s.c)
      continue;
    Judgement j = s.judgeAgainst(s.out);
    EXPECT_TRUE(j.passed) << id << ": " << j.expected << " vs " << j.got;
  }
}

TEST(Judge, PerturbedFloatResultIsCaught) {
  Sample s("exp.f32/uniform/n1000");
  ASSERT_TRUE(s.c);
  ir::HostBuffer bad = s.out;
  ir::Literal v = bad.get(123);
  float f = static_cast<float>(v.f);
  for (int k = 0; k < 8; ++k) // 8 ULP away: beyond exp's f32 budget of 3
    f = std::nextafter(f, INFINITY);
  v.f = f;
  bad.set(123, v);
  Judgement j = s.judgeAgainst(bad);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.firstBad, 123);
  EXPECT_EQ(j.badCount, 1);
  EXPECT_GT(j.error, 3);
  EXPECT_FALSE(j.inputs.empty());
  // Within budget (2 ULP) passes.
  ir::HostBuffer near = s.out;
  ir::Literal w = near.get(5);
  w.f = std::nextafter(std::nextafter(static_cast<float>(w.f), INFINITY), INFINITY);
  near.set(5, w);
  EXPECT_TRUE(s.judgeAgainst(near).passed);
}

TEST(Judge, CorrectlyRoundedOpsAllowNoUlpAndKeepTheSignOfZero) {
  Sample s("add.f32/uniform/n1000");
  ASSERT_TRUE(s.c);
  ir::HostBuffer bad = s.out;
  ir::Literal v = bad.get(7);
  v.f = std::nextafter(static_cast<float>(v.f), INFINITY);
  bad.set(7, v);
  EXPECT_FALSE(s.judgeAgainst(bad).passed);

  Sample z("neg.f64/special/n21"); // neg(+0) must be -0
  ASSERT_TRUE(z.c);
  ir::HostBuffer flipped = z.out;
  for (int64_t i = 0; i < flipped.size(); ++i)
    if (flipped.get(i).f == 0) {
      flipped.set(i, ir::Literal{-flipped.get(i).f, 0});
      break;
    }
  EXPECT_FALSE(z.judgeAgainst(flipped).passed);
}

TEST(Judge, IntegersAreExactAndNaNMatchesNaN) {
  Sample s("mul.i16/uniform/n1000");
  ASSERT_TRUE(s.c);
  ir::HostBuffer bad = s.out;
  bad.set(999, ir::Literal{0, ir::numerics::truncInt(bad.get(999).i + 1, ir::Scalar::I16)});
  Judgement j = s.judgeAgainst(bad);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.firstBad, 999);

  Sample n("log.f32/special/n21"); // log(-1) is NaN: another NaN payload is fine
  ASSERT_TRUE(n.c);
  EXPECT_TRUE(n.judgeAgainst(n.out).passed);
}

TEST(Judge, FlushedSubnormalResultIsAFinding) {
  Sample s("mul.f32/hard/n1000");
  ASSERT_TRUE(s.c);
  ir::HostBuffer flushed = s.out;
  bool any = false;
  for (int64_t i = 0; i < flushed.size(); ++i) {
    double x = flushed.get(i).f;
    if (x != 0 && std::fabs(x) < 0x1p-126) {
      flushed.set(i, ir::Literal{std::copysign(0.0, x), 0});
      any = true;
    }
  }
  ASSERT_TRUE(any) << "the hard generator should produce subnormal products";
  Judgement j = s.judgeAgainst(flushed);
  EXPECT_FALSE(j.passed);
  EXPECT_TRUE(j.flushesSubnormalResults);
}

RunReport sampleReport() {
  RunReport r;
  r.devices = {"cpu:0"};
  CaseResult pass;
  pass.id = "add.f32/uniform/n1000";
  pass.variant = "add.f32";
  pass.op = "add";
  pass.dtype = "f32";
  pass.device = "cpu:0";
  pass.n = 1000;
  pass.status = "pass";
  pass.maxUlp = 0.5;
  pass.seed = 1;
  CaseResult fail = pass;
  fail.id = "exp.f32/hard/n1000";
  fail.variant = "exp.f32";
  fail.op = "exp";
  fail.status = "fail";
  fail.maxUlp = INFINITY;
  fail.judgement.passed = false;
  fail.judgement.firstBad = 3;
  fail.judgement.inputs = "1 <&> \"q\"";
  fail.judgement.expected = "2";
  fail.judgement.got = "3";
  r.results = {pass, fail};
  r.findings.push_back({"cpu:0", "flushes-subnormal-results", "detail", {fail.id}});
  return r;
}

// The JSON report read back with nlohmann::json: every schema key with its type and value.
TEST(Report, JsonHasTheSchemaKeys) {
  nlohmann::json doc = nlohmann::json::parse(toJson(sampleReport()));
  EXPECT_EQ(doc["schema"], "tessera-conform/1");
  EXPECT_EQ(doc["profile"], "full");
  EXPECT_EQ(doc["seed"], 1);
  EXPECT_EQ(doc["devices"], nlohmann::json::array({"cpu:0"}));
  EXPECT_TRUE(doc["seconds"].is_number());
  EXPECT_EQ(doc["counts"],
            nlohmann::json({{"pass", 1}, {"fail", 1}, {"xfail", 0}, {"xpass", 0}, {"skip", 0}}));
  ASSERT_EQ(doc["cases"].size(), 2u);
  const nlohmann::json &fail = doc["cases"][1];
  EXPECT_EQ(fail["case"], "exp.f32/hard/n1000");
  EXPECT_EQ(fail["op"], "exp");
  EXPECT_EQ(fail["variant"], "exp.f32");
  EXPECT_EQ(fail["dtype"], "f32");
  EXPECT_EQ(fail["shape"], nlohmann::json::array({1000}));
  EXPECT_EQ(fail["device"], "cpu:0");
  EXPECT_EQ(fail["status"], "fail");
  EXPECT_TRUE(fail["max_ulp"].is_null()) << "an infinite ULP error is null";
  EXPECT_EQ(fail["max_abs_err"], 0.0);
  EXPECT_EQ(fail["tolerance"], 0.0);
  EXPECT_EQ(fail["seed"], 1);
  EXPECT_FALSE(fail.contains("message"));
  EXPECT_EQ(fail["failure"]["index"], 3);
  EXPECT_EQ(fail["failure"]["bad_count"], 0);
  EXPECT_EQ(fail["failure"]["inputs"], "1 <&> \"q\"");
  EXPECT_EQ(fail["failure"]["expected"], "2");
  EXPECT_EQ(fail["failure"]["got"], "3");
  EXPECT_FALSE(doc["cases"][0].contains("failure"));
  EXPECT_EQ(doc["cases"][0]["max_ulp"], 0.5);
  ASSERT_EQ(doc["findings"].size(), 1u);
  EXPECT_EQ(doc["findings"][0], nlohmann::json({{"device", "cpu:0"},
                                                {"capability", "flushes-subnormal-results"},
                                                {"detail", "detail"},
                                                {"cases", {"exp.f32/hard/n1000"}}}));
  EXPECT_EQ(doc["skipped_backends"], nlohmann::json::array());
}

// Errors and timings round-trip exactly (the shortest decimal that reads back to the same
// double); NaN and infinities, which JSON has no numbers for, are null; strings with quotes,
// control characters and bytes that are not UTF-8 stay valid JSON (the latter as U+FFFD).
TEST(Report, JsonNumbersRoundTripAndOddStringsStayValid) {
  RunReport r = sampleReport();
  const double values[] = {0.1 + 0.2, 0x1p-1074, 1.7976931348623157e308, 3.0000000000000004,
                           123456.789e-300};
  r.results[0].maxUlp = values[0];
  r.results[0].maxAbs = values[1];
  r.results[0].tolerance = values[2];
  r.results[1].judgement.error = values[3];
  r.seconds = values[4];
  r.results[1].maxAbs = NAN;
  r.results[1].tolerance = -INFINITY;
  r.results[0].message = std::string("tab\tnl\nbell\x07 quote\" back\\ bad\xff\xfe utf-8 \xc3\xa9");
  nlohmann::json doc = nlohmann::json::parse(toJson(r));
  const nlohmann::json &c0 = doc["cases"][0], &c1 = doc["cases"][1];
  EXPECT_EQ(c0["max_ulp"].get<double>(), values[0]);
  EXPECT_EQ(c0["max_abs_err"].get<double>(), values[1]);
  EXPECT_EQ(c0["tolerance"].get<double>(), values[2]);
  EXPECT_EQ(c1["failure"]["error"].get<double>(), values[3]);
  EXPECT_EQ(doc["seconds"].get<double>(), values[4]);
  EXPECT_TRUE(c1["max_abs_err"].is_null());
  EXPECT_TRUE(c1["tolerance"].is_null());
  EXPECT_EQ(c0["message"],
            "tab\tnl\nbell\x07 quote\" back\\ bad\xef\xbf\xbd\xef\xbf\xbd utf-8 \xc3\xa9");
}

TEST(Report, JunitCountsAndEscapes) {
  std::string xml = toJunit(sampleReport());
  EXPECT_NE(xml.find("<testsuite name=\"conform.cpu:0\" tests=\"2\" failures=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message="), std::string::npos);
  EXPECT_NE(xml.find("&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(xml.find("<&>"), std::string::npos);
  std::string m = summaryMatrix(sampleReport());
  EXPECT_NE(m.find("1/1"), std::string::npos) << m;
  EXPECT_NE(m.find("0/1"), std::string::npos) << m;
}

TEST(Report, HtmlShowsTheHeatMapFailuresAndSettings) {
  RunReport r = sampleReport();
  r.results[0].tolerance = 0.5; // add: correctly rounded, worst 0.5 ULP -> ratio 1
  r.results[1].tolerance = 3;
  r.filters = {"add*", "exp*"};
  r.version = "9.8.7";
  r.started = "2026-12-01T08:00:00Z";
  CaseResult conv = r.results[0];
  conv.id = "convert.f32.i8/special/n21";
  conv.op = "convert";
  conv.dtype = "f32->i8";
  conv.tolerance = 0;
  r.results.push_back(conv);
  std::string html = toHtml(r);
  // Cells: add f32 at its budget (ratio 1, yellow), exp f32 failing (red); a conversion is a
  // row per source type, its column the destination.
  EXPECT_NE(html.find("title=\"add f32 on cpu:0: 1/1 pass; worst 0.5 ulp / budget 0.5"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("style=\"background:hsl(0,75%,55%)\" title=\"exp f32 on cpu:0: 0/1 pass"),
            std::string::npos);
  EXPECT_NE(html.find("title=\"convert from f32 to i8 on cpu:0: 1/1 pass; worst 0.5 ulp / budget "
                      "exact"),
            std::string::npos);
  // The failure with its inputs (escaped), expected and got; the finding; the settings.
  EXPECT_NE(html.find("<td class=\"mono\">1 &lt;&amp;&gt; &quot;q&quot;</td>"), std::string::npos);
  EXPECT_EQ(html.find("<&>"), std::string::npos);
  EXPECT_NE(html.find("<td>flushes-subnormal-results</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>filter</th><td>add* exp*</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>tessera</th><td>9.8.7</td></tr>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos); // nothing from the network
}

TEST(Report, NormwiseOnlyPassesAreNamed) {
  RunReport r = sampleReport();
  r.results[0].id = "kernel/layernorm/layernorm";
  r.results[0].normwiseOnly = 273;
  r.results[0].message = "passed only normwise: %y (273 elements)";
  EXPECT_NE(findingList(r).find("note: cpu:0: kernel/layernorm/layernorm passed only normwise: "
                                "%y (273 elements)\n"),
            std::string::npos)
      << findingList(r);
  EXPECT_EQ(nlohmann::json::parse(toJson(r))["cases"][0]["normwise_only"], 273);
  EXPECT_NE(toHtml(r).find("<td>passed-only-normwise</td>"), std::string::npos);
  r.results[0].normwiseOnly = 0;
  EXPECT_EQ(findingList(r).find("note:"), std::string::npos);
}

TEST(Xfail, ListsNeedReasons) {
  std::string path = testing::TempDir() + "xf.txt";
  std::string err;
  ASSERT_TRUE(writeFile(path, "# c\nexp.*/hard/*  too hard\n\n", &err));
  std::vector<XfailEntry> xs;
  ASSERT_TRUE(loadXfails(path, xs, &err)) << err;
  ASSERT_EQ(xs.size(), 1u);
  EXPECT_EQ(xs[0].reason, "too hard");
  ASSERT_TRUE(writeFile(path, "exp.*/hard/*\n", &err));
  xs.clear();
  EXPECT_FALSE(loadXfails(path, xs, &err));
  EXPECT_NE(err.find("needs a reason"), std::string::npos);
  EXPECT_TRUE(loadXfails(path + ".missing", xs, &err));
}

} // namespace
} // namespace tessera::conform
