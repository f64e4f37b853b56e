// Round-trip tests of the IR text format: every example file, inline snippets covering every
// op family, modifier and launch form against hand-checked canonical text, and IR built with
// ir::Builder. Expected texts are written out by hand, never produced by the printer under
// test. Must never depend on the examples being a particular set of files.
#include "ir/core/builder.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::ir {
namespace {

std::string diagText(const ParseResult &r) {
  std::string s;
  for (const Diagnostic &d : r.diags)
    s += d.str() + "\n";
  return s;
}

/// Parses `text` (without verifying: this file tests the parser), prints it, and checks the
/// printed text against `expected` and that printing is a fixed point.
void expectCanonical(const std::string &text, const std::string &expected) {
  ParseResult r = parseModule(text, "snippet", /*verify=*/false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  std::string printed = printModule(*r.module);
  EXPECT_EQ(printed, expected);
  ParseResult again = parseModule(printed, "printed", /*verify=*/false);
  ASSERT_TRUE(again.ok()) << diagText(again);
  EXPECT_EQ(printModule(*again.module), printed);
}

const Op &opAt(const Module &m, size_t fn, size_t index) {
  return *m.functions.at(fn)->body->ops.at(index);
}

TEST(ParserRoundTrip, ExampleFiles) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(TESSERA_SOURCE_DIR) / "ir" / "examples";
  std::vector<fs::path> files;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tir")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u) << "expected at least 10 example files in " << dir;
  for (const fs::path &p : files) {
    SCOPED_TRACE(p.string());
    ParseResult r = parseFile(p.string());
    ASSERT_TRUE(r.ok()) << diagText(r);
    std::string once = printModule(*r.module);
    ParseResult r2 = parseModule(once, p.string() + " (printed)");
    ASSERT_TRUE(r2.ok()) << diagText(r2) << once;
    EXPECT_EQ(printModule(*r2.module), once);
  }
}

TEST(ParserRoundTrip, ScalarOps) {
  expectCanonical(R"(// every scalar family, non-canonical spacing and numeric names
kernel @ops(%a: f32, %b: f32, %c: f32, %i: i32, %j: i32, %p: i1) {
  %7 = add %a,%b:f32   // trailing comment
  %e = exp %7 : f32
  %f = fma %a, %b, %c : f32
  %nan = isnan %f : f32
  %inf = isinf %f : f32
  %lt = cmp.olt %a, %b : f32
  %ult = cmp.ult %a, %b : f32
  %iult = cmp.ult %i, %j : i32
  %s = select %p, %a, %b : f32
  %d = div.u %i, %j : i32
  %sh = shr %i, %j : i32
  %cv = convert.rtz.sat.u %a : f32 -> i8
  %cv2 = convert.rtn %i : i32 -> f16
  %bc = bitcast %a : f32 -> i32
  %x = and %p, %nan : i1
  %5 = not %x : i1
}
)",
                  R"(kernel @ops(%a: f32, %b: f32, %c: f32, %i: i32, %j: i32, %p: i1) {
  %0 = add %a, %b : f32
  %e = exp %0 : f32
  %f = fma %a, %b, %c : f32
  %nan = isnan %f : f32
  %inf = isinf %f : f32
  %lt = cmp.olt %a, %b : f32
  %ult = cmp.ult %a, %b : f32
  %iult = cmp.ult %i, %j : i32
  %s = select %p, %a, %b : f32
  %d = div.u %i, %j : i32
  %sh = shr %i, %j : i32
  %cv = convert.u.sat.rtz %a : f32 -> i8
  %cv2 = convert.rtn %i : i32 -> f16
  %bc = bitcast %a : f32 -> i32
  %x = and %p, %nan : i1
  %1 = not %x : i1
}
)");
}

