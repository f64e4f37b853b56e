// GEMM benchmark (issue #13): in one process and one run, Tessera's IR GEMM (the matrix ops,
// compiled through runtime/ Program like every other benchmark) against the peer the issue
// names, on the same inputs, the two results checked against each other under the matrix_mad
// contract (docs/ir.md, "Matrix ops": each within (K + 1) 2^-24 sum|a b| of the exact sum, so
// within twice that of each other) before any figure is reported:
//   - f32 2048^3, 1024^3 and 4096 x 64 x 4096 on cpu:0 against OpenBLAS sgemm (2 threads);
//   - bf16 inputs, f32 accumulation, 2048^3 against OpenBLAS sgemm on the same values in f32;
//   - GEMM + bias + GELU fused in one kernel against sgemm then a separate OpenMP pass, with
//     f32 inputs and with bf16 inputs (the peer: sgemm on the same values in f32, then the pass);
//   - the same f32 cases through the graph lowering (ir/graph/lower_matmul.cpp: the kernel
//     torch.compile's mm / linear become), "via lowerMatmul";
//   - vulkan:0 512^3 and 1024^3 against the hand-written GLSL GEMM (bench/vulkan/gemm.comp,
//     run by bench/vulkan_gemm.h), when vulkan:0 exists.
// --shapes runs instead only the GEMMs of bench/torch_models.py (linear layers x @ W^T + bias,
// attention's bmm) through lowerMatmul against OpenBLAS sgemm per batch entry (+ a bias pass),
// reporting the best of --reps (default 300) runs. Other figures are medians of --reps runs
// after a warm-up; nothing here asserts a time. --quick runs small sizes (the smoke tests); --tiles
// / --vk-tiles choose Tessera's tile shapes (tm x tn x tk) on the CPU and on Vulkan; --json FILE
// writes {"cpu_matrix_path", "cpu_bf16_kernel", "cases": [{"name", "device", "tessera_gflops",
// "peer", "peer_gflops", "ratio"}]}.
#include "bench/gemm_bench.h"
#include "backends/cpu/matrix/matrix_abi.h"
#include "bench/bench_util.h"
#include "bench/openblas_peer.h"
#include "bench/vulkan_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

// glibc's libmvec erff over 16 floats (the AVX-512 variant of the same libm's erff) or, on a
// host without AVX-512 (the bench is built with -march=native), over 8 (the AVX2 variant),
// called directly: clang does not map erff to libmvec by itself.
#if defined(__AVX512F__)
extern "C" __m512 _ZGVeN16v_erff(__m512);
#elif defined(__AVX2__)
extern "C" __m256 _ZGVdN8v_erff(__m256);
#endif

namespace gemmbench {

std::vector<float> randomMatrix(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

// The peer, loaded once (before any use: its kernels are chosen when it is loaded).
const tessera::bench::OpenBlas &peer() {
  static const tessera::bench::OpenBlas blas(std::strncmp(tsr_mx_path_name(), "avx512", 6) == 0);
  return blas;
}

void sgemm(const std::vector<float> &A, const std::vector<float> &B, std::vector<float> &C, int M,
           int N, int K, bool bColMajor) {
  peer().run(M, N, K, A.data(), K, B.data(), bColMajor ? K : N, bColMajor, C.data(), N);
}

// S = |A| x |B| (the contract's magnitude), by OpenBLAS: its own error is a relative K 2^-24,
// covered by the 1.01 below.
std::vector<float> magnitudes(const std::vector<float> &A, const std::vector<float> &B, int M,
                              int N, int K, bool bColMajor) {
  std::vector<float> a(A.size()), b(B.size()), s(size_t(M) * N);
  for (size_t i = 0; i < A.size(); ++i)
    a[i] = std::fabs(A[i]);
  for (size_t i = 0; i < B.size(); ++i)
    b[i] = std::fabs(B[i]);
  sgemm(a, b, s, M, N, K, bColMajor);
  return s;
}

void print(const CaseResult &r) {
  std::printf("  %-36s %-8s tessera %8.2f GFLOP/s   %-40s %8.2f GFLOP/s   ratio %.3f\n",
              r.name.c_str(), r.device.c_str(), r.tessera, r.peer.c_str(), r.peerGflops,
              r.tessera / r.peerGflops);
  std::fflush(stdout);
}

} // namespace gemmbench

namespace {

using namespace tessera::bench;
using namespace gemmbench;

// The unfused epilogue of the peer: y = gelu(y + bias[col]), a second pass over y, vectorised
// with libmvec's erff, on 2 threads.
void biasGeluPass(std::vector<float> &y, const std::vector<float> &bias, int N) {
  const int64_t rows = int64_t(y.size()) / N;
#pragma omp parallel for num_threads(2)
  for (int64_t r = 0; r < rows; ++r) {
    float *row = y.data() + r * N;
    int j = 0;
#if defined(__AVX512F__)
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f),
                 isq2 = _mm512_set1_ps(0.70710677f);
    for (; j + 16 <= N; j += 16) {
      __m512 z = _mm512_add_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(bias.data() + j));
      __m512 e = _ZGVeN16v_erff(_mm512_mul_ps(z, isq2));
      _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_mul_ps(half, z), _mm512_add_ps(one, e)));
    }
