// Launches (hal_driver.h stream_launch) per the kernel ABI of backends/opencl/opencl_abi.h:
// buffer views as (base cl_mem, offset, bytes), scalars by value, then a zeroed control
// buffer; global size = grid * workgroup, local size = workgroup; the kernel of the program
// built for that workgroup size (executable.cpp). The stream's worker
// (stream.cpp) then watches the launch.
//
// Must never leave a kernel's arguments half set for another thread's launch: setting them
// and enqueueing is one step under the kernel's lock (clSetKernelArg is not thread-safe on
// one cl_kernel).
#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/internal.h"

namespace tessera::opencl {
namespace {

tsr_status_t setArgs(const ClApi &api, ClKernel &k, cl_kernel ck, const tsr_drv_arg_t *args,
                     uint32_t count, cl_mem control) {
  cl_uint at = 0;
  auto set = [&](size_t size, const void *value) {
    cl_int r = api.clSetKernelArg(ck, at, size, value);
    if (r != CL_SUCCESS)
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "opencl: kernel @%s: clSetKernelArg(%u) of %zu bytes failed: %s",
                             k.name.c_str(), at, size, clErrorName(r).c_str());
    ++at;
    return tsr_status_t(nullptr);
  };
  for (uint32_t i = 0; i < count; ++i) {
    const tsr_drv_arg_t &a = args[i];
    tsr_status_t st = nullptr;
    switch (a.kind) {
    case TSR_TYPE_BUFFER: {
      cl_mem mem = as<ClBuffer>(a.value.buffer.buf)->mem;
      cl_ulong offset = a.value.buffer.offset, bytes = a.value.buffer.length;
      if (!(st = set(sizeof mem, &mem)) && !(st = set(sizeof offset, &offset)))
        st = set(sizeof bytes, &bytes);
      break;
    }
    case TSR_TYPE_I8:
      st = set(1, &a.value.i8);
      break;
    case TSR_TYPE_I16:
    case TSR_TYPE_F16:
    case TSR_TYPE_BF16:
      st = set(2, &a.value.i16); // the 16 bits as a ushort / short
      break;
    case TSR_TYPE_I32:
    case TSR_TYPE_F32:
      st = set(4, &a.value.i32);
      break;
    default: // i64, f64
      st = set(8, &a.value.i64);
      break;
    }
    if (st)
      return st;
  }
  return set(sizeof control, &control);
}

} // namespace

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t argCount) {
  auto *dev = as<ClDevice>(device);
  auto *s = as<ClStream>(stream);
  auto *k = as<ClKernel>(kernel);
  const ClApi &api = dev->api();
  // PoCL's pthread scheduler counts a launch's workgroups in 32 bits: a grid of 65535^3
  // aborted the process (assertion `max_wgs > 0`). No launch this large can finish anyway.
  if (uint64_t groups = uint64_t(grid[0]) * grid[1] * grid[2]; groups > UINT32_MAX)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "opencl: kernel @%s: a grid of %u x %u x %u is %llu workgroups; a "
                           "launch may have at most 4294967295 (PoCL counts them in 32 bits): "
                           "split it into several launches",
                           k->name.c_str(), grid[0], grid[1], grid[2], (unsigned long long)groups);
  uint64_t items = uint64_t(workgroup[0]) * workgroup[1] * workgroup[2];
  if (k->privateBytes && items * k->privateBytes > TSR_OPENCL_PRIVATE_BUDGET)
    return tsr_status_make(
        TSR_RESOURCE_EXHAUSTED,
        "opencl: kernel @%s holds %llu bytes of matrix tiles per work-item; a workgroup of "
        "%llu work-items needs %llu bytes of them, past the %u the device's stack takes "
        "(PoCL keeps a workgroup's private arrays on one thread's stack): use a smaller "
        "workgroup or smaller tiles",
        k->name.c_str(), (unsigned long long)k->privateBytes, (unsigned long long)items,
        (unsigned long long)(items * k->privateBytes), unsigned(TSR_OPENCL_PRIVATE_BUDGET));
  // Before a control slot is taken: the first launch of a size builds its program.
  cl_kernel ck = kernelForWorkgroup(*dev, *k, workgroup);
  auto launch = std::make_shared<Launch>();
  if (tsr_status_t st = dev->controls.acquire(*dev, &launch->slot))
    return st;
  launch->kernel = k->name;
  launch->timeoutNs = s->timeoutNs.load(std::memory_order_relaxed);
  bool copied = !dev->desc->hostUnified; // the record travels by copies around the kernel
  size_t global[3], local[3];
  for (int i = 0; i < 3; ++i) {
    global[i] = size_t(grid[i]) * workgroup[i];
    local[i] = workgroup[i];
  }
  cl_int r = CL_SUCCESS;
  const char *call = "clEnqueueNDRangeKernel";
  {
    std::lock_guard<std::mutex> lock(k->mutex);
    if (tsr_status_t st = setArgs(api, *k, ck, args, argCount, launch->slot.mem)) {
      dev->controls.release(launch->slot);
      return st;
    }
    if (copied) {
      call = "clEnqueueWriteBuffer (control buffer)";
      r = api.clEnqueueWriteBuffer(s->queue, launch->slot.mem, CL_FALSE, 0, kControlBytes,
                                   launch->slot.words, 0, nullptr, nullptr);
    }
    if (r == CL_SUCCESS) {
      call = "clEnqueueNDRangeKernel";
      r = api.clEnqueueNDRangeKernel(s->queue, ck, 3, nullptr, global, local, 0, nullptr,
                                     copied ? nullptr : &launch->event);
    }
  }
  if (r == CL_SUCCESS && copied) {
    call = "clEnqueueReadBuffer (control buffer)";
    r = api.clEnqueueReadBuffer(s->queue, launch->slot.mem, CL_FALSE, 0, kControlBytes,
                                launch->slot.words, 0, nullptr, &launch->event);
  }
  if (r != CL_SUCCESS) {
    // A command enqueued before the failing one may still use the slot: drain the queue
    // before the slot can be reused.
    api.clFinish(s->queue);
    if (launch->event)
      api.clReleaseEvent(launch->event);
    dev->controls.release(launch->slot);
    return clStatus(call, r);
  }
  api.clRetainEvent(launch->event);
  s->setLast(launch->event);
  api.clFlush(s->queue); // the deadline clock starts when the worker sees it: let it run
  {
    std::lock_guard<std::mutex> lock(s->state->mutex);
    launch->seq = ++s->state->enqueued;
  }
  return s->track(std::move(launch));
}

} // namespace tessera::opencl