TEST(ParserRoundTrip, ScalarOpStructure) {
  ParseResult r = parseModule(R"(kernel @k(%a: f32, %i: i32) {
  %0 = cmp.ult %a, %a : f32
  %1 = cmp.ult %i, %i : i32
  %2 = cmp.uno %a, %a : f32
  %three = convert.u.sat.rtp %a : f32 -> i16
  %g = global_id.z : i64
  %sum = add %i, %i : i32
}
)",
                              "s", false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  const Module &m = *r.module;
  EXPECT_EQ(opAt(m, 0, 0).mods.pred, CmpPred::FUlt);
  EXPECT_EQ(opAt(m, 0, 1).mods.pred, CmpPred::Ult);
  EXPECT_EQ(opAt(m, 0, 2).mods.pred, CmpPred::Uno);
  EXPECT_EQ(opAt(m, 0, 0).result()->type, Type::scalar(Scalar::I1));
  const Op &cv = opAt(m, 0, 3);
  EXPECT_TRUE(cv.mods.isUnsigned);
  EXPECT_TRUE(cv.mods.sat);
  EXPECT_EQ(cv.mods.round, Round::Rtp);
  EXPECT_EQ(cv.result()->type, Type::scalar(Scalar::I16));
  EXPECT_EQ(opAt(m, 0, 4).mods.dim, 2);
  EXPECT_EQ(opAt(m, 0, 4).result()->type, Type::scalar(Scalar::I64));
  // Name hints: numeric names leave the hint empty.
  EXPECT_EQ(opAt(m, 0, 0).result()->name, "");
  EXPECT_EQ(opAt(m, 0, 3).result()->name, "three");
  // Locations: the first token of the op; the function's keyword.
  EXPECT_EQ(opAt(m, 0, 5).loc.line, 7u);
  EXPECT_EQ(opAt(m, 0, 5).loc.col, 3u);
  EXPECT_EQ(m.functions[0]->loc.line, 1u);
  EXPECT_EQ(m.functions[0]->loc.col, 1u);
  // The implicit return ends the body.
  EXPECT_EQ(m.functions[0]->body->ops.back()->kind, OpKind::Return);
}

TEST(ParserRoundTrip, MemoryAndSimtOps) {
  std::string text = "kernel @mem(%buf: buffer<f32, readwrite>, %ib: buffer<i32>, "
                     "%ro: buffer<i64, readonly>, %wo: buffer<f16, writeonly>, %n: i32) {\n"
                     R"(  %sh = shared_alloc : shared<f32, 64>
  %g = global_id.x : i32
  %l = local_id.y : i32
  %gr = group_id.z : i64
  %ls = local_size.x : i32
  %ng = num_groups.y : i32
  %ss = subgroup_size : i32
  %si = subgroup_id : i32
  %sl = subgroup_local_id : i32
  %v = load %buf[%g] : f32
  store %v, %sh[%l] : f32
  barrier
  %w = load %sh[%gr] : f32
  %o1 = atomic_add %buf[%g], %w : f32
  %o2 = atomic_min.u %ib[%g], %n : i32
  %o3 = atomic_max %ib[%g], %n : i32
  %o4 = atomic_xchg %ib[%g], %n : i32
  %o5 = atomic_cas %ib[%g], %n, %o4 : i32
  %r1 = subgroup_add %w : f32
  %r2 = subgroup_min.u %n : i32
  %r3 = subgroup_max %w : f32
  %q1 = shuffle %w, %sl : f32
  %q2 = shuffle_xor %w, %sl : f32
  %q3 = broadcast %w, %ss : f32
}
)";
  std::string expected = text;
  expected.replace(expected.find("buffer<f32, readwrite>"), 22, "buffer<f32>");
  expectCanonical(text, expected);
  ParseResult r = parseModule(text, "s", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(opAt(*r.module, 0, 0).result()->type, Type::shared(Scalar::F32, 64));
  EXPECT_EQ(opAt(*r.module, 0, 9).result()->type, Type::scalar(Scalar::F32));
  EXPECT_EQ(opAt(*r.module, 0, 9).operands.size(), 2u);
  EXPECT_EQ(opAt(*r.module, 0, 10).operands.size(), 3u);
  EXPECT_EQ(opAt(*r.module, 0, 17).operands.size(), 4u);
  EXPECT_EQ(r.module->functions[0]->body->args[3]->type,
            Type::buffer(Scalar::F16, Access::WriteOnly));
}