#elif defined(__AVX2__)
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f),
                 isq2 = _mm256_set1_ps(0.70710677f);
    for (; j + 8 <= N; j += 8) {
      __m256 z = _mm256_add_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(bias.data() + j));
      __m256 e = _ZGVdN8v_erff(_mm256_mul_ps(z, isq2));
      _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_mul_ps(half, z), _mm256_add_ps(one, e)));
    }
#endif
    for (; j < N; ++j) {
      float z = row[j] + bias[j];
      row[j] = 0.5f * z * (1.f + erff(z * 0.70710677f));
    }
  }
}

struct Tiles {
  int m = 64, n = 64, k = 64;
};

// The kernel: C[M, N] (+ bias, GELU) = A[M, K] x B, A row-major, B row-major [K, N] or, with
// bColMajor, stored [N, K] (a linear layer's weight) and read with `.col`. Each subgroup walks
// output tiles in a grid-stride loop, as ir/examples/gemm_f32.tir does.
std::string gemmText(const std::string &name, Tiles t, const char *in, bool bColMajor,
                     bool biasGelu) {
  auto s = [](int v) { return std::to_string(v); };
  std::string acc = "matrix<f32, " + s(t.m) + ", " + s(t.n) + ", acc>";
  std::string at = std::string("matrix<") + in + ", " + s(t.m) + ", " + s(t.k) + ", a>";
  std::string bt = std::string("matrix<") + in + ", " + s(t.k) + ", " + s(t.n) + ", b>";
  std::string x = "kernel @" + name + "(%A: buffer<" + in + ", readonly>, %B: buffer<" + in +
                  ", readonly>, " + (biasGelu ? "%bias: buffer<f32, readonly>, " : "") +
                  "%C: buffer<f32, writeonly>, %M: i32, %N: i32, %K: i32) {\n";
  x += "  %zero = const 0 : i32\n  %tm = const " + s(t.m) + " : i32\n  %tn = const " + s(t.n) +
       " : i32\n  %tk = const " + s(t.k) + " : i32\n  %tm1 = const " + s(t.m - 1) +
       " : i32\n  %tn1 = const " + s(t.n - 1) + " : i32\n  %fzero = const 0.0 : f32\n";
  x += R"(  %wg = local_size.x : i32
  %sg = subgroup_size : i32
  %nsub = div %wg, %sg : i32
  %gid = group_id.x : i32
  %ngroups = num_groups.x : i32
  %sid = subgroup_id : i32
  %first0 = mul %gid, %nsub : i32
  %first = add %first0, %sid : i32
  %stride = mul %ngroups, %nsub : i32
  %mt0 = add %M, %tm1 : i32
  %mtiles = div %mt0, %tm : i32
  %nt0 = add %N, %tn1 : i32
  %ntiles = div %nt0, %tn : i32
  %tiles = mul %mtiles, %ntiles : i32
  for %t = %first to %tiles step %stride : i32 {
    %ti = div %t, %ntiles : i32
    %tj = rem %t, %ntiles : i32
    %row0 = mul %ti, %tm : i32
    %col0 = mul %tj, %tn : i32
    %rows = sub %M, %row0 : i32
    %cols = sub %N, %col0 : i32
    %arow = mul %row0, %K : i32
)";
  x += "    %init = matrix_fill %fzero : " + acc + "\n";
  x += "    %acc = for %k0 = %zero to %K step %tk iter(%c = %init) : i32 {\n";
  x += "      %ks = sub %K, %k0 : i32\n      %aoff = add %arow, %k0 : i32\n";
  x += "      %a = matrix_load %A[%aoff] stride %K bounds %rows, %ks : " + at + "\n";
  if (bColMajor)
    x += "      %bj = mul %col0, %K : i32\n      %boff = add %bj, %k0 : i32\n"
         "      %b = matrix_load.col %B[%boff] stride %K bounds %ks, %cols : " +
         bt + "\n";
  else
    x += "      %bk = mul %k0, %N : i32\n      %boff = add %bk, %col0 : i32\n"
         "      %b = matrix_load %B[%boff] stride %N bounds %ks, %cols : " +
         bt + "\n";
  x += "      %c2 = matrix_mad %a, %b, %c : " + at + ", " + bt + ", " + acc +
       "\n      yield %c2\n    }\n";
  std::string out = "%acc";
  if (biasGelu) {
    x += "    %bm = matrix_load %bias[%col0] stride %zero bounds %rows, %cols : " + acc + "\n";
    x += "    %half = const 0.5 : f32\n    %one = const 1.0 : f32\n"
         "    %isq2 = const 0.70710677 : f32\n";
    x += "    %y = matrix_map(%s = %acc, %bv = %bm) -> " + acc + " {\n";
    x += "      %z = add %s, %bv : f32\n      %u = mul %z, %isq2 : f32\n      %e = erf %u : "
         "f32\n      %p = add %one, %e : f32\n      %h = mul %half, %z : f32\n      %g = mul "
         "%h, %p : f32\n      yield %g\n    }\n";
    out = "%y";
  }
  x += "    %crow = mul %row0, %N : i32\n    %coff = add %crow, %col0 : i32\n";
  x += "    matrix_store " + out + ", %C[%coff] stride %N bounds %rows, %cols : " + acc +
       "\n  }\n}\n";
  return x;
}

