// executable_create on opencl:0 cold (the OpenCL C source compiled by the device's compiler)
// against warm (the device binary from the driver's on-disk cache, docs/backends.md "OpenCL"),
// for a typical kernel as the codegen writes them: median of N runs each, printed as a ratio.
//
// Usage: opencl_build_bench [--runs N] [--quick]. Every cold run uses a fresh, empty
// $TESSERA_CACHE_DIR; the warm run after it reads the entry the cold run stored.
#include "backends/gpu_module.h"
#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/opencl_driver.h"
#include "tessera/hal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// A row softmax in the codegen's style: a bounded view per buffer, a loop with a deadline
// poll, f32 math through OpenCL builtins.
const char kSource[] = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void tsr_softmax(__global uchar *b0, ulong o0, ulong n0, __global uchar *b1, ulong o1,
                          ulong n1, int cols, __global uint *control) {
  long row = (long)get_global_id(0);
  ulong c0 = n0 / 4, c1 = n1 / 4;
  __global const float *x = (__global const float *)(b0 + o0);
  __global float *y = (__global float *)(b1 + o1);
  float m = -INFINITY;
  for (int j = 0; j < cols; ++j) {
    ulong k = (ulong)(row * cols + j);
    float v = k < c0 ? x[k] : 0.0f;
    m = fmax(m, v);
    if ((j & 1023) == 1023 && *(volatile __global uint *)control != 0u) {
      if (atomic_cmpxchg(&control[1], 0u, 8u) == 0u) { control[9] = get_local_id(0); }
      return;
    }
  }
  float s = 0.0f;
  for (int j = 0; j < cols; ++j) {
    ulong k = (ulong)(row * cols + j);
    float v = k < c0 ? x[k] : 0.0f;
    s = s + exp(v - m);
  }
  for (int j = 0; j < cols; ++j) {
    ulong k = (ulong)(row * cols + j);
    float v = k < c0 ? x[k] : 0.0f;
    if (k < c1) y[k] = exp(v - m) / s;
  }
}
)CL";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      runs = 1;
    else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
  }
  tsr_registry_t reg = nullptr;
  tsr_registry_create(&reg);
  tsr_status_t st = tsr_registry_register_driver(reg, tsr_opencl_driver());
  if (st) {
    std::printf("opencl:0 unavailable: %s (skipped)\n", tsr_status_message(st));
    tsr_status_free(st);
    tsr_registry_release(reg);
    return 0;
  }
  tsr_device_t dev = nullptr;
  if ((st = tsr_registry_open_device(reg, "opencl:0", &dev))) {
    std::printf("opencl:0: %s (skipped)\n", tsr_status_message(st));
    tsr_status_free(st);
    tsr_registry_release(reg);
    return 0;
  }
  const tsr_kernel_param_t params[] = {
      {TSR_TYPE_BUFFER, "x"}, {TSR_TYPE_BUFFER, "y"}, {TSR_TYPE_I32, "cols"}};
  tsr_gpu_kernel k = {"softmax", params, 3, nullptr, 0, 0};
  tsr_gpu_module m = {};
  m.struct_size = sizeof m;
  m.version = TSR_GPU_MODULE_VERSION;
  m.image = kSource;
  m.image_size = sizeof kSource - 1;
  m.kernels = &k;
  m.kernel_count = 1;
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("tessera-ocl-bench-" + std::to_string(getpid()));
  std::vector<double> cold, warm;
  int failures = 0;
  for (int r = 0; r < runs; ++r) {
    fs::path dir = base / std::to_string(r);
    setenv("TESSERA_CACHE_DIR", dir.c_str(), 1);
    for (int pass = 0; pass < 2; ++pass) {
      tsr_executable_t exe = nullptr;
      auto t0 = std::chrono::steady_clock::now();
      st = tsr_executable_create(dev, TSR_OPENCL_FORMAT, &m, sizeof m, &exe);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (st) {
        std::printf("executable_create failed: %s\n", tsr_status_message(st));
        tsr_status_free(st);
        ++failures;
        continue;
      }
      (pass == 0 ? cold : warm).push_back(ms);
      tsr_executable_release(exe);
    }
  }
  fs::remove_all(base);
  if (!cold.empty() && !warm.empty())
    std::printf("opencl:0 executable_create (softmax kernel, median of %d): cold %.2f ms "
                "(build from source), warm %.2f ms (binary cache): %.1fx\n",
                runs, median(cold), median(warm), median(cold) / median(warm));
  tsr_device_release(dev);
  tsr_registry_release(reg);
  return failures ? 1 : 0;
}
