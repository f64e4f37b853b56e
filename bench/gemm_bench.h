// Shared between gemm_bench.cpp (main, the kernel-text cases, the peer) and
// gemm_bench_lowered.cpp (the cases through lowerMatmul and the --shapes section).
#pragma once

#include "bench/bench_util.h"
#include "bench/openblas_peer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gemmbench {

struct CaseResult {
  std::string name, device, peer;
  double tessera = 0, peerGflops = 0;
};

struct Gemm {
  int M, N, K;
};

/// Epilogue of a lowered GEMM: none, + bias[col], or gelu(+ bias[col]).
enum class Epi { None, Bias, BiasGelu };

/// n uniform values in [-1, 1) from `seed`.
std::vector<float> randomMatrix(size_t n, uint32_t seed);
/// OpenBLAS, loaded once (its kernels are chosen when it is loaded).
const tessera::bench::OpenBlas &peer();
/// S = |A| x |B| by OpenBLAS (B [K, N], or [N, K] read transposed): the matrix_mad contract's
/// magnitude for comparing two results.
std::vector<float> magnitudes(const std::vector<float> &A, const std::vector<float> &B, int M,
                              int N, int K, bool bColMajor);
/// One result line on stdout.
void print(const CaseResult &r);

/// The GEMM through the graph lowering: a graph matmul (+ epilogue) handed to lowerMatmul as the
/// fusion pass would (B row-major, or with bCol a linear layer's weight [N, K] seen as its
/// transpose; batch > 1: a bmm over [batch, M, K] x [batch, K, N]), compiled and launched with
/// the plan's grid and arguments; the result lands in C. Returns the median time in ms of `reps`
/// runs (the best with bestOf) and takes ownership of the buffers.
double runLowered(tessera::bench::Device &d, Gemm g, int batch, bool bCol, Epi epi, int reps,
                  bool bestOf, tsr_buffer_t bA, tsr_buffer_t bB, tsr_buffer_t bBias,
                  std::vector<float> &C);
/// --shapes: the GEMMs of bench/torch_models.py (those whose name contains `only`), each
/// against OpenBLAS per batch entry (+ a bias pass), checked, appended and printed.
void runShapes(tessera::bench::Device &cpu, const std::string &only, int reps,
               std::vector<CaseResult> &results);

} // namespace gemmbench