uint16_t toBf16(float f) { // round to nearest even (inputs are finite)
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

tsr_buffer_t uploadBytes(Device &d, const void *p, size_t bytes) {
  tsr_buffer_t b = nullptr;
  check(tsr_buffer_allocate(d.device, bytes, TSR_MEMORY_DEVICE_LOCAL, &b), "allocate");
  check(tsr_stream_copy_h2d(d.stream, p, b, 0, bytes), "copy_h2d");
  d.sync();
  return b;
}

// Both results are within (K + 1) 2^-24 S (+ subnormal slack) of the exact product, so they
// must agree within twice that; `gelu` widens it by the epilogue (see below).
void compare(const char *what, const std::vector<float> &got, const std::vector<float> &peer,
             const std::vector<float> &S, int K, const std::vector<float> *bias, int N) {
  const double eps = 0x1p-24;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = 2.02 * (K + 1) * eps * S[i] + 2.0 * (K + 1) * 0x1p-126;
    if (bias) {
      // GELU' < 1.13 carries the sums' difference; each side adds its erf error (Tessera's
      // budget 16 ULP, glibc's erff < 2 ULP) and the roundings of 5 steps, relative to |z|
      // (1 + erf cancels near -1: an absolute |z| 2^-24 per ULP of erf).
      double z = std::fabs(double(peer[i])) + S[i] + std::fabs((*bias)[i % N]);
      tol = 1.13 * (tol + 2 * eps * z) + 48 * eps * z + 1e-30;
    }
    if (!(std::fabs(double(got[i]) - double(peer[i])) <= tol))
      die(std::string(what) + ": Tessera and the peer differ at " + std::to_string(i) + ": " +
          std::to_string(got[i]) + " vs " + std::to_string(peer[i]) + " (allowed " +
          std::to_string(tol) + ")");
  }
}

