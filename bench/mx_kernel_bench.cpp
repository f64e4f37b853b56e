// The CPU matrix runtime's speed (backends/cpu/matrix, issue #13): GFLOP/s of tsr_mx_mad on
// tiles that stay in L1 for each tile shape, and a single-thread GEMM made only of
// tsr_mx_load / tsr_mx_mad / tsr_mx_store calls (what the IR GEMM compiles to) against OpenBLAS
// sgemm on one thread in the same run, printed as ratios. OpenBLAS is dlopen'ed
// (libopenblas.so.0, scripts/setup-deps.sh installs it): without it the peer lines are skipped.
// Every GEMM result is checked against a double reference on sampled elements before it is
// reported. `--quick` (ctest smoke run) uses small sizes and asserts no timing.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h" // the vdpbf16ps kernel, measured beside
#include "bench/openblas_peer.h"

#include <dlfcn.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

// The calling thread's CPU time, not wall time: the build machine is shared, and time spent
// descheduled is not the code's. Everything measured runs on this one thread (OpenBLAS too).
double threadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "mx_kernel_bench: %s\n", msg.c_str());
  std::exit(1);
}

// Best-of and median seconds of fn over reps runs after one warm-up (best is the figure for a
// loaded shared machine: noise only ever adds time).
struct Timing {
  double best, median;
};
Timing timeIt(int reps, const std::function<void()> &fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double t0 = threadSeconds();
    fn();
    t.push_back(threadSeconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

struct AlignedBuf {
  explicit AlignedBuf(size_t bytes)
      : p(static_cast<char *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))) {
    std::memset(p, 0, (bytes + 63) / 64 * 64);
  }
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf &) = delete;
  AlignedBuf &operator=(const AlignedBuf &) = delete;
  char *p;
};

uint16_t toBf16(float f) { // round to nearest even (finite inputs)
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- tsr_mx_mad on L1-resident tiles (dot: the vdpbf16ps kernel instead of tsr_mx_mad)
double madGflops(uint8_t in, int M, int N, int K, int reps, bool dot = false) {
  uint8_t acc = in == TSR_MX_I8 ? TSR_MX_I32 : TSR_MX_F32;
  AlignedBuf a(size_t(tsr_mx_tile_bytes(in, M, K, TSR_MX_USE_A)));
  AlignedBuf b(size_t(tsr_mx_tile_bytes(in, K, N, TSR_MX_USE_B)));
  AlignedBuf c(size_t(tsr_mx_tile_bytes(acc, M, N, TSR_MX_USE_ACC)));
  tsr_mx_shape sa{in, TSR_MX_USE_A, 0, 0, uint16_t(M), uint16_t(K)};
  tsr_mx_shape sb{in, TSR_MX_USE_B, 0, 0, uint16_t(K), uint16_t(N)};
  tsr_mx_fill(&sa, a.p, 1.0);
  tsr_mx_fill(&sb, b.p, in == TSR_MX_I8 ? 1.0 : 0.0); // f32 sums stay finite
  int inner = std::max(1, int(4e6 / (double(M) * N * K)));
  Timing t = timeIt(reps, [&] {
    for (int i = 0; i < inner; ++i)
      if (dot)
        tessera::cpu_mx::activeKernels().madBf16Dot(
            M, N, K, (const uint16_t *)a.p, (const uint16_t *)b.p, (float *)c.p, (float *)c.p);
      else
        tsr_mx_mad(in, M, N, K, a.p, b.p, c.p, c.p);
  });
  return 2.0 * M * N * K * inner / t.best / 1e9;
}

// ---- instruction rates behind the choice of bf16 kernel: independent vfmadd231ps or vdpbf16ps
// on 24 register accumulators (no memory), in G instructions per second.
template <bool Dot>
__attribute__((target("avx512f,avx512bf16"), noinline)) double instrRate(long iters) {
  constexpr int W = 24;
  __m512 acc[W];
  for (int i = 0; i < W; ++i)
    acc[i] = _mm512_set1_ps(float(i));
  __m512i x = _mm512_set1_epi32(0x3f803f80), y = _mm512_set1_epi32(0x3f803f81);
  double t0 = threadSeconds();
  for (long n = 0; n < iters; ++n) {
    __asm__ volatile("" : "+v"(x), "+v"(y)); // not loop-invariant: no hoisting
    for (int i = 0; i < W; ++i)
      acc[i] = Dot ? _mm512_dpbf16_ps(acc[i], (__m512bh)x, (__m512bh)y)
                   : _mm512_fmadd_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(y), acc[i]);
  }
  double t = threadSeconds() - t0;
  float sink = 0;
  for (int i = 0; i < W; ++i)
    sink += _mm512_reduce_add_ps(acc[i]);
  if (sink == 1.25f) // keeps the loop alive
    std::printf(" ");
  return double(iters) * W / t / 1e9;
}