TEST(ParserRoundTrip, ConstLiterals) {
  expectCanonical(R"(kernel @c() {
  %c0 = const 0.1 : f16
  %c1 = const 0.1 : bf16
  %c2 = const 0.1 : f32
  %c3 = const 0.1 : f64
  %c4 = const 0xff : i8
  %c5 = const -1 : i64
  %c6 = const true : i1
  %c7 = const 1 : i1
  %c8 = const 1e-30 : f16
  %c9 = const -inf : f32
  %c10 = const nan : f64
  %c11 = const 65519 : f16
  %c12 = const 18446744073709551615 : i64
  %c13 = const -9223372036854775808 : i64
  %c14 = const 3 : f32
  %c15 = const 0 : i1
  %c16 = const -0.0 : f32
  %c17 = const 2.5E3 : bf16
  %c18 = const -128 : i8
  %c19 = const 65535 : i16
  %c20 = const 1e-400 : f64
}
)",
                  R"(kernel @c() {
  %c0 = const 0.0999755859375 : f16
  %c1 = const 0.10009765625 : bf16
  %c2 = const 0.1 : f32
  %c3 = const 0.1 : f64
  %c4 = const -1 : i8
  %c5 = const -1 : i64
  %c6 = const true : i1
  %c7 = const true : i1
  %c8 = const 0.0 : f16
  %c9 = const -inf : f32
  %c10 = const nan : f64
  %c11 = const 65504.0 : f16
  %c12 = const -1 : i64
  %c13 = const -9223372036854775808 : i64
  %c14 = const 3.0 : f32
  %c15 = const false : i1
  %c16 = const -0.0 : f32
  %c17 = const 2496.0 : bf16
  %c18 = const -128 : i8
  %c19 = const -1 : i16
  %c20 = const 0.0 : f64
}
)");
  ParseResult r = parseModule(R"(kernel @c() {
  %a = const 0.1 : f32
  %b = const 0xff : i8
  %c = const -2 : i16
  %d = const 5.960464477539063e-8 : f16
  %e = const 2.9802322387695312e-8 : f16
  %f = const 8.940696716308594e-8 : f16
}
)",
                              "s", false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  EXPECT_EQ(opAt(*r.module, 0, 0).literal.f, static_cast<double>(0.1f));
  EXPECT_EQ(opAt(*r.module, 0, 1).literal.i, 0xFFu);
  EXPECT_EQ(opAt(*r.module, 0, 2).literal.i, 0xFFFEu);
  EXPECT_EQ(opAt(*r.module, 0, 3).literal.f, std::ldexp(1.0, -24)); // smallest f16 subnormal
  EXPECT_EQ(opAt(*r.module, 0, 4).literal.f, 0.0);                  // tie to even: 0
  EXPECT_EQ(opAt(*r.module, 0, 5).literal.f, std::ldexp(2.0, -24)); // tie to even: 2 ulp
}

// Integer literals for float types round once, from the integer: no double in between that
// could make a false tie, and past 64 bits they are still numbers (docs/ir.md, "Rules").
TEST(ParserRoundTrip, IntegerLiteralsForFloatTypesRoundOnce) {
  ParseResult r = parseModule(R"(kernel @c() {
  %a = const 1152921573326323713 : f32
  %b = const -1152921573326323713 : f32
  %c = const 9007199254740993 : f64
  %d = const 123456789012345678901234567890 : f32
  %e = const 18446744073709551615 : bf16
  %f = const 1157425104234217473 : bf16
}
)",
                              "s", false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  // 2^60 + 2^36 + 1 is just above the tie between 2^60 and 2^60 + 2^37 in f32; as a double
  // it is 2^60 + 2^36, the tie itself, which rounds to even: 2^60.
  double up = std::ldexp(1.0, 60) + std::ldexp(1.0, 37);
  EXPECT_EQ(opAt(*r.module, 0, 0).literal.f, up);
  EXPECT_EQ(opAt(*r.module, 0, 1).literal.f, -up);
  EXPECT_EQ(opAt(*r.module, 0, 2).literal.f, 9007199254740992.0); // 2^53 + 1: a tie in f64
  EXPECT_EQ(opAt(*r.module, 0, 3).literal.f, static_cast<double>(1.2345679e29f));
  EXPECT_EQ(opAt(*r.module, 0, 4).literal.f, std::ldexp(1.0, 64)); // 2^64 - 1
  // 2^60 + 2^52 + 1: above bf16's tie between 2^60 and 2^60 + 2^53.
  EXPECT_EQ(opAt(*r.module, 0, 5).literal.f, std::ldexp(1.0, 60) + std::ldexp(1.0, 53));

  // Negative integers past -2^63 round the same way (they were refused as out of range,
  // while -2^64 was read as a float literal: adversarial round 6).
  ParseResult neg = parseModule(R"(kernel @c() {
  %a = const -9223372036854775809 : f64
  %b = const -18446744073709551615 : f64
  %c = const -1152921573326323713 : f32
  %d = const -9223372036854775809 : i64
}
)",
                                "s", false);
  ASSERT_EQ(neg.diags.size(), 1u) << diagText(neg);
  EXPECT_NE(diagText(neg).find("5:14: error: integer literal out of range for i64"),
            std::string::npos)
      << diagText(neg);
  ParseResult negOk = parseModule(R"(kernel @c() {
  %a = const -9223372036854775809 : f64
  %b = const -18446744073709551615 : f64
}
)",
                                  "s", false);
  ASSERT_TRUE(negOk.ok()) << diagText(negOk);
  EXPECT_EQ(opAt(*negOk.module, 0, 0).literal.f, -std::ldexp(1.0, 63));
  EXPECT_EQ(opAt(*negOk.module, 0, 1).literal.f, -std::ldexp(1.0, 64));

  ParseResult wide = parseModule(
      "kernel @c() {\n  %a = const 123456789012345678901234567890 : i64\n}\n", "s", false);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(diagText(wide).find("integer literal out of range for i64"), std::string::npos)
      << diagText(wide);
}