// Compiles `text` (kernel @gemm, gemmText) for `d`, runs it once into `C` and returns the
// median time in ms of `reps` runs (launch + synchronize). Takes ownership of the buffers.
// Workgroups of `subgroups` subgroups, one workgroup per `subgroups` tiles (the kernel's
// grid-stride loop covers any remainder).
double runTessera(Device &d, const std::string &text, Tiles t, Gemm g, int subgroups, int reps,
                  tsr_buffer_t bA, tsr_buffer_t bB, tsr_buffer_t bBias, std::vector<float> &C) {
  auto module = parseOrDie(text, "gemm_bench.tir");
  auto program = programOrDie(d, *module, nullptr);
  const tessera::ProgramKernel *pk = program->kernel("gemm");
  if (!pk)
    die("gemm kernel missing");
  tsr_buffer_t bC = d.upload(C);
  std::vector<tsr_arg_t> args = {tsr_arg_buffer(bA, 0), tsr_arg_buffer(bB, 0)};
  if (bBias)
    args.push_back(tsr_arg_buffer(bBias, 0));
  for (tsr_arg_t a : {tsr_arg_buffer(bC, 0), tsr_arg_i32(g.M), tsr_arg_i32(g.N), tsr_arg_i32(g.K)})
    args.push_back(a);
  uint32_t sg = pk->subgroupSize ? pk->subgroupSize : 16;
  uint32_t tiles = uint32_t(((g.M + t.m - 1) / t.m) * ((g.N + t.n - 1) / t.n));
  uint32_t groups = (tiles + subgroups - 1) / subgroups;
  double ms = timeMs(reps, [&] {
    d.launch(pk->kernel, groups, sg * subgroups, args);
    d.sync();
  });
  d.download(bC, C);
  for (tsr_buffer_t b : {bA, bB, bBias, bC})
    if (b)
      tsr_buffer_release(b);
  return ms;
}

// One CPU case: Tessera's kernel and the peer on the same inputs, timed in the same run.
CaseResult cpuCase(Device &d, const std::string &label, Gemm g, Tiles t, bool bf16, bool biasGelu,
                   bool lowered, int reps) {
  const bool bCol = biasGelu; // the fused case is a linear layer: weight [N, K]
  std::vector<float> A = randomMatrix(size_t(g.M) * g.K, 1), B = randomMatrix(size_t(g.K) * g.N, 2);
  std::vector<uint16_t> A16, B16;
  if (bf16) { // both sides multiply the same (bf16-representable) values
    for (auto *v : {&A, &B})
      for (float &x : *v)
        x = std::bit_cast<float>(uint32_t(toBf16(x)) << 16);
    for (float x : A)
      A16.push_back(toBf16(x));
    for (float x : B)
      B16.push_back(toBf16(x));
  }
  std::vector<float> bias = randomMatrix(size_t(g.N), 3);
  const char *in = bf16 ? "bf16" : "f32";
  std::vector<float> C(size_t(g.M) * g.N, 0.f), Cp(C.size());
  double tt = lowered ? runLowered(d, g, 1, bCol, biasGelu ? Epi::BiasGelu : Epi::None, reps, false,
                                   d.upload(A), d.upload(B), biasGelu ? d.upload(bias) : nullptr, C)
                      : runTessera(d, gemmText("gemm", t, in, bCol, biasGelu), t, g, 1, reps,
                                   bf16 ? uploadBytes(d, A16.data(), A16.size() * 2) : d.upload(A),
                                   bf16 ? uploadBytes(d, B16.data(), B16.size() * 2) : d.upload(B),
                                   biasGelu ? d.upload(bias) : nullptr, C);
  auto peer = [&] {
    sgemm(A, B, Cp, g.M, g.N, g.K, bCol);
    if (!biasGelu)
      return;
    biasGeluPass(Cp, bias, g.N);
  };
  double tp = timeMs(reps, peer);
  compare(label.c_str(), C, Cp, magnitudes(A, B, g.M, g.N, g.K, bCol), g.K,
          biasGelu ? &bias : nullptr, g.N);
  double flops = 2.0 * g.M * g.N * g.K;
  CaseResult r;
  r.name = label;
  r.device = "cpu:0";
  r.peer = biasGelu ? "openblas sgemm + omp bias/gelu pass" : "openblas sgemm";
  r.tessera = flops / (tt * 1e6);
  r.peerGflops = flops / (tp * 1e6);
  return r;
}

