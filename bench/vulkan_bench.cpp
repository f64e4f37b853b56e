// Vulkan backend benchmark (issue: Vulkan backend). In one run, on vulkan:0 (lavapipe here):
//   1. fused elementwise y = gelu(a*x + b) (ir/examples/gelu_affine.tir, compiled by Tessera's
//      SPIR-V emitter) against a hand-written GLSL compute shader doing the same work
//      (bench/vulkan/gelu.comp, compiled by glslangValidator at build time);
//   2. row softmax (ir/examples/row_softmax.tir) against bench/vulkan/softmax.comp;
//   3. dispatch overhead: asynchronous launches of an empty kernel, and launch + synchronize;
//      asynchronous launches of a kernel whose loop runs no iteration (it has a control buffer);
//   4. f32 GEMM written with matrix ops (bench/vulkan_gemm.cpp, matrixGemmKernel) against the
//      hand-written GLSL tiled GEMM (bench/vulkan/gemm.comp), 512^3 and 1024^3.
// Both sides run through the same HAL driver and kernel ABI, so the ratios measure the code
// each compiler produced. Medians of --reps runs after a warm-up; results checked first.
// --bounds unchecked|robust|checked compiles Tessera's kernels in that fault mode (default
// robust, as `tessera run`): the cost of bounds checks and fault records (docs/performance.md).
#include "backends/gpu_module.h"
#include "bench/bench_util.h"
#include "bench/vulkan_gemm.h"
#include "gelu.spv.h"
#include "softmax.spv.h"

#include <cmath>
#include <cstring>
#include <random>

