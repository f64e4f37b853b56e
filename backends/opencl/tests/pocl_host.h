// A minimal raw OpenCL host for the tests of the generated code (test only; the real driver
// is backends/opencl/runtime): builds the generated source with the first OpenCL platform
// (PoCL here, through the ICD loader) and launches a kernel per backends/opencl/opencl_abi.h:
// each buffer as base + offset + bytes (the view placed at a non-zero offset inside a larger,
// guarded cl_mem, so offsets are exercised), scalars by value, the zeroed control buffer
// last. Outside codegen/ because it includes the vendor header (scripts/check_layering.py).
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backends/opencl/codegen/tests/oc_test_util.h"
#include "ir/interp/launch.h"

namespace tessera::opencl::testing {

/// What a launch read back: every buffer argument's bytes (the view only) and the control
/// buffer's 16 words.
struct DeviceRun {
  std::vector<std::vector<uint8_t>> buffers;
  uint32_t control[TSR_OPENCL_CONTROL_WORDS] = {};
  bool guardsIntact = true; // the bytes around every view are unchanged
};

class Pocl {
public:
  /// The first OpenCL device of the first platform that has one; empty reason() when found.
  Pocl() {
    cl_uint n = 0;
    if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) {
      reason_ = "no OpenCL platform (is PoCL installed, /etc/OpenCL/vendors/pocl.icd?)";
      return;
    }
    std::vector<cl_platform_id> ps(n);
    clGetPlatformIDs(n, ps.data(), nullptr);
    for (cl_platform_id p : ps)
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device_, nullptr) == CL_SUCCESS)
        break;
    if (!device_) {
      reason_ = "no OpenCL device";
      return;
    }
    cl_int e = 0;
    ctx_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &e);
    queue_ = ctx_ ? clCreateCommandQueue(ctx_, device_, 0, &e) : nullptr;
    if (!queue_)
      reason_ = "clCreateContext / clCreateCommandQueue failed: " + std::to_string(e);
  }
  ~Pocl() {
    if (queue_)
      clReleaseCommandQueue(queue_);
    if (ctx_)
      clReleaseContext(ctx_);
  }
  const std::string &reason() const { return reason_; }

  /// Builds `source` with `options`; null with the build log in `*log`.
  cl_program build(const std::string &source, std::string *log,
                   const std::string &options = TSR_OPENCL_BUILD_OPTIONS) {
    const char *src = source.c_str();
    size_t len = source.size();
    cl_int e = 0;
    cl_program p = clCreateProgramWithSource(ctx_, 1, &src, &len, &e);
    if (!p) {
      *log = "clCreateProgramWithSource: " + std::to_string(e);
      return nullptr;
    }
    e = clBuildProgram(p, 1, &device_, options.c_str(), nullptr, nullptr);
    if (e == CL_SUCCESS)
      return p;
    size_t n = 0;
    clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string text(n, '\0');
    clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, n, text.data(), nullptr);
    *log = "clBuildProgram: " + std::to_string(e) + "\n" + text;
    clReleaseProgram(p);
    return nullptr;
  }

  /// Runs kernel `f` of `prog` over `data` (its inputs); false with `*error`. `cancel` sets
  /// the control buffer's cancel flag before the launch.
  bool run(cl_program prog, const ir::Function &f, const ir::LaunchData &data, DeviceRun *out,
           std::string *error, bool cancel = false) {
    constexpr size_t kGuard = 64; // bytes before and after each view
    cl_int e = 0;
    cl_kernel k = clCreateKernel(prog, symbol(f.name).c_str(), &e);
    if (!k) {
      *error = "clCreateKernel(" + symbol(f.name) + "): " + std::to_string(e);
      return false;
    }
    std::vector<cl_mem> mems;
    std::vector<size_t> sizes;
    cl_uint arg = 0;
    std::vector<ir::Value *> params = f.params();
    for (size_t i = 0; i < params.size(); ++i) {
      const ir::KernelArg &a = data.args[i];
      if (a.buffer) {
        size_t bytes = a.buffer->bytes.size();
        std::vector<uint8_t> host(bytes + 2 * kGuard, 0xA5);
        std::copy(a.buffer->bytes.begin(), a.buffer->bytes.end(), host.begin() + kGuard);
        cl_mem m = clCreateBuffer(ctx_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, host.size(),
                                  host.data(), &e);
        mems.push_back(m);
        sizes.push_back(bytes);
        cl_ulong off = kGuard, nb = bytes;
        clSetKernelArg(k, arg++, sizeof(cl_mem), &m);
        clSetKernelArg(k, arg++, sizeof off, &off);
        clSetKernelArg(k, arg++, sizeof nb, &nb);
        continue;
      }
      ir::HostBuffer one(params[i]->type.elem, 1); // the ABI's scalar bytes = storage bytes
      one.set(0, a.scalar);
      clSetKernelArg(k, arg++, one.bytes.size(), one.bytes.data());
    }
    uint32_t ctl[TSR_OPENCL_CONTROL_WORDS] = {};
    ctl[0] = cancel ? 1 : 0;
    cl_mem control =
        clCreateBuffer(ctx_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof ctl, ctl, &e);
    clSetKernelArg(k, arg++, sizeof(cl_mem), &control);
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      local[d] = data.dims.workgroup[d];
      global[d] = static_cast<size_t>(data.dims.grid[d]) * local[d];
    }
    e = clEnqueueNDRangeKernel(queue_, k, 3, nullptr, global, local, 0, nullptr, nullptr);
    bool ok = e == CL_SUCCESS;
    if (!ok)
      *error = "clEnqueueNDRangeKernel: " + std::to_string(e);
    if (ok && clFinish(queue_) != CL_SUCCESS) {
      ok = false;
      *error = "clFinish failed";
    }
    out->buffers.clear();
    out->guardsIntact = true;
    for (size_t b = 0; ok && b < mems.size(); ++b) {
      std::vector<uint8_t> host(sizes[b] + 2 * kGuard);
      clEnqueueReadBuffer(queue_, mems[b], CL_TRUE, 0, host.size(), host.data(), 0, nullptr,
                          nullptr);
      for (size_t g = 0; g < kGuard; ++g)
        if (host[g] != 0xA5 || host[kGuard + sizes[b] + g] != 0xA5)
          out->guardsIntact = false;
      out->buffers.emplace_back(host.begin() + kGuard, host.begin() + kGuard + sizes[b]);
    }
    if (ok)
      clEnqueueReadBuffer(queue_, control, CL_TRUE, 0, sizeof out->control, out->control, 0,
                          nullptr, nullptr);
    for (cl_mem m : mems)
      clReleaseMemObject(m);
    clReleaseMemObject(control);
    clReleaseKernel(k);
    return ok;
  }

private:
  std::string reason_;
  cl_device_id device_ = nullptr;
  cl_context ctx_ = nullptr;
  cl_command_queue queue_ = nullptr;
};

/// One process-wide PoCL (building a context per test would be slow).
inline Pocl &pocl() {
  static Pocl *p = new Pocl; // never destroyed: the ICD may be torn down first at exit
  return *p;
}

} // namespace tessera::opencl::testing