// ---- a GEMM C = A * B (n x n, row-major) made of matrix runtime calls, as a compiled IR kernel
// with tiles Mt x Nt and K-step Kt would run it on one subgroup: per C tile, fill acc, then per
// K step load a and b tiles and mad in place, then store.
struct GemmTiles {
  int mt, nt, kt;
};

// colB: B is passed as its transpose (a linear layer's weight [N, K]) and read with `.col`.
void mxGemm(uint8_t in, int n, int ld, GemmTiles g, const void *A, const void *B, float *C,
            bool colB) {
  tsr_mx_shape sa{in, TSR_MX_USE_A, 0, 0, uint16_t(g.mt), uint16_t(g.kt)};
  tsr_mx_shape sb{in, TSR_MX_USE_B, uint8_t(colB), 0, uint16_t(g.kt), uint16_t(g.nt)};
  tsr_mx_shape sc{TSR_MX_F32, TSR_MX_USE_ACC, 0, 0, uint16_t(g.mt), uint16_t(g.nt)};
  AlignedBuf a(size_t(tsr_mx_tile_bytes(in, g.mt, g.kt, TSR_MX_USE_A)));
  AlignedBuf b(size_t(tsr_mx_tile_bytes(in, g.kt, g.nt, TSR_MX_USE_B)));
  AlignedBuf c(size_t(tsr_mx_tile_bytes(TSR_MX_F32, g.mt, g.nt, TSR_MX_USE_ACC)));
  int64_t nn = int64_t(n) * ld;
  for (int j0 = 0; j0 < n; j0 += g.nt)
    for (int i0 = 0; i0 < n; i0 += g.mt) {
      tsr_mx_fill(&sc, c.p, 0.0);
      for (int k0 = 0; k0 < n; k0 += g.kt) {
        tsr_mx_load(&sa, a.p, A, nn, int64_t(i0) * ld + k0, ld, g.mt, g.kt, nullptr);
        tsr_mx_load(&sb, b.p, B, nn, colB ? int64_t(j0) * ld + k0 : int64_t(k0) * ld + j0, ld, g.kt,
                    g.nt, nullptr);
        tsr_mx_mad(in, g.mt, g.nt, g.kt, a.p, b.p, c.p, c.p);
      }
      tsr_mx_store(&sc, c.p, C, nn, int64_t(i0) * ld + j0, ld, g.mt, g.nt, nullptr);
    }
}

// Sampled elements of C against a double reference under docs/ir.md's matrix_mad bound.
void checkGemm(const char *what, int n, int ld, const std::vector<float> &A,
               const std::vector<float> &B, const float *C) {
  std::mt19937 rng(7);
  for (int s = 0; s < 256; ++s) {
    int i = int(rng() % unsigned(n)), j = int(rng() % unsigned(n));
    double ref = 0, mag = 0;
    for (int k = 0; k < n; ++k) {
      double p = double(A[size_t(i) * ld + k]) * B[size_t(k) * ld + j];
      ref += p, mag += std::fabs(p);
    }
    double got = C[size_t(i) * ld + j];
    if (!(std::fabs(got - ref) <= (n + 1) * (std::ldexp(mag, -24) + 0x1p-126)))
      die(std::string(what) + ": C[" + std::to_string(i) + "][" + std::to_string(j) +
          "] = " + std::to_string(got) + ", reference " + std::to_string(ref));
  }
}

// Nanoseconds per tsr_mx_load of one whole in-range tile from L1-resident memory (ld = the
// line length), the cost the GEMM pays per k step besides the mad. The buffer holds three
// tiles so the row-major path's prefetch of the next tile hits mapped memory, as in a GEMM.
double loadNs(uint8_t elem, uint8_t use, bool col, int rows, int cols, long iters, int reps) {
  tsr_mx_shape s{elem, use, uint8_t(col), 0, uint16_t(rows), uint16_t(cols)};
  int64_t n = int64_t(rows) * cols;
  AlignedBuf mem(size_t(n) * 4 * 3), tile(size_t(tsr_mx_tile_bytes(elem, rows, cols, use)));
  int64_t ld = col ? rows : cols;
  Timing t = timeIt(reps, [&] {
    for (long i = 0; i < iters; ++i) {
      tsr_mx_load(&s, tile.p, mem.p, n, 0, ld, rows, cols, nullptr);
      __asm__ volatile("" ::"r"(tile.p) : "memory");
    }
  });
  return t.best / double(iters) * 1e9;
}

