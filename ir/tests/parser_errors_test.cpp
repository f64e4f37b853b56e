// Malformed-input tests of the IR parser: each case asserts the exact line and column of the
// one diagnostic and a substring of its message. Positions were counted by hand from the
// input text (1-based, columns count bytes), never copied from the parser's output.
// Cases marked `verify` are rejected by the verifier (parseModule(..., verify=true)).
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir {
namespace {

using namespace std::string_literals;

struct ErrorCase {
  const char *name;
  std::string text;
  uint32_t line;
  uint32_t col;
  const char *message; // a substring of the diagnostic's message
  bool verify = false; // the error comes from the verifier
};

void PrintTo(const ErrorCase &c, std::ostream *os) { *os << c.name; }

// Line 1 of most cases; the op under test is on line 2, indented by two spaces.
#define K "kernel @k(%a: f32, %i: i32, %c: i1) {\n"
// A kernel with a buffer and a scalar parameter, for launch cases (launch header on line 3).
#define LK "kernel @k(%x: buffer<f32>, %n: i32) {\n}\n"

const ErrorCase kCases[] = {
    // --- syntax
    {"MissingColon", K "  %b = neg %a f32\n}\n", 2, 15, "expected ':', got 'f32'"},
    {"ArityTooFew", K "  %b = add %a : f32\n}\n", 2, 15, "expected ','"},
    {"ArityTooMany", K "  %b = neg %a, %a : f32\n}\n", 2, 14, "expected ':', got ','"},
    {"NotAnItem", "foo\n", 1, 1, "expected 'kernel', 'func' or 'launch', got 'foo'"},
    {"KernelWithResults", "kernel @k() -> i32 {\n}\n", 1, 13, "a kernel has no results"},
    {"FunctionRedefinition", "kernel @k() {\n}\nkernel @k() {\n}\n", 3, 8, "redefinition of @k"},
    {"ResultCountMismatch", K "  %b, %d = add %a, %a : f32\n}\n", 2, 7,
     "'add' produces one result, but 2 names are given"},
    {"StoreHasNoResults", K "  %b = store %a, %a[%i] : f32\n}\n", 2, 3,
     "'store' produces no results"},
    {"UnknownScalarType", K "  %b = neg %a : f31\n}\n", 2, 17, "unknown scalar type 'f31'"},
    {"SharedAllocNeedsSharedType", K "  %s = shared_alloc : f32\n}\n", 2, 23,
     "'shared_alloc' needs a shared<T, N> type"},
    // --- ops and modifiers
    {"UnknownOp", K "  %b = frobnicate %a : f32\n}\n", 2, 8, "unknown op 'frobnicate'"},
    {"UnknownModifier", K "  %b = add.u %i, %i : i32\n}\n", 2, 11,
     "unknown modifier '.u' for 'add'"},
    {"UnknownPredicate", K "  %b = cmp.foo %a, %a : f32\n}\n", 2, 11,
     "unknown modifier '.foo' for 'cmp'"},
    {"MissingPredicate", K "  %b = cmp %a, %a : f32\n}\n", 2, 8, "'cmp' needs a predicate"},
    {"DuplicateModifier", K "  %b = div.u.u %i, %i : i32\n}\n", 2, 13, "duplicate modifier '.u'"},
    {"MissingDimension", K "  %b = global_id : i32\n}\n", 2, 8, "needs a dimension"},
    {"IntPredicateOnFloats", K "  %b = cmp.slt %a, %a : f32\n}\n", 2, 11,
     "predicate 'slt' compares integers"},
    {"FloatPredicateOnInts", K "  %b = cmp.olt %i, %i : i32\n}\n", 2, 11,
     "predicate 'olt' compares floats"},
    // --- types
    {"AnnotationMismatch", K "  %b = add %a, %a : f64\n}\n", 2, 21,
     "type f64 does not match %a (f32)"},
    {"SecondOperandMismatch", K "  %b = add %a, %i : f32\n}\n", 2, 21,
     "type f32 does not match %i (i32)"},
    {"ConvertSourceMismatch", K "  %b = convert %a : i32 -> f16\n}\n", 2, 21,
     "type i32 does not match %a (f32)"},
    {"LoadFromScalar", K "  %b = load %a[%i] : f32\n}\n", 2, 13,
     "%a is not a buffer or shared array"},
    {"LoadElementMismatch", "kernel @k(%x: buffer<i32>, %i: i32) {\n  %b = load %x[%i] : f32\n}\n",
     2, 22, "does not match the element type of %x (buffer<i32>)"},
    {"FloatOpOnInts", K "  %b = exp %i : i32\n}\n", 2, 3, "'exp' expects float operands", true},
    {"FmaOnInts", K "  %b = fma %i, %i, %i : i32\n}\n", 2, 3, "'fma' expects float operands", true},
    {"AddOnI1", K "  %b = add %c, %c : i1\n}\n", 2, 3, "'add' expects", true},
    {"SharedAllocNotTopLevel", K "  if %c {\n    %s = shared_alloc : shared<f32, 4>\n  }\n}\n", 3,
     5, "only allowed in a kernel's top-level block", true},
    // --- names
    {"UndefinedValue", K "  %b = neg %zz : f32\n}\n", 2, 12, "use of undefined value %zz"},
    {"Redefinition", K "  %b = neg %a : f32\n  %b = abs %a : f32\n}\n", 3, 3, "redefinition of %b"},
    {"RedefinitionOfParameter", K "  %a = neg %a : f32\n}\n", 2, 3, "redefinition of %a"},
    {"DuplicateParameter", "kernel @k(%a: f32, %a: i32) {\n}\n", 1, 20, "redefinition of %a"},
    {"RedefinitionInSiblingRegion",
     K "  if %c {\n    %t = neg %a : f32\n  } else {\n    %t = abs %a : f32\n  }\n}\n", 5, 5,
     "redefinition of %t"},
    {"ValueNotVisibleOutsideRegion",
     K "  if %c {\n    %t = neg %a : f32\n  }\n  %u = abs %t : f32\n}\n", 5, 12,
     "use of undefined value %t"},
    {"InductionVariableAfterLoop",
     K "  for %j = %i to %i step %i : i32 {\n  }\n  %u = add %j, %j : i32\n}\n", 4, 12,
     "use of undefined value %j"},
    {"EmptyName", K "  %b = neg % : f32\n}\n", 2, 12, "expected a name after '%'"},
    {"CallUndefinedFunction", K "  call @nope()\n}\n", 2, 8, "call to undefined function @nope"},
    {"CallResultMismatch",
     "func @f() -> i32 {\n  %z = const 0 : i32\n  return %z\n}\nkernel @k() {\n"
     "  %r = call @f() -> f32\n}\n",
     6, 18, "result types do not match the signature of @f"},
    // --- nesting and terminators
    {"UnclosedBrace", "kernel @k() {\n  barrier\n", 3, 1, "expected an op or '}', got end of file"},
    {"UnclosedKernelBeforeNextItem", "kernel @k() {\n  barrier\nkernel @j() {\n}\n", 3, 1,
     "expected '}' before 'kernel'"},
    {"ElseWithoutIf", "kernel @k() {\n  else {\n  }\n}\n", 2, 3, "'else' without a matching 'if'"},
    {"YieldOutsideRegion", "kernel @k() {\n  yield\n}\n", 2, 3, "'yield' is only allowed"},
    {"ReturnInsideLoop", K "  for %j = %i to %i step %i : i32 {\n    return\n  }\n}\n", 3, 5,
     "'return' is only allowed at the end of a function body"},
    {"OpAfterTerminator", K "  if %c {\n    yield\n    barrier\n  }\n}\n", 4, 5,
     "expected '}' after the terminator"},
    {"ConditionOutsideWhile", K "  if %c {\n    condition %c\n  }\n}\n", 3, 5,
     "'condition' is only allowed"},
    {"YieldEndsWhileFirstRegion", K "  while {\n    yield\n  } do {\n  }\n}\n", 3, 5,
     "must end with 'condition'"},
    {"WhileWithoutCondition", K "  while {\n  } do {\n  }\n}\n", 3, 3,
     "must end with 'condition %c'"},
    {"IfResultsWithoutElse", K "  %r = if %c -> (f32) {\n    yield %a\n  }\n}\n", 2, 8,
     "'if' with results needs an 'else' region"},
    {"ForResultsWithoutYield", K "  %r = for %j = %i to %i step %i iter(%s = %a) : i32 {\n  }\n}\n",
     3, 3, "must end with 'yield' of its values"},
    {"ForResultsEmptyYield",
     K "  %r = for %j = %i to %i step %i iter(%s = %a) : i32 {\n    yield\n  }\n}\n", 3, 5,
     "must end with 'yield' of its values"},
    {"FunctionResultsWithoutReturn", "func @f() -> i32 {\n}\n", 2, 1,
     "must end with 'return' of its values"},
    // --- literals and lexing
    {"HugeIntegerLiteral", K "  %b = const 99999999999999999999 : i64\n}\n", 2, 14,
     "integer literal out of range"},
    {"IntegerOutOfTypeRange", K "  %b = const 300 : i8\n}\n", 2, 14,
     "integer literal out of range for i8"},
    {"HugeFloatLiteral", K "  %b = const 1e999 : f64\n}\n", 2, 14, "float literal out of range"},
    {"HugeNegativeFloatLiteral", K "  %b = const -1e999 : f32\n}\n", 2, 14,
     "float literal out of range"},
    {"FloatOutOfF32Range", K "  %b = const 1e39 : f32\n}\n", 2, 14,
     "float literal out of range for f32"},
    {"FloatOutOfF16Range", K "  %b = const 65520 : f16\n}\n", 2, 14,
     "float literal out of range for f16"},
    {"BadI1Literal", K "  %b = const 2 : i1\n}\n", 2, 14, "expected 'true' or 'false' for i1"},
    {"FloatLiteralForInt", K "  %b = const 1.5 : i32\n}\n", 2, 14,
     "expected an integer literal for i32"},
    {"EmptyHexLiteral", K "  %b = const 0x : i32\n}\n", 2, 14, "expected hex digits after '0x'"},
    {"DigitAfterPoint", K "  %b = const 1. : f32\n}\n", 2, 16, "expected a digit after '.'"},
    {"BadNumericLiteral", K "  %b = const 12abc : i32\n}\n", 2, 14, "invalid numeric literal"},
    {"StrayCharacter", K "  # not a comment\n}\n", 2, 3, "unexpected character '#'"},
    {"StrayMinus", K "  %b = neg - : f32\n}\n", 2, 12, "unexpected character '-'"},
    {"InvalidUtf8", "kernel @k() {\n  \xff\n}\n", 2, 3, "invalid UTF-8 byte 0xFF"},
    {"InvalidUtf8InComment", "// caf\xc3\nkernel @k() {\n}\n", 1, 7, "invalid UTF-8 byte 0xC3"},
    {"NonAsciiCharacter", "kernel @k() {\n  \xc3\xa9\n}\n", 2, 3, "unexpected character U+00E9"},
    {"NulByte", "kernel @k() {\n  barrier\0\n}\n"s, 2, 10, "unexpected NUL byte"},
    {"CrLfLines", "kernel @k() {\r\n  %b = neg %q : f32\r\n}\r\n", 2, 12,
     "use of undefined value %q"},
    // --- truncated input
    {"TruncatedMidOp", "kernel @k(%a: f32) {\n  %b = add %a,", 2, 15,
     "expected a value name, got end of file"},
    {"TruncatedMidHeader", "kernel @k(%a: ", 1, 15, "expected a type, got end of file"},
    {"TruncatedMidLaunch", LK "launch @k grid(1) workgroup(1) {\n  %n = ", 4, 8,
     "expected an integer literal for i32, got end of file"},
    // --- launch
    {"LaunchUnknownKernel", "launch @nope grid(1) workgroup(1) {\n}\n", 1, 8,
     "launch of unknown kernel @nope"},
    {"LaunchOfFunction", "func @f() {\n}\nlaunch @f grid(1) workgroup(1) {\n}\n", 3, 8,
     "which is not a kernel"},
    {"LaunchMissingParameter", LK "launch @k grid(1) workgroup(1) {\n  %x[4] = fill(0)\n}\n", 5, 1,
     "has no initialiser for %n"},
    {"LaunchUnknownParameter", LK "launch @k grid(1) workgroup(1) {\n  %q = 1\n}\n", 4, 3,
     "kernel @k has no parameter %q"},
    {"LaunchDuplicateParameter", LK "launch @k grid(1) workgroup(1) {\n  %n = 1\n  %n = 2\n}\n", 5,
     3, "duplicate initialiser for %n"},
    {"LaunchBadGenerator", LK "launch @k grid(1) workgroup(1) {\n  %x[4] = gaussian(0, 1)\n}\n", 4,
     11, "unknown generator 'gaussian'"},
    {"LaunchGeneratorMissingArgument", LK "launch @k grid(1) workgroup(1) {\n  %x[4] = fill()\n}\n",
     4, 16, "expected a number, got ')'"},
    {"LaunchGeneratorForScalar", LK "launch @k grid(1) workgroup(1) {\n  %n[4] = fill(0)\n}\n", 4,
     5, "scalar parameter %n takes '= literal'"},
    {"LaunchLiteralForBuffer", LK "launch @k grid(1) workgroup(1) {\n  %x = 1.0\n}\n", 4, 6,
     "buffer parameter %x takes '[N] = generator'"},
    {"LaunchZeroGrid", LK "launch @k grid(0) workgroup(1) {\n}\n", 3, 16,
     "a launch dimension must be between 1 and 4294967295"},
    {"LaunchFourDims", LK "launch @k grid(1) workgroup(1, 2, 3, 4) {\n}\n", 3, 36,
     "expected ')', got ','"},
    {"LaunchDuplicate",
     LK "launch @k grid(1) workgroup(1) {\n  %x[1] = special\n  %n = 1\n}\n"
        "launch @k grid(1) workgroup(1) {\n}\n",
     7, 8, "duplicate launch of @k"},
    {"LaunchLiteralOutOfRange", LK "launch @k grid(1) workgroup(1) {\n  %n = 0x100000000\n}\n", 4,
     8, "integer literal out of range for i32"},
};

class ParserErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrors, ReportsOneLocatedDiagnostic) {
  const ErrorCase &c = GetParam();
  ParseResult r = parseModule(c.text, "test.tir", /*verify=*/true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.module, nullptr);
  ASSERT_FALSE(r.diags.empty());
  if (!c.verify) {
    EXPECT_EQ(r.diags.size(), 1u);
    // Parser errors do not depend on verification.
    ParseResult unverified = parseModule(c.text, "test.tir", /*verify=*/false);
    ASSERT_EQ(unverified.diags.size(), 1u);
    EXPECT_EQ(unverified.diags[0].str(), r.diags[0].str());
  }
  const Diagnostic &d = r.diags[0];
  EXPECT_EQ(d.file, "test.tir");
  EXPECT_EQ(d.loc.line, c.line) << d.str();
  EXPECT_EQ(d.loc.col, c.col) << d.str();
  EXPECT_NE(d.message.find(c.message), std::string::npos) << d.str();
}

INSTANTIATE_TEST_SUITE_P(Cases, ParserErrors, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ErrorCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(ParserErrorsExtra, NestingDepthIsBounded) {
  std::string text = "kernel @k(%c: i1) {\n";
  for (int i = 0; i < 300; ++i)
    text += "if %c {\n";
  // The function body is region 1; the 256th `if` (on line 257) opens region 257.
  ParseResult r = parseModule(text, "deep.tir");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags[0].loc.line, 257u);
  EXPECT_EQ(r.diags[0].loc.col, 7u);
  EXPECT_NE(r.diags[0].message.find("nested too deeply"), std::string::npos);
}

TEST(ParserErrorsExtra, DeepButAllowedNestingParses) {
  std::string text = "kernel @k(%c: i1) {\n";
  for (int i = 0; i < 255; ++i)
    text += "if %c {\n";
  for (int i = 0; i < 255; ++i)
    text += "}\n";
  text += "}\n";
  ParseResult r = parseModule(text, "deep.tir");
  EXPECT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
}

TEST(ParserErrorsExtra, UnreadableFile) {
  ParseResult r = parseFile("/nonexistent/dir/x.tir");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.module, nullptr);
  EXPECT_EQ(r.diags[0].file, "/nonexistent/dir/x.tir");
  EXPECT_EQ(r.diags[0].loc.line, 0u);
  EXPECT_EQ(r.diags[0].loc.col, 0u);
  EXPECT_EQ(r.diags[0].message, "cannot open file");
}

