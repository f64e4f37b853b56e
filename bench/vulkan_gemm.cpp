// The GLSL GEMM peer (bench/vulkan_gemm.h): loading bench/vulkan/gemm.comp's SPIR-V through
// the Vulkan driver, launching it, and checking a GEMM result against a long double reference.
#include "bench/vulkan_gemm.h"

#include "backends/gpu_module.h"
#include "gemm.spv.h"

#include <cmath>
#include <random>

namespace tessera::bench {

namespace {

// Must match the block of bench/vulkan/gemm.comp (WG * TM, WG * TN) and its workgroup.
constexpr int kBlockM = 128, kBlockN = 128, kThreads = 256;

} // namespace

GlslGemm::GlslGemm(tsr_device_t device) {
  tsr_kernel_param_t params[] = {{TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_BUFFER, nullptr},
                                 {TSR_TYPE_BUFFER, nullptr}, {TSR_TYPE_I32, nullptr},
                                 {TSR_TYPE_I32, nullptr},    {TSR_TYPE_I32, nullptr}};
  uint32_t offsets[] = {0, 0, 0, 0, 4, 8};
  tsr_gpu_kernel k = {"gemm", params, 6, offsets, 12, 0};
  tsr_gpu_module m = {};
  m.struct_size = sizeof m;
  m.version = TSR_GPU_MODULE_VERSION;
  m.image = kGemmSpirv;
  m.image_size = sizeof kGemmSpirv;
  m.kernels = &k;
  m.kernel_count = 1;
  check(tsr_executable_create(device, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe_), "gemm.comp");
  check(tsr_executable_kernel(exe_, "gemm", &kernel_), "gemm.comp kernel");
}

GlslGemm::~GlslGemm() {
  tsr_kernel_release(kernel_);
  tsr_executable_release(exe_);
}

void GlslGemm::launch(tsr_stream_t stream, tsr_buffer_t a, tsr_buffer_t b, tsr_buffer_t c, int M,
                      int N, int K) {
  uint32_t grid[3] = {uint32_t((N + kBlockN - 1) / kBlockN), uint32_t((M + kBlockM - 1) / kBlockM),
                      1};
  uint32_t wg[3] = {kThreads, 1, 1};
  tsr_arg_t args[] = {tsr_arg_buffer(a, 0), tsr_arg_buffer(b, 0), tsr_arg_buffer(c, 0),
                      tsr_arg_i32(M),       tsr_arg_i32(N),       tsr_arg_i32(K)};
  check(tsr_stream_launch(stream, kernel_, grid, wg, args, 6), "launch gemm.comp");
}

bool checkGemm(const std::vector<float> &a, const std::vector<float> &b,
               const std::vector<float> &c, int M, int N, int K, int samples, std::string *why) {
  std::mt19937 rng(11);
  int64_t total = int64_t(M) * N;
  bool all = samples >= total;
  int64_t count = all ? total : samples;
  for (int64_t s = 0; s < count; ++s) {
    int64_t e = all ? s : int64_t(rng() % uint64_t(total));
    int64_t i = e / N, j = e % N;
    long double ref = 0, mag = 0;
    for (int64_t k = 0; k < K; ++k) {
      long double p = (long double)a[size_t(i * K + k)] * b[size_t(k * N + j)];
      ref += p;
      mag += std::fabs(p);
    }
    double tol = (K + 1) * std::ldexp(double(mag), -24) + (K + 1) * std::ldexp(1.0, -126);
    double got = c[size_t(i * N + j)];
    if (!(std::fabs(got - double(ref)) <= tol)) {
      *why = "C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
             ", want " + std::to_string(double(ref)) + " (tolerance " + std::to_string(tol) + ")";
      return false;
    }
  }
  return true;
}

double glslGemmGflops(Device &d, const std::vector<float> &a, const std::vector<float> &b, int M,
                      int N, int K, int reps, std::vector<float> *c) {
  std::vector<float> out(size_t(M) * size_t(N), NAN);
  tsr_buffer_t ba = d.upload(a), bb = d.upload(b), bc = d.upload(out);
  GlslGemm g(d.device);
  g.launch(d.stream, ba, bb, bc, M, N, K);
  d.sync();
  d.download(bc, out);
  std::string why;
  if (!checkGemm(a, b, out, M, N, K, 256, &why))
    die("GLSL gemm.comp result wrong: " + why);
  double ms = timeMs(reps, [&] {
    g.launch(d.stream, ba, bb, bc, M, N, K);
    d.sync();
  });
  tsr_buffer_release(ba);
  tsr_buffer_release(bb);
  tsr_buffer_release(bc);
  if (c)
    *c = std::move(out);
  return 2.0 * M * N * K / (ms * 1e-3) / 1e9;
}

std::string matrixGemmKernel(int tm, int tn, int tk) {
  std::string a = "matrix<f32, " + std::to_string(tm) + ", " + std::to_string(tk) + ", a>";
  std::string b = "matrix<f32, " + std::to_string(tk) + ", " + std::to_string(tn) + ", b>";
  std::string acc = "matrix<f32, " + std::to_string(tm) + ", " + std::to_string(tn) + ", acc>";
  return R"(kernel @gemm_mx(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %C: buffer<f32, writeonly>, %M: i32, %N: i32, %K: i32) {
  %zero = const 0 : i32
  %fzero = const 0.0 : f32
  %tm = const )" +
         std::to_string(tm) + R"( : i32
  %tn = const )" +
         std::to_string(tn) + R"( : i32
  %tk = const )" +
         std::to_string(tk) + R"( : i32
  %gx = group_id.x : i32
  %gy = group_id.y : i32
  %ls = local_size.x : i32
  %sgs = subgroup_size : i32
  %nsub = div %ls, %sgs : i32
  %sid = subgroup_id : i32
  %gyn = mul %gy, %nsub : i32
  %rt = add %gyn, %sid : i32
  %row0 = mul %rt, %tm : i32
  %col0 = mul %gx, %tn : i32
  %rows = sub %M, %row0 : i32
  %cols = sub %N, %col0 : i32
  %rowK = mul %row0, %K : i32
  %acc0 = matrix_fill %fzero : )" +
         acc + R"(
  %accN = for %k = %zero to %K step %tk iter(%acc = %acc0) : i32 {
    %krem = sub %K, %k : i32
    %aoff = add %rowK, %k : i32
    %a = matrix_load %A[%aoff] stride %K bounds %rows, %krem : )" +
         a + R"(
    %kN = mul %k, %N : i32
    %boff = add %kN, %col0 : i32
    %b = matrix_load %B[%boff] stride %N bounds %krem, %cols : )" +
         b + R"(
    %d = matrix_mad %a, %b, %acc : )" +
         a + ", " + b + ", " + acc + R"(
    yield %d
  }
  %rowN = mul %row0, %N : i32
  %coff = add %rowN, %col0 : i32
  matrix_store %accN, %C[%coff] stride %N bounds %rows, %cols : )" +
         acc + R"(
}
)";
}

