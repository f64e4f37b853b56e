// tsr_status_t and the C++ Status / Expected: codes, messages, NULL-is-OK, and ownership.
// Expected strings are written out literally in the tests.
#include "hal/tests/hal_test_util.h"
#include "tessera/hal.hpp"

#include <gtest/gtest.h>
#include <string>

namespace tessera::hal {
namespace {

TEST(Status, NullIsOk) {
  EXPECT_EQ(tsr_status_code(nullptr), TSR_OK);
  EXPECT_STREQ(tsr_status_message(nullptr), "OK");
  tsr_status_free(nullptr);
  EXPECT_EQ(tsr_status_make(TSR_OK, "ignored %d", 1), nullptr);
}

TEST(Status, CarriesCodeAndFormattedMessage) {
  tsr_status_t s = tsr_status_make(TSR_OUT_OF_RANGE, "range [%d, %d) exceeds %s", 96, 160, "128");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(tsr_status_code(s), TSR_OUT_OF_RANGE);
  EXPECT_STREQ(tsr_status_message(s), "range [96, 160) exceeds 128");
  tsr_status_free(s);
  std::string longText(5000, 'x');
  s = tsr_status_make(TSR_INTERNAL, "%s!", longText.c_str());
  EXPECT_EQ(std::string(tsr_status_message(s)), longText + "!");
  tsr_status_free(s);
}

TEST(Status, CodeNamesMatchTheirEnumerators) {
  EXPECT_STREQ(tsr_status_code_name(TSR_OK), "OK");
  EXPECT_STREQ(tsr_status_code_name(TSR_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(tsr_status_code_name(TSR_NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(tsr_status_code_name(TSR_OUT_OF_RANGE), "OUT_OF_RANGE");
  EXPECT_STREQ(tsr_status_code_name(TSR_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(tsr_status_code_name(TSR_UNAVAILABLE), "UNAVAILABLE");
  EXPECT_STREQ(tsr_status_code_name(TSR_UNIMPLEMENTED), "UNIMPLEMENTED");
  EXPECT_STREQ(tsr_status_code_name(TSR_FAILED_PRECONDITION), "FAILED_PRECONDITION");
  EXPECT_STREQ(tsr_status_code_name(TSR_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(tsr_status_code_name(TSR_INTERNAL), "INTERNAL");
  EXPECT_STREQ(tsr_status_code_name(TSR_ABORTED), "ABORTED");
  EXPECT_STREQ(tsr_status_code_name(tsr_status_code_t(77)), "UNKNOWN");
  // The numbers are absl::StatusCode's, so statuses map one to one.
  EXPECT_EQ(int(TSR_INVALID_ARGUMENT), 3);
  EXPECT_EQ(int(TSR_UNAVAILABLE), 14);
}

TEST(Status, TypeNames) {
  EXPECT_STREQ(tsr_type_name(TSR_TYPE_BUFFER), "buffer");
  EXPECT_STREQ(tsr_type_name(TSR_TYPE_BF16), "bf16");
  EXPECT_STREQ(tsr_type_name(TSR_TYPE_F64), "f64");
  EXPECT_STREQ(tsr_type_name(tsr_type_t(0)), "invalid");
}

TEST(Status, CppStatusTakesOwnership) {
  Status ok = Status::fromC(nullptr);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.toString(), "OK");
  Status bad = Status::fromC(tsr_status_make(TSR_NOT_FOUND, "no device named '%s'", "x:0"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), TSR_NOT_FOUND);
  EXPECT_EQ(bad.toString(), "NOT_FOUND: no device named 'x:0'");
}

TEST(Status, ExpectedHoldsAValueOrAStatus) {
  Expected<int> value(42);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 42);
  Expected<int> error(Status(TSR_UNAVAILABLE, "no driver"));
  EXPECT_FALSE(error);
  EXPECT_EQ(error.status().code(), TSR_UNAVAILABLE);
  Expected<std::string> moved(std::string("abc"));
  std::string taken = std::move(moved).value();
  EXPECT_EQ(taken, "abc");
}

} // namespace
} // namespace tessera::hal