namespace {

using namespace tessera::bench;

// A GLSL kernel loaded through the driver with the same ABI as Tessera's kernels.
tsr_kernel_t loadGlsl(Device &d, const uint32_t *words, size_t bytes, const char *name,
                      std::vector<tsr_kernel_param_t> params, std::vector<uint32_t> offsets,
                      uint32_t pushBytes, tsr_executable_t *exe) {
  tsr_gpu_kernel k = {name, params.data(), uint32_t(params.size()), offsets.data(), pushBytes, 0};
  tsr_gpu_module m = {};
  m.struct_size = sizeof m;
  m.version = TSR_GPU_MODULE_VERSION;
  m.image = words;
  m.image_size = bytes;
  m.kernels = &k;
  m.kernel_count = 1;
  check(tsr_executable_create(d.device, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, exe), name);
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

} // namespace

int main(int argc, char **argv) {
  int reps = 5;
  bool quick = false;
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  int tm = 32, tn = 128, tk = 8, subgroups = 2; // the matrix GEMM's tile, tuned for lavapipe
  const char *modeNames[] = {"unchecked", "robust", "checked"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      reps = 2;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--bounds" && i + 1 < argc) {
      std::string m = argv[++i];
      int k = m == "unchecked" ? 0 : m == "robust" ? 1 : m == "checked" ? 2 : -1;
      if (k < 0) {
        std::fprintf(stderr, "vulkan_bench: --bounds takes unchecked, robust or checked\n");
        return 2;
      }
      bounds = tsr_bounds_mode(k);
    } else if (a == "--gemm-tile" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%dx%dx%d", &tm, &tn, &tk) != 3) {
        std::fprintf(stderr, "vulkan_bench: --gemm-tile takes MxNxK (e.g. 32x128x8)\n");
        return 2;
      }
    } else if (a == "--gemm-subgroups" && i + 1 < argc) {
      subgroups = std::max(1, std::atoi(argv[++i]));
    } else {
      std::printf("usage: vulkan_bench [--reps N] [--quick] [--bounds unchecked|robust|checked]\n"
                  "                    [--gemm-tile MxNxK] [--gemm-subgroups S]\n"
                  "Tessera's SPIR-V vs hand-written GLSL on vulkan:0 (fused gelu, row softmax,\n"
                  "f32 GEMM with matrix ops: each subgroup one MxN tile, K-deep steps, S\n"
                  "subgroups per workgroup; default 32x128x8, 2), and dispatch overhead.\n"
                  "Medians of N runs (default 5).\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  {
    tsr_registry_t r = nullptr;
    check(tsr_registry_create(&r), "registry");
    tsr_status_t st = tsr_registry_register_builtin_drivers(r);
    uint32_t n = 0;
    tsr_registry_unavailable_count(r, &n);
    for (uint32_t i = 0; i < n; ++i) {
      tsr_unavailable_t u = {};
      tsr_registry_unavailable(r, i, &u);
      if (std::string(u.backend) == "vulkan") {
        std::printf("vulkan_bench: skipped, no Vulkan device: %s\n", u.reason);
        tsr_status_free(st);
        tsr_registry_release(r);
        return 0;
      }
    }
    tsr_status_free(st);
    tsr_registry_release(r);
  }
  Device d("vulkan:0");
  tsr_device_info_t info = {};
  info.struct_size = sizeof info;
  check(tsr_device_info(d.device, &info), "device info");
  std::string sourceDir = TESSERA_SOURCE_DIR;
  std::printf("vulkan_bench on vulkan:0 (%s), median of %d runs, Tessera kernels %s\n",
              info.architecture, reps, modeNames[bounds]);

  // --- 1. fused elementwise -----------------------------------------------------------------
  const int64_t n = quick ? (1 << 16) : (1 << 22);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n)), b(x.size()), y(x.size()), yg(x.size());
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = nd(rng);
    b[size_t(i)] = nd(rng) * 0.25f;
  }
  tsr_buffer_t bx = d.upload(x), bb = d.upload(b), by = d.upload(y), byg = d.upload(yg);
  auto gm = parseOrDie(readFile(sourceDir + "/ir/examples/gelu_affine.tir"), "gelu_affine.tir");
  auto gp = compileIn(d, *gm, bounds);
  tsr_kernel_t gelu = gp->kernel("gelu_affine")->kernel;
  tsr_executable_t gexe = nullptr;
  tsr_kernel_t ggelu = loadGlsl(d, kGeluSpirv, sizeof kGeluSpirv, "gelu",
                                {{TSR_TYPE_BUFFER, nullptr},
                                 {TSR_TYPE_BUFFER, nullptr},
                                 {TSR_TYPE_BUFFER, nullptr},
                                 {TSR_TYPE_F32, nullptr},
                                 {TSR_TYPE_I32, nullptr}},
                                {0, 0, 0, 0, 4}, 8, &gexe);
  const float a = 1.5f;
  auto args = [&](tsr_buffer_t out) {
    return std::vector<tsr_arg_t>{tsr_arg_buffer(bx, 0), tsr_arg_buffer(bb, 0),
                                  tsr_arg_buffer(out, 0), tsr_arg_f32(a), tsr_arg_i32(int32_t(n))};
  };
  const uint32_t groups = uint32_t((n + 255) / 256);
  double tT = timeMs(reps, [&] {
    d.launch(gelu, groups, 256, args(by));
    d.sync();
  });
  double tG = timeMs(reps, [&] {
    d.launch(ggelu, groups, 256, args(byg));
    d.sync();
  });
  d.download(by, y);
  d.download(byg, yg);
  checkGeluAffine(x, b, a, {{"tessera", &y}, {"glsl", &yg}});
  double bytes = double(n) * 12;
  std::printf("1. y = gelu(a*x + b), %lld f32, workgroup 256\n", (long long)n);
  std::printf("  %-44s %8.2f ms  %7.2f GB/s\n", "Tessera SPIR-V (gelu_affine.tir)", tT,
              gbps(bytes, tT));
  std::printf("  %-44s %8.2f ms  %7.2f GB/s\n", "hand-written GLSL (bench/vulkan/gelu.comp)", tG,
              gbps(bytes, tG));
  ratioLine("Tessera / GLSL throughput", tG / tT, ">=", 0.9);

  // --- 2. row softmax -----------------------------------------------------------------------
  const int64_t rows = quick ? 64 : 2048, cols = 1000;
  std::vector<float> sx(size_t(rows * cols)), sy(sx.size()), sg(sx.size());
  std::uniform_real_distribution<float> ud(-8.0f, 8.0f);
  for (auto &v : sx)
    v = ud(rng);
  tsr_buffer_t bsx = d.upload(sx), bsy = d.upload(sy), bsg = d.upload(sg);
  auto sm = parseOrDie(readFile(sourceDir + "/ir/examples/row_softmax.tir"), "row_softmax.tir");
  auto sp = compileIn(d, *sm, bounds);
  tsr_kernel_t softmax = sp->kernel("row_softmax")->kernel;
  tsr_executable_t sexe = nullptr;
  tsr_kernel_t gsoftmax =
      loadGlsl(d, kSoftmaxSpirv, sizeof kSoftmaxSpirv, "softmax",
               {{TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_I32, nullptr}},
               {0, 0, 0}, 4, &sexe);
  double sT = timeMs(reps, [&] {
    d.launch(softmax, uint32_t(rows), 128,
             {tsr_arg_buffer(bsx, 0), tsr_arg_buffer(bsy, 0), tsr_arg_i32(int32_t(cols))});
    d.sync();
  });
  double sG = timeMs(reps, [&] {
    d.launch(gsoftmax, uint32_t(rows), 128,
             {tsr_arg_buffer(bsx, 0), tsr_arg_buffer(bsg, 0), tsr_arg_i32(int32_t(cols))});
    d.sync();
  });
  d.download(bsy, sy);
  d.download(bsg, sg);
  checkRowSoftmax(sx, rows, cols, {{"tessera", &sy}, {"glsl", &sg}});
  std::printf("\n2. row softmax %lld x %lld f32, workgroup 128\n", (long long)rows,
              (long long)cols);
  double sbytes = double(rows * cols) * 8;
  std::printf("  %-44s %8.2f ms  %7.2f GB/s\n", "Tessera SPIR-V (row_softmax.tir)", sT,
              gbps(sbytes, sT));
  std::printf("  %-44s %8.2f ms  %7.2f GB/s\n", "hand-written GLSL (bench/vulkan/softmax.comp)", sG,
              gbps(sbytes, sG));
  ratioLine("Tessera / GLSL throughput", sG / sT, ">=", 0.9);

  // --- 3. dispatch overhead -----------------------------------------------------------------
  auto em = parseOrDie("kernel @empty() {\n}\n", "empty.tir");
  auto ep = compileIn(d, *em, bounds);
  tsr_kernel_t empty = ep->kernel("empty")->kernel;
  const int launches = quick ? 100 : 2000;
  double tAsync = timeMs(reps, [&] {
    for (int i = 0; i < launches; ++i)
      d.launch(empty, 1, 1, {});
    d.sync();
  });
  double tSync = timeMs(reps, [&] {
    for (int i = 0; i < launches / 10; ++i) {
      d.launch(empty, 1, 1, {});
      d.sync();
    }
  });
  // A kernel with a loop has a control buffer (cancel flag, fault record): its launches also
  // take a control slot, zeroed, and the worker reads its record at completion.
  auto lm = parseOrDie(R"(kernel @loop(%n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %r = while iter(%x = %z) {
    %c = cmp.slt %x, %n : i32
    condition %c
  } do {
    %y = add %x, %one : i32
    yield %y
  }
}
)",
                       "loop.tir");
  auto lp = compileIn(d, *lm, bounds);
  tsr_kernel_t loop = lp->kernel("loop")->kernel;
  double tControl = timeMs(reps, [&] {
    for (int i = 0; i < launches; ++i)
      d.launch(loop, 1, 1, {tsr_arg_i32(0)});
    d.sync();
  });
  std::printf("\n3. dispatch overhead (empty kernel, 1 work-item)\n");
  std::printf("  %-44s %8.2f us\n", "per launch, asynchronous (batched)", tAsync * 1e3 / launches);
  std::printf("  %-44s %8.2f us\n", "per launch + synchronize", tSync * 1e3 / (launches / 10));
  std::printf("  %-44s %8.2f us\n", "per launch, async, kernel with a control buffer",
              tControl * 1e3 / launches);

  // --- 4. GEMM ------------------------------------------------------------------------------
  std::printf("\n4. f32 GEMM C = A B, matrix ops (tile %dx%dx%d, %d subgroups per workgroup) vs "
              "GLSL (128x128 blocks, 8x8 per invocation)\n",
              tm, tn, tk, subgroups);
  tessera::ProgramOptions gopts;
  gopts.bounds = bounds;
  for (int size : quick ? std::vector<int>{100} : std::vector<int>{512, 1024}) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> ga(size_t(size) * size), gb(ga.size());
    for (auto *v : {&ga, &gb})
      for (float &e : *v)
        e = u(rng);
    double gT = tesseraGemmGflops(d, ga, gb, size, size, size, reps, tm, tn, tk, subgroups, gopts);
    double gG = glslGemmGflops(d, ga, gb, size, size, size, reps);
    std::printf("  %d^3\n", size);
    std::printf("  %-44s %8.2f GFLOP/s\n", "Tessera SPIR-V (matrix ops, gemm_mx)", gT);
    std::printf("  %-44s %8.2f GFLOP/s\n", "hand-written GLSL (bench/vulkan/gemm.comp)", gG);
    ratioLine("Tessera / GLSL throughput", gT / gG, ">=", 0.9);
  }

  tsr_kernel_release(ggelu);
  tsr_executable_release(gexe);
  tsr_kernel_release(gsoftmax);
  tsr_executable_release(sexe);
  for (tsr_buffer_t buf : {bx, bb, by, byg, bsx, bsy, bsg})
    tsr_buffer_release(buf);
  return 0;
}
