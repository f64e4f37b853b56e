// gtest helpers for tsr_status_t: assert OK (printing the message), or assert an error's
// code and a substring of its message. Every helper frees the status it is given.
//
// Test-only; must never be included by library code.
#pragma once

#include "tessera/hal.h"

#include <gtest/gtest.h>
#include <string>

namespace tessera::hal::testing {

/// Frees `status` and returns "" if it was OK, or "CODE: message".
inline std::string consume(tsr_status_t status) {
  if (!status)
    return "";
  std::string text = std::string(tsr_status_code_name(tsr_status_code(status))) + ": " +
                     tsr_status_message(status);
  tsr_status_free(status);
  return text;
}

/// Checks code and message substring, and frees the status.
inline ::testing::AssertionResult isError(tsr_status_t status, tsr_status_code_t code,
                                          const std::string &substring) {
  if (!status)
    return ::testing::AssertionFailure() << "expected " << tsr_status_code_name(code)
                                         << " containing '" << substring << "', got OK";
  tsr_status_code_t got = tsr_status_code(status);
  std::string message = tsr_status_message(status);
  tsr_status_free(status);
  if (got != code || message.find(substring) == std::string::npos)
    return ::testing::AssertionFailure()
           << "expected " << tsr_status_code_name(code) << " containing '" << substring << "', got "
           << tsr_status_code_name(got) << ": " << message;
  return ::testing::AssertionSuccess();
}

} // namespace tessera::hal::testing

#define TSR_ASSERT_OK(expr) ASSERT_EQ(::tessera::hal::testing::consume(expr), "")
#define TSR_EXPECT_OK(expr) EXPECT_EQ(::tessera::hal::testing::consume(expr), "")
#define TSR_EXPECT_ERROR(expr, code, substring)                                                    \
  EXPECT_TRUE(::tessera::hal::testing::isError((expr), (code), (substring)))
