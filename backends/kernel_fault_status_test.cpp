// The one message format and status code of each kernel fault kind (kernel_fault_status.h):
// the texts drivers report for hostile kernels, written out in full here.
#include "backends/kernel_fault_status.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

tsr_kernel_fault record(uint32_t kind, int64_t index, int64_t count) {
  tsr_kernel_fault f = {};
  f.kind = kind;
  f.line = 4;
  f.column = 3;
  f.param = 2;
  f.index_lo = uint32_t(uint64_t(index));
  f.index_hi = uint32_t(uint64_t(index) >> 32);
  f.count_lo = uint32_t(uint64_t(count));
  f.count_hi = uint32_t(uint64_t(count) >> 32);
  f.local_id[0] = 5;
  f.group_id[2] = 7;
  return f;
}

TEST(KernelFaultStatus, MessagesAndCodes) {
  struct Case {
    uint32_t kind;
    tsr_status_code_t code;
    const char *message;
  } cases[] = {
      {TSR_FAULT_STORE_OUT_OF_BOUNDS, TSR_OUT_OF_RANGE,
       "kernel @k: out-of-bounds store at 4:3: index -2000000000 outside [0, 4) of parameter 2, "
       "work-item local (5, 0, 0) of workgroup (0, 0, 7)"},
      {TSR_FAULT_LOAD_OUT_OF_BOUNDS, TSR_OUT_OF_RANGE,
       "kernel @k: out-of-bounds load at 4:3: index -2000000000 outside [0, 4) of parameter 2, "
       "work-item local (5, 0, 0) of workgroup (0, 0, 7)"},
      {TSR_FAULT_SHARED_OUT_OF_BOUNDS, TSR_OUT_OF_RANGE,
       "kernel @k: out-of-bounds shared-memory access at 4:3: index -2000000000 outside [0, 4) "
       "of a shared array, work-item local (5, 0, 0) of workgroup (0, 0, 7)"},
      {TSR_FAULT_DIVISION_BY_ZERO, TSR_INVALID_ARGUMENT,
       "kernel @k: integer division by zero at 4:3, work-item local (5, 0, 0) of workgroup "
       "(0, 0, 7)"},
      {TSR_FAULT_DIVISION_OVERFLOW, TSR_INVALID_ARGUMENT,
       "kernel @k: integer division overflow (MIN / -1) at 4:3, work-item local (5, 0, 0) of "
       "workgroup (0, 0, 7)"},
      {TSR_FAULT_LOOP_STEP, TSR_INVALID_ARGUMENT,
       "kernel @k: `for` step that is not positive at 4:3: step -2000000000, work-item local "
       "(5, 0, 0) of workgroup (0, 0, 7)"},
      {TSR_FAULT_DEADLINE, TSR_DEADLINE_EXCEEDED,
       "kernel @k ran past its deadline of 250 ms and was cancelled"},
      {TSR_FAULT_LOOP_LIMIT, TSR_UNIMPLEMENTED,
       "kernel @k: loop ended early by the device (an implementation limit on loop iterations; "
       "llvmpipe allows 65535 per work-item) at 4:3, work-item local (5, 0, 0) of workgroup "
       "(0, 0, 7)"},
      {TSR_FAULT_DIVERGENT_BARRIER, TSR_INVALID_ARGUMENT,
       "kernel @k: divergent control flow around a barrier at 4:3 (-2000000000 of the 4 "
       "work-items of the workgroup on one side), work-item local (5, 0, 0) of workgroup "
       "(0, 0, 7)"},
      {TSR_FAULT_OUT_OF_MEMORY, TSR_RESOURCE_EXHAUSTED,
       "kernel @k: out of host memory for the workgroup's matrix tiles at 4:3 (4 bytes), "
       "work-item local (5, 0, 0) of workgroup (0, 0, 7)"},
  };
  for (const Case &c : cases) {
    tsr_kernel_fault f = record(c.kind, -2000000000, 4);
    tsr_status_t s = kernelFaultStatus("k", f, 250000000);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(tsr_status_code(s), c.code) << c.message;
    EXPECT_STREQ(tsr_status_message(s), c.message);
    tsr_status_free(s);
  }
  EXPECT_EQ(kernelFaultStatus("k", record(TSR_FAULT_NONE, 0, 0), 0), nullptr);
  EXPECT_EQ(kernelDeadlineMessage("k", 1500000),
            "kernel @k ran past its deadline of 1.500 ms and was cancelled");
}

} // namespace
} // namespace tessera