TEST(ParserRoundTrip, ControlFlowAndCalls) {
  expectCanonical(R"(kernel @main(%out: buffer<i32>, %n: i32) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %s, %t = call @pair(%n)
  %u = call @sq(%s) -> i32
  call @nothing(%u)
  %sum = for %i = %zero to %n step %one iter(%acc = %zero) : i32 {
    %a2 = add %acc, %i : i32
    yield %a2
  }
  for %k = %zero to %n step %one iter() : i32 {
    store %k, %out[%k] : i32
    yield
  }
  %c = cmp.slt %sum, %n : i32
  %r = if %c -> i32 {
    yield %one
  } else {
    yield %zero
  }
  if %c {
    store %r, %out[%zero] : i32
  } else {
  }
  %w1, %w2 = while iter(%x = %zero, %y = %one) {
    %go = cmp.slt %x, %n : i32
    condition %go
  } do {
    %x2 = add %x, %y : i32
    yield %x2, %y
  }
  while {
    %f = const false : i1
    condition %f
  } do {
  }
  store %w1, %out[%one] : i32
  return
}
func @pair(%v: i32) -> (i32, i32) {
  return %v, %v
}
func @sq(%v: i32) -> i32 {
  %m = mul %v, %v : i32
  return %m
}
func @nothing(%v: i32) {
}
)",
                  R"(kernel @main(%out: buffer<i32>, %n: i32) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %s, %t = call @pair(%n) -> (i32, i32)
  %u = call @sq(%s) -> i32
  call @nothing(%u)
  %sum = for %i = %zero to %n step %one iter(%acc = %zero) : i32 {
    %a2 = add %acc, %i : i32
    yield %a2
  }
  for %k = %zero to %n step %one : i32 {
    store %k, %out[%k] : i32
  }
  %c = cmp.slt %sum, %n : i32
  %r = if %c -> (i32) {
    yield %one
  } else {
    yield %zero
  }
  if %c {
    store %r, %out[%zero] : i32
  }
  %w1, %w2 = while iter(%x = %zero, %y = %one) {
    %go = cmp.slt %x, %n : i32
    condition %go
  } do {
    %x2 = add %x, %y : i32
    yield %x2, %y
  }
  while {
    %f = const false : i1
    condition %f
  } do {
  }
  store %w1, %out[%one] : i32
}

func @pair(%v: i32) -> (i32, i32) {
  return %v, %v
}

func @sq(%v: i32) -> i32 {
  %m = mul %v, %v : i32
  return %m
}

func @nothing(%v: i32) {
}
)");
}