double tesseraGemmGflops(Device &d, const std::vector<float> &a, const std::vector<float> &b, int M,
                         int N, int K, int reps, int tm, int tn, int tk, int subgroups,
                         const ProgramOptions &opts, std::vector<float> *c) {
  auto m = parseOrDie(matrixGemmKernel(tm, tn, tk), "gemm_mx.tir");
  std::string err;
  auto p = Program::create(d.device, *m, nullptr, opts, &err);
  if (!p)
    die(err);
  const auto *k = p->kernel("gemm_mx");
  uint32_t sg = k->subgroupSize ? k->subgroupSize : 1;
  std::vector<float> out(size_t(M) * size_t(N), NAN);
  tsr_buffer_t ba = d.upload(a), bb = d.upload(b), bc = d.upload(out);
  uint32_t grid[3] = {uint32_t((N + tn - 1) / tn),
                      uint32_t((M + tm * subgroups - 1) / (tm * subgroups)), 1};
  uint32_t wg[3] = {sg * uint32_t(subgroups), 1, 1};
  tsr_arg_t args[] = {tsr_arg_buffer(ba, 0), tsr_arg_buffer(bb, 0), tsr_arg_buffer(bc, 0),
                      tsr_arg_i32(M),        tsr_arg_i32(N),        tsr_arg_i32(K)};
  auto run = [&] {
    check(tsr_stream_launch(d.stream, k->kernel, grid, wg, args, 6), "launch gemm_mx");
    d.sync();
  };
  run();
  d.download(bc, out);
  if (!checkGemm(a, b, out, M, N, K, 256, &err))
    die("Tessera gemm_mx result wrong: " + err);
  double ms = timeMs(reps, run);
  tsr_buffer_release(ba);
  tsr_buffer_release(bb);
  tsr_buffer_release(bc);
  if (c)
    *c = std::move(out);
  return 2.0 * M * N * K / (ms * 1e-3) / 1e9;
}

} // namespace tessera::bench
