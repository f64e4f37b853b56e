// executable_create on opencl:0 cold (the OpenCL C source compiled by the device's compiler)
// against warm (the device binary from the driver's on-disk cache, docs/backends.md "OpenCL"),
// for a typical kernel as the codegen writes them: median of N runs each, printed as a ratio.
//
// Then the first launch after executable_create (workgroup 128, then 64), with the driver's
// per-size programs (the default: the first launch of a size builds the source for it) and
// without (TESSERA_OPENCL_SIZED_PROGRAMS=0: the generic program), cold and warm as above:
// what a per-size program adds to the latency of a first launch.
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

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Opens opencl:0 (the driver reads TESSERA_OPENCL_SIZED_PROGRAMS there), creates the
// executable of `m` and launches it with workgroup 128 and then 64 (128 rows of 256 each),
// each launch synchronized; adds the three times to `out` (ms). False on any failure.
bool firstLaunches(tsr_registry_t reg, const tsr_gpu_module &m, std::vector<double> out[3]) {
  tsr_device_t dev = nullptr;
  tsr_stream_t stream = nullptr;
  tsr_executable_t exe = nullptr;
  tsr_kernel_t k = nullptr;
  tsr_buffer_t x = nullptr, y = nullptr;
  const int rows = 128, cols = 256;
  bool ok = !tsr_registry_open_device(reg, "opencl:0", &dev) && !tsr_stream_create(dev, &stream) &&
            !tsr_buffer_allocate(dev, 4 * rows * cols, TSR_MEMORY_DEVICE_LOCAL, &x) &&
            !tsr_buffer_allocate(dev, 4 * rows * cols, TSR_MEMORY_DEVICE_LOCAL, &y);
  auto t0 = std::chrono::steady_clock::now();
  ok = ok && !tsr_executable_create(dev, TSR_OPENCL_FORMAT, &m, sizeof m, &exe) &&
       !tsr_executable_kernel(exe, "softmax", &k);
  if (ok)
    out[0].push_back(msSince(t0));
  tsr_arg_t args[] = {tsr_arg_buffer(x, 0), tsr_arg_buffer(y, 0), tsr_arg_i32(cols)};
  for (uint32_t i = 0; ok && i < 2; ++i) {
    uint32_t wg[3] = {i == 0 ? 128u : 64u, 1, 1}, grid[3] = {rows / wg[0], 1, 1};
    t0 = std::chrono::steady_clock::now();
    ok = !tsr_stream_launch(stream, k, grid, wg, args, 3) && !tsr_stream_synchronize(stream);
    if (ok)
      out[1 + i].push_back(msSince(t0));
  }
  if (k)
    tsr_kernel_release(k);
  if (exe)
    tsr_executable_release(exe);
  for (tsr_buffer_t b : {x, y})
    if (b)
      tsr_buffer_release(b);
  if (stream)
    tsr_stream_release(stream);
  if (dev)
    tsr_device_release(dev);
  return ok; // a failed call's status is leaked: the bench reports and exits
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

  // The first launches, per-size programs off and on, cold (fresh cache) and warm.
  for (const char *sized : {"0", "1"}) {
    setenv("TESSERA_OPENCL_SIZED_PROGRAMS", sized, 1);
    std::vector<double> times[2][3]; // [cold, warm][create, launch 128, launch 64]
    for (int r = 0; r < runs; ++r) {
      fs::path dir = base / ("launch-" + std::string(sized) + "-" + std::to_string(r));
      setenv("TESSERA_CACHE_DIR", dir.c_str(), 1);
      for (int pass = 0; pass < 2; ++pass)
        if (!firstLaunches(reg, m, times[pass])) {
          std::printf("first launch (per-size programs %s) failed\n", sized);
          ++failures;
        }
    }
    fs::remove_all(base);
    for (int pass = 0; pass < 2 && !times[pass][2].empty(); ++pass)
      std::printf("opencl:0 per-size programs %s, %s: executable_create %.2f ms, first launch "
                  "of workgroup 128 %.2f ms, then of 64 %.2f ms (medians of %d)\n",
                  sized[0] == '1' ? "on " : "off", pass == 0 ? "cold" : "warm",
                  median(times[pass][0]), median(times[pass][1]), median(times[pass][2]), runs);
  }
  tsr_registry_release(reg);
  return failures ? 1 : 0;
}
