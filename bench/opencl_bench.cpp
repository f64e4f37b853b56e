// OpenCL backend benchmark (issue #16). In one run, on opencl:0 (PoCL here):
//   1. fused elementwise y = gelu(a*x + b) (ir/examples/gelu_affine.tir, compiled by Tessera's
//      OpenCL C codegen) against a hand-written OpenCL C kernel doing the same work
//      (bench/opencl/gelu.cl);
//   2. row softmax (ir/examples/row_softmax.tir) against bench/opencl/softmax.cl.
// Both sides are OpenCL C built by the same device compiler and launched through the same HAL
// driver and kernel ABI (backends/opencl/opencl_abi.h), so the ratios measure the code each
// side wrote. Medians of --reps runs after a warm-up, the two sides alternating run by run
// (a burst of load from other processes meets both); results checked against fp64 first.
// --bounds unchecked|robust|checked compiles Tessera's kernels in that fault mode (default
// robust, as `tessera run`); --cpu-time times the process's CPU time (every thread, PoCL's
// workers included) instead of the wall time, the figure that other processes' load disturbs
// least (with POCL_MAX_PTHREAD_COUNT=1: the single-threaded comparison); --compare-generic
// adds Tessera's softmax built as the generic program (the driver's per-size programs off,
// docs/backends.md "OpenCL") to the same rotation: before / after in one process.
#include "backends/gpu_module.h"
#include "backends/opencl/opencl_abi.h"
#include "bench/bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>

