// OpenBLAS loaded with dlopen (libopenblas.so.0 from Debian's libopenblas-dev), shared by the
// CPU driver's "extern" executables (extern_kernels.cpp) and the benchmarks
// (bench/openblas_peer.h), so that its kernel choice can be set before the library's
// constructor runs.
//
// Why not link it: Debian's OpenBLAS 0.3.21 does not know Sapphire/Emerald Rapids and falls
// back to its Prescott (SSE) kernels, 17 GFLOP/s on one core here instead of about 105 with
// the SkylakeX (AVX-512) kernels. OPENBLAS_CORETYPE is read when the library is loaded, so a
// linked library would already have chosen. On an AVX-512 host the SkylakeX kernels are named
// unless the caller set OPENBLAS_CORETYPE. Header-only: the bench links no driver internals.
#pragma once

#include <cstdlib>
#include <dlfcn.h>
#include <string>

namespace tessera::cpu {

struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
  Sgemm sgemm = nullptr; // cblas_sgemm; null when the library is missing
  void (*setThreads)(int) = nullptr;
  int (*getThreads)() = nullptr;
  const char *(*coreName)() = nullptr;
  std::string error; // why sgemm is null (dlerror's text)

  /// `avx512`: whether the host runs AVX-512 (then the SkylakeX kernels are requested).
  /// `library`: the soname to open (tests name a missing one to see the failure path).
  explicit OpenBlas(bool avx512, const char *library = "libopenblas.so.0") {
    if (avx512)
      setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      error = e ? e : std::string("dlopen(") + library + ") failed";
      return;
    }
    sgemm = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
    setThreads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    getThreads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
    coreName = reinterpret_cast<const char *(*)()>(dlsym(h, "openblas_get_corename"));
    if (!sgemm || !setThreads || !getThreads || !coreName) {
      sgemm = nullptr;
      error = std::string(library) + " lacks cblas_sgemm or the openblas_* thread functions";
    }
  }
  explicit operator bool() const { return sgemm != nullptr; }

  /// Row-major C[M x N] = A[M x K] x B, B being K x N (or N x K read transposed).
  void run(int M, int N, int K, const float *a, int lda, const float *b, int ldb, bool bTrans,
           float *c, int ldc) const {
    sgemm(101 /*RowMajor*/, 111 /*NoTrans*/, bTrans ? 112 /*Trans*/ : 111, M, N, K, 1.0f, a, lda, b,
          ldb, 0.0f, c, ldc);
  }
};

} // namespace tessera::cpu