// Vulkan: Tessera's f32 GEMM (row-major) against the hand-written GLSL GEMM (vulkan_gemm.h,
// which checks its own result first) on the same inputs; the two results are then compared.
CaseResult vulkanCase(Device &d, const std::string &label, Gemm g, Tiles t, int subgroups,
                      int reps) {
  std::vector<float> A = randomMatrix(size_t(g.M) * g.K, 4), B = randomMatrix(size_t(g.K) * g.N, 5);
  std::vector<float> Cg, C(size_t(g.M) * g.N, 0.f);
  double glsl = glslGemmGflops(d, A, B, g.M, g.N, g.K, reps, &Cg);
  double tt = runTessera(d, gemmText("gemm", t, "f32", false, false), t, g, subgroups, reps,
                         d.upload(A), d.upload(B), nullptr, C);
  compare(label.c_str(), C, Cg, magnitudes(A, B, g.M, g.N, g.K, false), g.K, nullptr, g.N);
  CaseResult r;
  r.name = label;
  r.device = "vulkan:0";
  r.peer = "glsl tiled gemm (bench/vulkan/gemm.comp)";
  r.tessera = 2.0 * g.M * g.N * g.K / (tt * 1e6);
  r.peerGflops = glsl;
  return r;
}

bool hasDevice(const char *name) {
  tsr_registry_t reg = nullptr;
  check(tsr_registry_create(&reg), "tsr_registry_create");
  tsr_status_free(tsr_registry_register_builtin_drivers(reg));
  tsr_device_t dev = nullptr;
  tsr_status_t st = tsr_registry_open_device(reg, name, &dev);
  bool ok = st == nullptr;
  tsr_status_free(st);
  if (dev)
    tsr_device_release(dev);
  tsr_registry_release(reg);
  return ok;
}

void writeJson(const std::string &path, const std::vector<CaseResult> &cases) {
  std::ofstream f(path);
  if (!f)
    die("cannot write " + path);
  f << "{\"cpu_matrix_path\": \"" << tsr_mx_path_name() << "\", \"cpu_bf16_kernel\": \""
    << tsr_mx_bf16_kernel() << "\", \"cases\": [";
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseResult &c = cases[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s\n  {\"name\": \"%s\", \"device\": \"%s\", \"tessera_gflops\": %.3f, "
                  "\"peer\": \"%s\", \"peer_gflops\": %.3f, \"ratio\": %.4f}",
                  i ? "," : "", c.name.c_str(), c.device.c_str(), c.tessera, c.peer.c_str(),
                  c.peerGflops, c.tessera / c.peerGflops);
    f << buf;
  }
  f << "\n]}\n";
}

// The case's name; --quick runs other sizes and says which.
std::string label(const char *name, bool quick, Gemm g) {
  if (!quick)
    return name;
  return std::string(name) + " (quick: " + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" +
         std::to_string(g.K) + ")";
}