namespace {

using namespace tessera::bench;

// A hand-written OpenCL C kernel loaded through the driver with Tessera's ABI.
tsr_kernel_t loadSource(Device &d, const std::string &source, const char *name,
                        std::vector<tsr_kernel_param_t> params, tsr_executable_t *exe) {
  tsr_gpu_kernel k = {name, params.data(), uint32_t(params.size()), nullptr, 0, 0};
  tsr_gpu_module m = {};
  m.struct_size = sizeof m;
  m.version = TSR_GPU_MODULE_VERSION;
  m.image = source.data();
  m.image_size = source.size();
  m.kernels = &k;
  m.kernel_count = 1;
  check(tsr_executable_create(d.device, TSR_OPENCL_FORMAT, &m, sizeof m, exe), name);
  tsr_kernel_t kernel = nullptr;
  check(tsr_executable_kernel(*exe, name, &kernel), name);
  return kernel;
}

double gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

std::unique_ptr<tessera::Program> compileIn(Device &d, const tessera::ir::Module &m,
                                            tsr_bounds_mode mode) {
  tessera::ProgramOptions opts;
  opts.bounds = mode;
  std::string err;
  auto p = tessera::Program::create(d.device, m, nullptr, opts, &err);
  if (!p)
    die(err);
  return p;
}

double nowMs(bool cpuTime) {
  timespec t{};
  clock_gettime(cpuTime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

struct Times {
  double median, best;
};

/// Median and best ms of `reps` runs of each of `fns`, one warm-up each, then in rotation
/// (fn 0, fn 1, ..., fn 0, ...), so that a burst of load from other processes meets every side.
std::vector<Times> rotating(int reps, bool cpuTime, const std::vector<std::function<void()>> &fns) {
  for (const auto &f : fns)
    f();
  std::vector<std::vector<double>> t(fns.size());
  for (int i = 0; i < reps; ++i)
    for (size_t k = 0; k < fns.size(); ++k) {
      double t0 = nowMs(cpuTime);
      fns[k]();
      t[k].push_back(nowMs(cpuTime) - t0);
    }
  std::vector<Times> out;
  for (auto &v : t)
    out.push_back({median(v), *std::min_element(v.begin(), v.end())});
  return out;
}

/// Whether the opencl backend has a device here; prints why not.
bool haveOpenCL() {
  tsr_registry_t r = nullptr;
  check(tsr_registry_create(&r), "registry");
  tsr_status_t st = tsr_registry_register_builtin_drivers(r);
  uint32_t n = 0;
  tsr_registry_unavailable_count(r, &n);
  bool ok = true;
  for (uint32_t i = 0; i < n; ++i) {
    tsr_unavailable_t u = {};
    tsr_registry_unavailable(r, i, &u);
    if (std::string(u.backend) == "opencl") {
      std::printf("opencl_bench: skipped, no OpenCL device: %s\n", u.reason);
      ok = false;
    }
  }
  tsr_status_free(st);
  tsr_registry_release(r);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 5;
  bool quick = false, cpuTime = false, compareGeneric = false;
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  const char *modeNames[] = {"unchecked", "robust", "checked"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      reps = 2;
    } else if (a == "--cpu-time") {
      cpuTime = true;
    } else if (a == "--compare-generic") {
      compareGeneric = true;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--bounds" && i + 1 < argc) {
      std::string m = argv[++i];
      int k = m == "unchecked" ? 0 : m == "robust" ? 1 : m == "checked" ? 2 : -1;
      if (k < 0) {
        std::fprintf(stderr, "opencl_bench: --bounds takes unchecked, robust or checked\n");
        return 2;
      }
      bounds = tsr_bounds_mode(k);
    } else {
      std::printf("usage: opencl_bench [--reps N] [--quick] [--bounds unchecked|robust|checked]\n"
                  "                    [--cpu-time] [--compare-generic]\n"
                  "Tessera's OpenCL C vs hand-written OpenCL C on opencl:0 (fused gelu, row\n"
                  "softmax). Medians of N runs (default 5), the sides alternating; --cpu-time:\n"
                  "process CPU time instead of wall time; --compare-generic: softmax also\n"
                  "with the driver's per-size programs off, in the same rotation.\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (!haveOpenCL())
    return 0;
  Device d("opencl:0");
  tsr_device_info_t info = {};
  info.struct_size = sizeof info;
  check(tsr_device_info(d.device, &info), "device info");
  std::string sourceDir = TESSERA_SOURCE_DIR;
  std::printf("opencl_bench on opencl:0 (%s), median of %d runs, Tessera kernels %s, %s\n",
              info.architecture, reps, modeNames[bounds],
              cpuTime ? "process CPU time" : "wall time");

  // --- 1. fused elementwise -----------------------------------------------------------------
  const int64_t n = quick ? (1 << 16) : (1 << 22);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n)), b(x.size()), y(x.size()), yh(x.size());
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = nd(rng);
    b[size_t(i)] = nd(rng) * 0.25f;
  }
  tsr_buffer_t bx = d.upload(x), bb = d.upload(b), by = d.upload(y), byh = d.upload(yh);
  auto gm = parseOrDie(readFile(sourceDir + "/ir/examples/gelu_affine.tir"), "gelu_affine.tir");
  auto gp = compileIn(d, *gm, bounds);
  tsr_kernel_t gelu = gp->kernel("gelu_affine")->kernel;
  tsr_executable_t gexe = nullptr;
  tsr_kernel_t hgelu = loadSource(d, readFile(sourceDir + "/bench/opencl/gelu.cl"), "gelu",
                                  {{TSR_TYPE_BUFFER, nullptr},
                                   {TSR_TYPE_BUFFER, nullptr},
                                   {TSR_TYPE_BUFFER, nullptr},
                                   {TSR_TYPE_F32, nullptr},
                                   {TSR_TYPE_I32, nullptr}},
                                  &gexe);
  const float a = 1.5f;
  auto args = [&](tsr_buffer_t out) {
    return std::vector<tsr_arg_t>{tsr_arg_buffer(bx, 0), tsr_arg_buffer(bb, 0),
                                  tsr_arg_buffer(out, 0), tsr_arg_f32(a), tsr_arg_i32(int32_t(n))};
  };
  const uint32_t groups = uint32_t((n + 255) / 256);
  std::vector<Times> gt = rotating(reps, cpuTime,
                                   {[&] {
                                      d.launch(gelu, groups, 256, args(by));
                                      d.sync();
                                    },
                                    [&] {
                                      d.launch(hgelu, groups, 256, args(byh));
                                      d.sync();
                                    }});
  double tT = gt[0].median, tH = gt[1].median;
  d.download(by, y);
  d.download(byh, yh);
  checkGeluAffine(x, b, a, {{"tessera", &y}, {"hand-written", &yh}});
  double bytes = double(n) * 12;
  std::printf("1. y = gelu(a*x + b), %lld f32, workgroup 256\n", (long long)n);
  std::printf("  %-48s %8.2f ms  %7.2f GB/s\n", "Tessera OpenCL C (gelu_affine.tir)", tT,
              gbps(bytes, tT));
  std::printf("  %-48s %8.2f ms  %7.2f GB/s\n", "hand-written OpenCL C (bench/opencl/gelu.cl)", tH,
              gbps(bytes, tH));
  ratioLine("Tessera / hand-written throughput", tH / tT, ">=", 0.9);

  // --- 2. row softmax -----------------------------------------------------------------------
  const int64_t rows = quick ? 64 : 4096, cols = 1000;
  std::vector<float> sx(size_t(rows * cols)), sy(sx.size()), sh(sx.size());
  std::uniform_real_distribution<float> ud(-8.0f, 8.0f);
  for (auto &v : sx)
    v = ud(rng);
  tsr_buffer_t bsx = d.upload(sx), bsy = d.upload(sy), bsh = d.upload(sh);
  auto sm = parseOrDie(readFile(sourceDir + "/ir/examples/row_softmax.tir"), "row_softmax.tir");
  auto sp = compileIn(d, *sm, bounds);
  tsr_kernel_t softmax = sp->kernel("row_softmax")->kernel;
  tsr_executable_t sexe = nullptr;
  tsr_kernel_t hsoftmax = loadSource(
      d, readFile(sourceDir + "/bench/opencl/softmax.cl"), "softmax",
      {{TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_I32, nullptr}}, &sexe);
  std::vector<std::function<void()>> sides = {
      [&] {
        d.launch(softmax, uint32_t(rows), 128,
                 {tsr_arg_buffer(bsx, 0), tsr_arg_buffer(bsy, 0), tsr_arg_i32(int32_t(cols))});
        d.sync();
      },
      [&] {
        d.launch(hsoftmax, uint32_t(rows), 128,
                 {tsr_arg_buffer(bsx, 0), tsr_arg_buffer(bsh, 0), tsr_arg_i32(int32_t(cols))});
        d.sync();
      }};
  // --compare-generic: Tessera's kernel once more on a second opencl:0 opened with the
  // driver's per-size programs off (TESSERA_OPENCL_SIZED_PROGRAMS=0: the generic program, as
  // before them), in the same rotation: before / after in one run.
  std::unique_ptr<Device> g;
  std::unique_ptr<tessera::Program> gsp;
  tsr_buffer_t gx = nullptr, gy = nullptr;
  std::vector<float> gys(sy.size());
  if (compareGeneric) {
    setenv("TESSERA_OPENCL_SIZED_PROGRAMS", "0", 1);
    g = std::make_unique<Device>("opencl:0");
    unsetenv("TESSERA_OPENCL_SIZED_PROGRAMS");
    gsp = compileIn(*g, *sm, bounds);
    gx = g->upload(sx);
    gy = g->upload(gys);
    tsr_kernel_t gk = gsp->kernel("row_softmax")->kernel;
    sides.push_back([&, gk] {
      g->launch(gk, uint32_t(rows), 128,
                {tsr_arg_buffer(gx, 0), tsr_arg_buffer(gy, 0), tsr_arg_i32(int32_t(cols))});
      g->sync();
    });
  }
  std::vector<Times> st = rotating(reps, cpuTime, sides);
  double sT = st[0].median, sH = st[1].median;
  d.download(bsy, sy);
  d.download(bsh, sh);
  if (compareGeneric)
    g->download(gy, gys);
  checkRowSoftmax(sx, rows, cols, {{"tessera", &sy}, {"hand-written", &sh}});
  if (compareGeneric)
    checkRowSoftmax(sx, rows, cols, {{"tessera generic", &gys}});
  std::printf("\n2. row softmax %lld x %lld f32, workgroup 128\n", (long long)rows,
              (long long)cols);
  double sbytes = double(rows * cols) * 8;
  std::printf("  %-48s %8.2f ms  %7.2f GB/s\n", "Tessera OpenCL C (row_softmax.tir)", sT,
              gbps(sbytes, sT));
  std::printf("  %-48s %8.2f ms  %7.2f GB/s\n", "hand-written OpenCL C (bench/opencl/softmax.cl)",
              sH, gbps(sbytes, sH));
  ratioLine("Tessera / hand-written throughput", sH / sT, ">=", 0.9);
  std::printf("  best of %d: Tessera %.2f ms, hand-written %.2f ms (ratio %.3f)\n", reps,
              st[0].best, st[1].best, st[1].best / st[0].best);
  if (compareGeneric)
    std::printf("  Tessera's generic program (per-size programs off): median %.2f ms (ratio "
                "%.3f), best %.2f ms (ratio %.3f)\n",
                st[2].median, sH / st[2].median, st[2].best, st[1].best / st[2].best);

  tsr_executable_release(gexe);
  tsr_executable_release(sexe);
  for (tsr_buffer_t buf : {bx, bb, by, byh, bsx, bsy, bsh})
    tsr_buffer_release(buf);
  for (tsr_buffer_t buf : {gx, gy})
    if (buf)
      tsr_buffer_release(buf);
  gsp.reset(); // before its device
  return 0;
}