TEST(ParserRoundTrip, RegionStructure) {
  ParseResult r = parseModule(R"(kernel @k(%n: i64) {
  %z = const 0 : i64
  %o = const 1 : i64
  %c = const true : i1
  %r = for %i = %z to %n step %o iter(%a = %z) : i64 {
    yield %i
  }
  if %c {
  }
  %w = while iter(%x = %r) {
    condition %c
  } do {
    yield %x
  }
}
)",
                              "s", false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  const Op &f = opAt(*r.module, 0, 3);
  ASSERT_EQ(f.regions.size(), 1u);
  ASSERT_EQ(f.region(0).args.size(), 2u);
  EXPECT_EQ(f.region(0).args[0]->name, "i");
  EXPECT_EQ(f.region(0).args[0]->type, Type::scalar(Scalar::I64));
  EXPECT_EQ(f.region(0).parentOp, &f);
  EXPECT_EQ(f.operands.size(), 4u);
  const Op &i = opAt(*r.module, 0, 4);
  ASSERT_EQ(i.regions.size(), 2u); // the else region always exists
  EXPECT_EQ(i.region(1).ops.size(), 1u);
  EXPECT_EQ(i.region(1).ops[0]->kind, OpKind::Yield);
  const Op &w = opAt(*r.module, 0, 5);
  ASSERT_EQ(w.regions.size(), 2u);
  EXPECT_EQ(w.region(0).args.size(), 1u);
  EXPECT_EQ(w.region(1).args.size(), 1u);
  EXPECT_EQ(w.region(1).args[0]->name, "x");
  EXPECT_EQ(w.region(0).terminator()->kind, OpKind::Condition);
  // The yield in the do region uses the do region's own argument.
  EXPECT_EQ(w.region(1).terminator()->operands[0], w.region(1).args[0].get());
}

TEST(ParserRoundTrip, LaunchForms) {
  const std::string header =
      "kernel @k(%x: buffer<f32, readonly>, %y: buffer<f16>, %i: buffer<i32>, %z: buffer<f64>, "
      "%s: buffer<i8>, %a: f32, %n: i32, %h: f16, %b: i1, %l: i64) {\n";
  const std::string text = header + R"(}

launch @k grid(16, 2, 3) workgroup(64, 2) seed(18446744073709551615) {
  %n = -7
  %a = 0.1
  %x[10] = uniform(-1, 1.5)
  %y[20] = normal(0, 2e0)
  %i[30] = iota(5, -1)
  %z[40] = fill(inf)
  %s[1] = special
  %h = 0.1
  %b = true
  %l = 0x7fffffffffffffff
}
)";
  expectCanonical(text, header + R"(}

launch @k grid(16, 2, 3) workgroup(64, 2) seed(18446744073709551615) {
  %x[10] = uniform(-1.0, 1.5)
  %y[20] = normal(0.0, 2.0)
  %i[30] = iota(5.0, -1.0)
  %z[40] = fill(inf)
  %s[1] = special
  %a = 0.1
  %n = -7
  %h = 0.0999755859375
  %b = true
  %l = 9223372036854775807
}
)");
  ParseResult r = parseModule(text, "s", false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  const Function &k = *r.module->functions[0];
  ASSERT_TRUE(k.launch.has_value());
  const LaunchSpec &l = *k.launch;
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{16, 2, 3}));
  EXPECT_EQ(l.workgroup, (std::array<uint32_t, 3>{64, 2, 1}));
  EXPECT_EQ(l.seed, UINT64_MAX);
  EXPECT_EQ(l.loc.line, 4u);
  EXPECT_EQ(l.loc.col, 1u);
  ASSERT_EQ(l.args.size(), 10u); // in parameter order, not text order
  EXPECT_EQ(l.args[0].param, "x");
  EXPECT_EQ(l.args[0].kind, ArgInit::Kind::Uniform);
  EXPECT_EQ(l.args[0].count, 10);
  EXPECT_EQ(l.args[0].a, -1.0);
  EXPECT_EQ(l.args[0].b, 1.5);
  EXPECT_EQ(l.args[0].loc.line, 7u);
  EXPECT_EQ(l.args[0].loc.col, 3u);
  EXPECT_EQ(l.args[1].kind, ArgInit::Kind::Normal);
  EXPECT_EQ(l.args[2].kind, ArgInit::Kind::Iota);
  EXPECT_EQ(l.args[2].b, -1.0);
  EXPECT_EQ(l.args[3].kind, ArgInit::Kind::Fill);
  EXPECT_TRUE(std::isinf(l.args[3].a));
  EXPECT_EQ(l.args[4].kind, ArgInit::Kind::Special);
  EXPECT_EQ(l.args[5].param, "a");
  EXPECT_EQ(l.args[5].kind, ArgInit::Kind::Scalar);
  EXPECT_EQ(l.args[5].scalar.f, static_cast<double>(0.1f));
  EXPECT_EQ(l.args[6].scalar.i, 0xFFFFFFF9u);
  EXPECT_EQ(l.args[8].scalar.i, 1u);
  EXPECT_EQ(l.args[9].scalar.i, 0x7fffffffffffffffu);
}

