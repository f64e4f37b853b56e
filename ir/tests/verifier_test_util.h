// Assertions shared by the verifier tests (verifier_test.cpp, matrix_verifier_test.cpp): a
// module has exactly one diagnostic with a given text and location, at least one, or none.
// Test-only; never include outside ir/tests/.
#pragma once

#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir::testutil {

inline std::string dump(const Diagnostics &diags) {
  std::string out;
  for (const Diagnostic &d : diags)
    out += "  " + d.str() + "\n";
  return out.empty() ? "  (none)\n" : out;
}

/// Exactly one diagnostic, containing `text`, at `loc` when loc.line != 0.
inline ::testing::AssertionResult onlyError(const Module &m, const std::string &text,
                                            Loc loc = {}) {
  Diagnostics d = verifyModule(m);
  if (d.size() != 1)
    return ::testing::AssertionFailure()
           << "expected exactly one diagnostic containing '" << text << "', got:\n"
           << dump(d);
  if (d[0].message.find(text) == std::string::npos)
    return ::testing::AssertionFailure() << "expected '" << text << "', got:\n" << dump(d);
  if (loc.line && (d[0].loc.line != loc.line || d[0].loc.col != loc.col))
    return ::testing::AssertionFailure()
           << "expected location " << loc.line << ":" << loc.col << ", got:\n" << dump(d);
  if (d[0].file != m.filename)
    return ::testing::AssertionFailure() << "wrong file name in:\n" << dump(d);
  return ::testing::AssertionSuccess();
}

/// At least one diagnostic containing `text`.
inline ::testing::AssertionResult hasError(const Module &m, const std::string &text) {
  Diagnostics d = verifyModule(m);
  for (const Diagnostic &x : d)
    if (x.message.find(text) != std::string::npos)
      return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no diagnostic containing '" << text << "':\n"
                                       << dump(d);
}

inline ::testing::AssertionResult valid(const Module &m) {
  Diagnostics d = verifyModule(m);
  if (d.empty())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "unexpected diagnostics:\n" << dump(d);
}

} // namespace tessera::ir::testutil