bool parseTiles(const std::string &s, Tiles &t) {
  return std::sscanf(s.c_str(), "%dx%dx%d", &t.m, &t.n, &t.k) == 3;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 5;
  bool quick = false, shapes = false, repsGiven = false;
  std::string json, only;
  std::vector<std::string> devices; // empty: cpu:0 and vulkan:0
  Tiles tiles;
  Tiles vkTiles{32, 128, 8}; // the best shape measured on lavapipe (docs/performance.md)
  int vkSubgroups = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--shapes")
      shapes = true;
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]), repsGiven = true;
    else if (a == "--tiles" && i + 1 < argc && parseTiles(argv[i + 1], tiles))
      ++i;
    else if (a == "--vk-tiles" && i + 1 < argc && parseTiles(argv[i + 1], vkTiles))
      ++i;
    else if (a == "--vk-subgroups" && i + 1 < argc)
      vkSubgroups = std::max(1, std::atoi(argv[++i]));
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--device" && i + 1 < argc)
      devices.push_back(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: gemm_bench [--quick] [--shapes] [--reps N] [--json FILE] [--tiles "
                   "MxNxK] [--vk-tiles MxNxK] [--vk-subgroups N] [--only NAME] "
                   "[--device cpu:0|vulkan:0]...\n");
      return 2;
    }
  }
  if (quick)
    reps = 1;
  else if (shapes && !repsGiven)
    reps = 300; // sub-millisecond runs on a shared host: a median needs many

  auto wanted = [&](const char *dev) {
    return devices.empty() || std::find(devices.begin(), devices.end(), dev) != devices.end();
  };
  if (!peer()) {
    std::fprintf(stderr, "gemm_bench: libopenblas.so.0 not found (scripts/setup-deps.sh installs "
                         "libopenblas-dev)\n");
    return 1;
  }
  peer().setThreads(2);
  Device cpu("cpu:0");
  struct Spec {
    const char *name;
    Gemm full, small;
    bool bf16, gelu, lowered = false;
  };
  const Spec specs[] = {
      {"f32 2048^3", {2048, 2048, 2048}, {256, 256, 256}, false, false},
      {"f32 1024^3", {1024, 1024, 1024}, {128, 128, 128}, false, false},
      {"f32 4096x64x4096", {4096, 64, 4096}, {512, 64, 512}, false, false},
      {"bf16 in, f32 acc 2048^3", {2048, 2048, 2048}, {256, 256, 256}, true, false},
      {"f32 2048^3 + bias + gelu", {2048, 2048, 2048}, {256, 256, 256}, false, true},
      {"bf16 in 2048^3 + bias + gelu", {2048, 2048, 2048}, {256, 256, 256}, true, true},
      {"f32 1024^3 via lowerMatmul", {1024, 1024, 1024}, {128, 128, 128}, false, false, true},
      {"f32 2048^3 + bias + gelu via lowerMatmul",
       {2048, 2048, 2048},
       {256, 256, 256},
       false,
       true,
       true},
  };
  const std::string tileText = shapes ? "tiles picked by lowerMatmul"
                                      : "tiles " + std::to_string(tiles.m) + "x" +
                                            std::to_string(tiles.n) + "x" + std::to_string(tiles.k);
  std::printf("gemm_bench: cpu matrix path %s (bf16 tiles: %s), %s, %s %d, OpenBLAS %d threads "
              "(%s kernels)\n",
              tsr_mx_path_name(), tsr_mx_bf16_kernel(), tileText.c_str(),
              shapes ? "best of" : "median of", reps, peer().getThreads(), peer().coreName());
  std::vector<CaseResult> results;
  if (shapes) {
    runShapes(cpu, only, quick ? 3 : reps, results);
    if (!json.empty())
      writeJson(json, results);
    return 0;
  }
  for (const Spec &s : specs) {
    if (!wanted("cpu:0") || (!only.empty() && std::string(s.name).find(only) == std::string::npos))
      continue;
    results.push_back(cpuCase(cpu, label(s.name, quick, s.small), quick ? s.small : s.full, tiles,
                              s.bf16, s.gelu, s.lowered, reps));
    print(results.back());
  }
  const std::pair<const char *, Gemm> vk[] = {{"f32 512^3", {512, 512, 512}},
                                              {"f32 1024^3", {1024, 1024, 1024}}};
  if (!wanted("vulkan:0")) {
  } else if (!hasDevice("vulkan:0")) {
    std::printf("  vulkan:0 not present: its cases are left out\n");
  } else {
    Device gpu("vulkan:0");
    for (const auto &[name, g] : vk) {
      if (!only.empty() && std::string(name).find(only) == std::string::npos)
        continue;
      Gemm size = quick ? Gemm{96, 80, 72} : g;
      results.push_back(
          vulkanCase(gpu, label(name, quick, size), size, vkTiles, vkSubgroups, reps));
      print(results.back());
    }
  }
  if (!json.empty())
    writeJson(json, results);
  return 0;
}