TEST(ParserRoundTrip, LaunchBeforeKernelAndCallBeforeFunc) {
  ParseResult r = parseModule(R"(launch @k grid(1) workgroup(1) {
  %v = 2
}
kernel @k(%v: i32) {
  %r = call @f(%v)
}
func @f(%a: i32) -> i32 {
  return %a
}
)",
                              "s");
  ASSERT_TRUE(r.ok()) << diagText(r);
  ASSERT_TRUE(r.module->functions[0]->launch.has_value());
  EXPECT_EQ(opAt(*r.module, 0, 0).result()->type, Type::scalar(Scalar::I32));
}

// Numeric names carry no hint: the printer renumbers parameters, and the launch spec must
// follow the new names and keep each initialiser's value and type.
TEST(ParserRoundTrip, LaunchWithNumericParamNames) {
  expectCanonical("kernel @k(%0: i32, %5: f32) {\n}\n"
                  "launch @k grid(1) workgroup(1) {\n  %0 = 3\n  %5 = 2.5\n}\n",
                  "kernel @k(%0: i32, %1: f32) {\n}\n\n"
                  "launch @k grid(1) workgroup(1) {\n  %0 = 3\n  %1 = 2.5\n}\n");
}

TEST(ParserRoundTrip, BuilderKernelReparses) {
  Module m;
  Function *sq = m.addFunction(false, "square");
  sq->resultTypes = {Type::scalar(Scalar::F32)};
  Value *sx = sq->body->addArg(Type::scalar(Scalar::F32), "x");
  {
    Builder b(*sq->body);
    Value *r[] = {b.mul(sx, sx)};
    b.ret(r);
  }
  Function *k = m.addFunction(true, "built");
  Value *buf = k->body->addArg(Type::buffer(Scalar::F32), "buf");
  Value *n = k->body->addArg(Type::scalar(Scalar::I32), "n");
  Builder b(*k->body);
  Value *sh = b.sharedAlloc(Scalar::F32, 32);
  Value *gid = b.workItem(OpKind::GlobalId, 0);
  Value *zero = b.constInt(0, Scalar::I32);
  Value *one = b.constInt(1, Scalar::I32);
  Value *inb = b.cmp(CmpPred::Slt, gid, n);
  Value *half = b.constFloat(0.5, Scalar::F32);
  b.ifOp(inb, {}, [&](Builder &t, std::span<Value *const>) {
    Value *v = t.load(buf, gid);
    Value *inits[] = {v};
    std::vector<Value *> acc =
        t.forLoop(zero, n, one, inits, [&](Builder &body, std::span<Value *const> args) {
          Value *sum = body.add(args[1], half);
          Value *ys[] = {sum};
          body.yield(ys);
        });
    Value *args[] = {acc[0]};
    Value *sqv = t.call(*sq, args)[0];
    Value *c = t.convert(sqv, Scalar::F16, Mods{false, true, Round::Rtz});
    Value *back = t.convert(c, Scalar::F32);
    t.store(back, buf, gid);
    t.store(back, sh, zero);
  });
  Value *inits[] = {zero};
  b.whileLoop(
      inits,
      [&](Builder &before, std::span<Value *const> args) {
        before.condition(before.cmp(CmpPred::Slt, args[0], n));
      },
      [&](Builder &after, std::span<Value *const> args) {
        Value *next[] = {after.add(args[0], one)};
        after.yield(next);
      });
  b.barrier();
  b.ret();

  std::string printed = printModule(m);
  ParseResult r = parseModule(printed, "built");
  ASSERT_TRUE(r.ok()) << diagText(r) << printed;
  EXPECT_EQ(printModule(*r.module), printed);
}

} // namespace
} // namespace tessera::ir
