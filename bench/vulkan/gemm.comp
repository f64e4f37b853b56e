// Hand-written peer of a Tessera matrix-op GEMM for bench/vulkan_gemm.cpp: C = A * B, all f32
// row-major (A: M x K, B: K x N, C: M x N), written to Tessera's Vulkan kernel ABI (bindings =
// parameter index, scalars in push constants, workgroup size from specialization constants
// 0..2). The classic shared-memory tiled GEMM: a workgroup of WG x WG invocations (launched
// 1-D, WG*WG wide) computes a BM x BN block of C, staging BK-deep slices of A and B through
// shared memory; each invocation accumulates a TM x TN micro-tile in registers. Sizes that are
// not multiples of the block are guarded (zeros staged, stores skipped).
// The grid is 2-D: x = column blocks (ceil(N / BN)), y = row blocks (ceil(M / BM)).
#version 450
// An 8 x 8 micro-tile: on lavapipe 512^3 ran at 0.13, 0.18, 0.45 and 1.48 GFLOP/s with 1 x 1,
// 2 x 2, 4 x 4 and 8 x 8 (llvmpipe pays a lane-by-lane loop for each shared-memory load, so
// the more multiply-adds per load, the better); the peer is the best of them.
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define WG 16
#define BM (WG * TM)
#define BN (WG * TN)
#define BK 16
#define THREADS (WG * WG)

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer A_ { float a[]; };
layout(set = 0, binding = 1) readonly buffer B_ { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C_ { float c[]; };
layout(push_constant) uniform Scalars {
  layout(offset = 0) int M;
  layout(offset = 4) int N;
  layout(offset = 8) int K;
};

// k-major, so that the inner loop reads both tiles along a row of shared memory.
shared float As[BK][BM];
shared float Bs[BK][BN];

void main() {
  int lid = int(gl_LocalInvocationIndex);
  int tx = lid % WG, ty = lid / WG;
  int row0 = int(gl_WorkGroupID.y) * BM, col0 = int(gl_WorkGroupID.x) * BN;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j)
      acc[i][j] = 0.0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Consecutive invocations read consecutive addresses of A and of B.
    for (int e = lid; e < BM * BK; e += THREADS) {
      int r = e / BK, kk = e % BK, gr = row0 + r, gk = k0 + kk;
      As[kk][r] = gr < M && gk < K ? a[gr * K + gk] : 0.0;
    }
    for (int e = lid; e < BK * BN; e += THREADS) {
      int kk = e / BN, cc = e % BN, gk = k0 + kk, gc = col0 + cc;
      Bs[kk][cc] = gk < K && gc < N ? b[gk * N + gc] : 0.0;
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
      for (int i = 0; i < TM; ++i)
        av[i] = As[kk][ty * TM + i];
      for (int j = 0; j < TN; ++j)
        bv[j] = Bs[kk][tx + j * WG];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier();
  }
  for (int i = 0; i < TM; ++i) {
    int r = row0 + ty * TM + i;
    for (int j = 0; j < TN; ++j) {
      int cc = col0 + tx + j * WG;
      if (r < M && cc < N)
        c[r * N + cc] = acc[i][j];
    }
  }
}