bool parseTiles(const char *s, GemmTiles &g) {
  return std::sscanf(s, "%dx%dx%d", &g.mt, &g.nt, &g.kt) == 3;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false, colB = false;
  int n = 2048, reps = 3, ld = 0;
  std::vector<GemmTiles> tiles;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--size" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else if (arg == "--ld" && i + 1 < argc) {
      ld = std::atoi(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (arg == "--col-b") {
      colB = true;
    } else if (arg == "--tile" && i + 1 < argc) {
      GemmTiles g;
      if (!parseTiles(argv[++i], g))
        die("--tile wants MTxNTxKT, e.g. 64x64x64");
      tiles.push_back(g);
    } else {
      std::printf(
          "usage: mx_kernel_bench [--quick] [--size N] [--ld LD] [--reps R] [--col-b]\n"
          "                       [--tile MTxNTxKT]...\n"
          "  tile mad GFLOP/s in L1, then an N^3 GEMM of load/mad/store calls on one\n"
          "  thread (default tiles 64x64x{64,128}, 32x128x64, 128x64x{32,64}, 64x128x64) vs\n"
          "  OpenBLAS sgemm on one thread. --col-b: the GEMM reads B from its transpose\n"
          "  (a weight [N, K]) with .col loads.\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  if (quick)
    n = 256, reps = 1;
  ld = std::max(ld, n); // --ld: a padded leading dimension (2048 aliases in the caches)
  if (tiles.empty())
    tiles = {{64, 64, 64},  {64, 64, 128}, {32, 128, 64},
             {128, 64, 32}, {128, 64, 64}, {64, 128, 64}};
  for (GemmTiles g : tiles)
    if (n % g.mt || n % g.nt || n % g.kt)
      die("--size must be a multiple of every tile dimension");
  std::printf("matrix path: %s, bf16 tiles: %s, i8 tiles: %s\n", tsr_mx_path_name(),
              tsr_mx_bf16_kernel(), tessera::cpu_mx::activeKernels().madI8Amx ? "amx" : "simd");

  // Tile mad throughput.
  struct Shape {
    int M, N, K;
  };
  bool dot = tessera::cpu_mx::activeKernels().madBf16Dot != nullptr;
  std::printf("\n%-12s %10s %10s %10s %10s  (tsr_mx_mad, d = c in place, tiles in L1, 1 "
              "thread; dot: the vdpbf16ps kernel)\n",
              "M x N x K", "f32 GF/s", "bf16 GF/s", "i8 GOP/s", "dot GF/s");
  std::vector<Shape> shapes = {{64, 64, 64},  {32, 128, 64}, {128, 64, 64}, {64, 128, 64},
                               {64, 64, 128}, {128, 32, 64}, {32, 64, 128}, {32, 32, 32},
                               {16, 16, 64},  {16, 16, 32},  {16, 16, 16},  {8, 8, 8}};
  if (quick)
    shapes.resize(2);
  for (Shape s : shapes) {
    std::printf("%3dx%3dx%3d  %10.1f %10.1f %10.1f", s.M, s.N, s.K,
                madGflops(TSR_MX_F32, s.M, s.N, s.K, reps),
                madGflops(TSR_MX_BF16, s.M, s.N, s.K, reps),
                madGflops(TSR_MX_I8, s.M, s.N, s.K, reps));
    if (dot)
      std::printf(" %10.1f\n", madGflops(TSR_MX_BF16, s.M, s.N, s.K, reps, true));
    else
      std::printf(" %10s\n", "n/a");
  }

  if (dot) {
    long iters = quick ? 100000 : 20000000;
    std::printf("\ninstruction rate, 24 independent register accumulators: vfmadd231ps %.2f G/s "
                "(16 MACs each), vdpbf16ps %.2f G/s (32 MACs each)\n",
                instrRate<false>(iters), instrRate<true>(iters));
  }

  // Tile load cost.
  {
    long iters = quick ? 1000 : 100000;
    std::printf("\ntsr_mx_load ns per whole in-range tile (L1, 1 thread):\n");
    struct L {
      const char *name;
      uint8_t elem, use;
      int rows, cols;
    };
    for (L l : {L{"f32 b 64x64", TSR_MX_F32, TSR_MX_USE_B, 64, 64},
                L{"bf16 b 64x64", TSR_MX_BF16, TSR_MX_USE_B, 64, 64},
                L{"f16 b 64x64", TSR_MX_F16, TSR_MX_USE_B, 64, 64},
                L{"i8 b 64x64", TSR_MX_I8, TSR_MX_USE_B, 64, 64},
                L{"bf16 a 64x64", TSR_MX_BF16, TSR_MX_USE_A, 64, 64},
                L{"f32 b 128x8", TSR_MX_F32, TSR_MX_USE_B, 128, 8}})
      std::printf("  %-14s row-major %8.1f   col-major (.col) %8.1f\n", l.name,
                  loadNs(l.elem, l.use, false, l.rows, l.cols, iters, reps),
                  loadNs(l.elem, l.use, true, l.rows, l.cols, iters, reps));
  }

  // The GEMM.
  std::vector<float> A(size_t(n) * ld), B(size_t(n) * ld), C(size_t(n) * ld);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &x : A)
    x = fromBf16(toBf16(dist(rng))); // bf16-exact: the bf16 GEMM computes the same product
  for (float &x : B)
    x = fromBf16(toBf16(dist(rng)));
  std::vector<uint16_t> Ab(A.size()), Bb(B.size());
  for (size_t i = 0; i < A.size(); ++i)
    Ab[i] = toBf16(A[i]), Bb[i] = toBf16(B[i]);
  // --col-b: the runtime GEMM reads Bt[j][k] = B[k][j] with .col loads.
  std::vector<float> Bt = B;
  std::vector<uint16_t> Bbt = Bb;
  if (colB)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        Bt[size_t(j) * ld + k] = B[size_t(k) * ld + j],
                            Bbt[size_t(j) * ld + k] = Bb[size_t(k) * ld + j];
  double flop = 2.0 * n * n * n;
  tessera::bench::OpenBlas blas(std::strncmp(tsr_mx_path_name(), "avx512", 6) == 0);
  double blasGf = 0;
  if (blas.sgemm) {
    blas.setThreads(1);
    Timing t =
        timeIt(reps, [&] { blas.run(n, n, n, A.data(), ld, B.data(), ld, false, C.data(), ld); });
    checkGemm("OpenBLAS sgemm", n, ld, A, B, C.data());
    blasGf = flop / t.best / 1e9;
    std::printf(
        "\n%d^3 GEMM (ld %d), 1 thread: OpenBLAS sgemm (%s kernels) %.1f GFLOP/s (best of %d; "
        "median %.1f)\n",
        n, ld, blas.coreName(), blasGf, reps, flop / t.median / 1e9);
  } else {
    std::printf("\n%d^3 GEMM, 1 thread: libopenblas.so.0 not found, no peer\n", n);
  }
  std::printf("%-12s %12s %8s %12s %8s  (load + mad + store calls; ratio vs OpenBLAS f32%s)\n",
              "Mt x Nt x Kt", "f32 GF/s", "ratio", "bf16 GF/s", "ratio",
              colB ? "; B read .col from its transpose" : "");
  for (GemmTiles g : tiles) {
    std::fill(C.begin(), C.end(), 0.0f);
    Timing tf =
        timeIt(reps, [&] { mxGemm(TSR_MX_F32, n, ld, g, A.data(), Bt.data(), C.data(), colB); });
    checkGemm("f32 matrix-runtime GEMM", n, ld, A, B, C.data());
    std::fill(C.begin(), C.end(), 0.0f);
    Timing tb =
        timeIt(reps, [&] { mxGemm(TSR_MX_BF16, n, ld, g, Ab.data(), Bbt.data(), C.data(), colB); });
    checkGemm("bf16 matrix-runtime GEMM", n, ld, A, B, C.data());
    double gf = flop / tf.best / 1e9, gb = flop / tb.best / 1e9;
    std::printf("%3dx%3dx%3d  %12.1f %7.2fx %12.1f %7.2fx\n", g.mt, g.nt, g.kt, gf,
                blasGf > 0 ? gf / blasGf : 0.0, gb, blasGf > 0 ? gb / blasGf : 0.0);
  }
  std::printf("\ntargets (issue #13, for the IR GEMM): f32 >= 0.5x OpenBLAS sgemm, bf16 >= 1.0x "
              "OpenBLAS f32 sgemm\n");
  return 0;
}
