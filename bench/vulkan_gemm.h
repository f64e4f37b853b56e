// The hand-written GLSL GEMM peer (bench/vulkan/gemm.comp) for the benchmarks that compare
// Tessera's matrix-op GEMM on a Vulkan device against it (vulkan_bench, gemm_bench). The
// shader is compiled by glslangValidator at build time into this library; it runs through the
// same HAL driver and kernel ABI as Tessera's kernels, so a ratio measures the code alone.
// Never times anything it has not checked: glslGemmGflops verifies its result first.
#pragma once

#include "bench/bench_util.h"

#include <string>
#include <vector>

namespace tessera::bench {

/// The GLSL peer loaded on one device: C = A * B, f32, row-major (A: M x K, B: K x N).
class GlslGemm {
public:
  explicit GlslGemm(tsr_device_t device);
  ~GlslGemm();
  GlslGemm(const GlslGemm &) = delete;
  GlslGemm &operator=(const GlslGemm &) = delete;
  /// Enqueues one GEMM on `stream` (any M, N, K >= 1; C is overwritten).
  void launch(tsr_stream_t stream, tsr_buffer_t a, tsr_buffer_t b, tsr_buffer_t c, int M, int N,
              int K);

private:
  tsr_executable_t exe_ = nullptr;
  tsr_kernel_t kernel_ = nullptr;
};

/// Whether `c` = `a` * `b` within the matrix_mad precision contract (docs/ir.md; any summation
/// order: (K + 1) 2^-24 S + (K + 1) 2^-126, S = sum |a b|) at `samples` pseudo-random entries
/// (every entry when samples >= M * N), against a long double reference. On failure `*why`
/// names the first bad entry.
bool checkGemm(const std::vector<float> &a, const std::vector<float> &b,
               const std::vector<float> &c, int M, int N, int K, int samples, std::string *why);

/// Runs the GLSL GEMM on `d` with host inputs `a` (M x K) and `b` (K x N): one run checked with
/// checkGemm (dies on a wrong result), then the median of `reps` timed runs (launch + sync).
/// Returns GFLOP/s (2 M N K flops per run); `*c` (if given) gets the result.
double glslGemmGflops(Device &d, const std::vector<float> &a, const std::vector<float> &b, int M,
                      int N, int K, int reps, std::vector<float> *c = nullptr);

/// A GEMM written with matrix ops (docs/ir.md, "Matrix ops"): kernel @gemm_mx(A, B, C, M, N,
/// K), f32 row-major like the GLSL peer; each subgroup computes one tm x tn tile of C with
/// tk-deep steps, `bounds` for the edges (any M, N, K). Launch: workgroup = `subgroups` x the
/// device's subgroup size, grid (ceil(N / tn), ceil(M / (tm * subgroups))).
std::string matrixGemmKernel(int tm, int tn, int tk);

/// Runs @gemm_mx (matrixGemmKernel) on `d` like glslGemmGflops (checked first, dies when
/// wrong); `opts` are the compile options (bounds mode).
double tesseraGemmGflops(Device &d, const std::vector<float> &a, const std::vector<float> &b, int M,
                         int N, int K, int reps, int tm, int tn, int tk, int subgroups,
                         const ProgramOptions &opts, std::vector<float> *c = nullptr);

} // namespace tessera::bench
