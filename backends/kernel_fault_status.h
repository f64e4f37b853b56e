// Turns a kernel fault record (kernel_faults.h) into the HAL status a driver reports: one
// status code per fault kind and one message format, shared by every driver so that the
// same hostile kernel reads the same on cpu:0 and vulkan:0 (docs/ir.md, "Faults").
//
// Header-only C++ (drivers include it; no library to link beyond tessera_hal_status). Must
// never read a record that the kernel may still be writing: call it after the launch ended.
#pragma once

#include "backends/kernel_faults.h"
#include "tessera/hal.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tessera {

/// OUT_OF_RANGE for an out-of-bounds access, INVALID_ARGUMENT for a division or `for`
/// step fault, DEADLINE_EXCEEDED for a cancelled launch, UNIMPLEMENTED for a loop the
/// device cut short (an implementation limit).
inline tsr_status_code_t kernelFaultCode(uint32_t kind) {
  switch (kind) {
  case TSR_FAULT_LOAD_OUT_OF_BOUNDS:
  case TSR_FAULT_STORE_OUT_OF_BOUNDS:
  case TSR_FAULT_ATOMIC_OUT_OF_BOUNDS:
  case TSR_FAULT_SHARED_OUT_OF_BOUNDS:
    return TSR_OUT_OF_RANGE;
  case TSR_FAULT_DEADLINE:
    return TSR_DEADLINE_EXCEEDED;
  case TSR_FAULT_LOOP_LIMIT: // the device cannot run the kernel to its end
    return TSR_UNIMPLEMENTED;
  case TSR_FAULT_OUT_OF_MEMORY:
    return TSR_RESOURCE_EXHAUSTED;
  default:
    return TSR_INVALID_ARGUMENT;
  }
}

/// "kernel @NAME ran past its deadline of N ms and was cancelled".
inline std::string kernelDeadlineMessage(const char *kernel, uint64_t timeoutNs) {
  char ms[48];
  if (timeoutNs % 1000000 == 0)
    std::snprintf(ms, sizeof(ms), "%" PRIu64, timeoutNs / 1000000);
  else
    std::snprintf(ms, sizeof(ms), "%.3f", double(timeoutNs) / 1e6);
  return std::string("kernel @") + kernel + " ran past its deadline of " + ms +
         " ms and was cancelled";
}

/// The message of a fault record, e.g. "kernel @k: out-of-bounds store at 4:3: index
/// -2000000000 outside [0, 4) of parameter 2, work-item local (0, 0, 0) of workgroup
/// (0, 0, 0)". `timeoutNs` is only used for TSR_FAULT_DEADLINE.
inline std::string kernelFaultMessage(const char *kernel, const tsr_kernel_fault &f,
                                      uint64_t timeoutNs) {
  if (f.kind == TSR_FAULT_DEADLINE)
    return kernelDeadlineMessage(kernel, timeoutNs);
  auto i64 = [](uint32_t lo, uint32_t hi) { return int64_t((uint64_t(hi) << 32) | lo); };
  const char *what = "unknown fault";
  switch (f.kind) {
  case TSR_FAULT_LOAD_OUT_OF_BOUNDS:
    what = "out-of-bounds load";
    break;
  case TSR_FAULT_STORE_OUT_OF_BOUNDS:
    what = "out-of-bounds store";
    break;
  case TSR_FAULT_ATOMIC_OUT_OF_BOUNDS:
    what = "out-of-bounds atomic";
    break;
  case TSR_FAULT_SHARED_OUT_OF_BOUNDS:
    what = "out-of-bounds shared-memory access";
    break;
  case TSR_FAULT_DIVISION_BY_ZERO:
    what = "integer division by zero";
    break;
  case TSR_FAULT_DIVISION_OVERFLOW:
    what = "integer division overflow (MIN / -1)";
    break;
  case TSR_FAULT_LOOP_STEP:
    what = "`for` step that is not positive";
    break;
  case TSR_FAULT_LOOP_LIMIT:
    what = "loop ended early by the device (an implementation limit on loop iterations; "
           "llvmpipe allows 65535 per work-item)";
    break;
  case TSR_FAULT_OUT_OF_MEMORY:
    what = "out of host memory for the workgroup's matrix tiles";
    break;
  case TSR_FAULT_DIVERGENT_BARRIER:
    what = "divergent control flow around a barrier";
    break;
  default:
    break;
  }
  char buf[320];
  std::string out = std::string("kernel @") + kernel + ": " + what;
  if (f.line) {
    std::snprintf(buf, sizeof(buf), " at %u:%u", f.line, f.column);
    out += buf;
  }
  int64_t index = i64(f.index_lo, f.index_hi);
  switch (f.kind) {
  case TSR_FAULT_LOAD_OUT_OF_BOUNDS:
  case TSR_FAULT_STORE_OUT_OF_BOUNDS:
  case TSR_FAULT_ATOMIC_OUT_OF_BOUNDS:
    std::snprintf(buf, sizeof(buf), ": index %" PRId64 " outside [0, %" PRId64 ") of parameter %u",
                  index, i64(f.count_lo, f.count_hi), f.param);
    out += buf;
    break;
  case TSR_FAULT_SHARED_OUT_OF_BOUNDS:
    std::snprintf(buf, sizeof(buf),
                  ": index %" PRId64 " outside [0, %" PRId64 ") of a shared array", index,
                  i64(f.count_lo, f.count_hi));
    out += buf;
    break;
  case TSR_FAULT_LOOP_STEP:
    std::snprintf(buf, sizeof(buf), ": step %" PRId64, index);
    out += buf;
    break;
  case TSR_FAULT_OUT_OF_MEMORY:
    std::snprintf(buf, sizeof(buf), " (%" PRId64 " bytes)", i64(f.count_lo, f.count_hi));
    out += buf;
    break;
  case TSR_FAULT_DIVERGENT_BARRIER:
    std::snprintf(buf, sizeof(buf),
                  " (%" PRId64 " of the %" PRId64 " work-items of the workgroup on one side)",
                  index, i64(f.count_lo, f.count_hi));
    out += buf;
    break;
  default:
    break;
  }
  std::snprintf(buf, sizeof(buf), ", work-item local (%u, %u, %u) of workgroup (%u, %u, %u)",
                f.local_id[0], f.local_id[1], f.local_id[2], f.group_id[0], f.group_id[1],
                f.group_id[2]);
  return out + buf;
}

/// The status of a finished launch: null when the record holds no fault.
inline tsr_status_t kernelFaultStatus(const char *kernel, const tsr_kernel_fault &f,
                                      uint64_t timeoutNs) {
  if (f.kind == TSR_FAULT_NONE)
    return nullptr;
  return tsr_status_make(kernelFaultCode(f.kind), "%s",
                         kernelFaultMessage(kernel, f, timeoutNs).c_str());
}

} // namespace tessera
