// CTS: the capability record (tsr_device_compiler_caps, docs/hal.md) is either absent
// (UNIMPLEMENTED: the target then reads tsr_device_info_t alone) or well formed: `version=1`
// first, every key of the device's own backend, the same bytes however it is read, and
// accepted by the device's compiler target when there is one.
#include "backends/target.h"
#include "conformance/cts/cts.h"

namespace tessera::cts {
namespace {

using CtsCompilerCaps = CtsTest;

TEST_P(CtsCompilerCaps, RecordIsAbsentOrWellFormedAndAccepted) {
  size_t len = 1;
  tsr_status_t st = tsr_device_compiler_caps(device_, nullptr, 0, &len);
  if (tsr_status_code(st) == TSR_UNIMPLEMENTED) {
    tsr_status_free(st);
    EXPECT_EQ(len, 0u);
    return;
  }
  TSR_ASSERT_OK(st);
  ASSERT_GT(len, 0u) << "a record has at least its version line";
  std::string record(len, '\0');
  size_t again = 0;
  TSR_ASSERT_OK(tsr_device_compiler_caps(device_, record.data(), record.size(), &again));
  EXPECT_EQ(again, len);
  char head[3] = {0, 0, 0};
  TSR_ASSERT_OK(tsr_device_compiler_caps(device_, head, sizeof head, &again));
  EXPECT_EQ(again, len) << "a short buffer still learns the full length";
  EXPECT_EQ(std::string(head, 3), record.substr(0, 3));
  ASSERT_EQ(record.rfind("version=1\n", 0), 0u) << record;
  std::vector<std::pair<std::string, std::string>> entries;
  std::string err;
  ASSERT_TRUE(parseCapsRecord(record, &entries, &err)) << err;
  for (const auto &[key, value] : entries)
    EXPECT_EQ(key.rfind(std::string(info_.backend) + ".", 0), 0u) << key << "=" << value;
  if (const Target *t = targetForDevice(info_)) {
    TargetOptions opts;
    EXPECT_TRUE(t->deviceOptions(info_, record, &opts, &err)) << err;
  }
}

TSR_CTS_SUITE(CtsCompilerCaps);

} // namespace
} // namespace tessera::cts