TEST(ParserErrorsExtra, DirectoryIsUnreadable) {
  ParseResult r = parseFile(TESSERA_SOURCE_DIR);
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.module, nullptr);
  EXPECT_EQ(r.diags[0].loc.line, 0u);
  EXPECT_EQ(r.diags[0].message, "cannot open file");
}

TEST(ParserErrorsExtra, EveryPrefixOfAValidFileFailsCleanly) {
  const std::string text = K "  %z = const 0 : i32\n"
                             "  %r = for %j = %z to %i step %i iter(%s = %a) : i32 {\n"
                             "    %t = add %s, %a : f32\n    yield %t\n  }\n}\n"
                             "launch @k grid(1) workgroup(1) {\n  %a = 1.0\n  %i = 2\n"
                             "  %c = true\n}\n";
  ASSERT_TRUE(parseModule(text, "full.tir").ok());
  for (size_t n = 0; n < text.size(); ++n) {
    std::string prefix = text.substr(0, n);
    ParseResult r = parseModule(prefix, "prefix.tir");
    if (r.ok())
      continue; // e.g. the whole kernel without the launch
    ASSERT_EQ(r.diags.size(), 1u) << prefix;
    EXPECT_GE(r.diags[0].loc.line, 1u) << prefix;
  }
}

} // namespace
} // namespace tessera::ir
