// The CPU matrix runtime's entry points other than load/store/fill (matrix_access.cpp): shape
// checking, the once-per-process choice of code path (CPUID + XGETBV, TESSERA_MX_PATH), and
// tsr_mx_mad's dispatch to that path's kernels. No static constructors: the path is chosen
// by a function-local static on first use.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace tessera::cpu_mx;

namespace {

bool validDim(int d) { return d == 8 || d == 16 || d == 32 || d == 64 || d == 128; }

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

} // namespace

namespace tessera::cpu_mx {

const Kernels &kernelsFor(const char *request, std::string *warning) {
  const Kernels *avx512 = avx512Kernels(), *avx2 = avx2Kernels();
  const Kernels &detected = avx512 ? *avx512 : avx2 ? *avx2 : genericKernels();
  if (!request || !*request)
    return detected;
  if (std::strcmp(request, "generic") == 0)
    return genericKernels();
  const char *why = "unknown path";
  if (std::strcmp(request, "avx512") == 0) {
    if (avx512)
      return *avx512;
    why = "this host cannot run AVX-512";
  } else if (std::strcmp(request, "avx2") == 0) {
    if (avx2)
      return *avx2;
    why = "this host cannot run AVX2 + FMA + F16C";
  }
  if (warning)
    *warning = std::string("TESSERA_MX_PATH=") + request + ": " + why +
               "; using the detected matrix path '" + detected.name +
               "' (choices: generic, avx2, avx512)";
  return detected;
}

const Kernels &activeKernels() {
  static const Kernels &k = []() -> const Kernels & {
    std::string warning;
    const Kernels &chosen = kernelsFor(std::getenv("TESSERA_MX_PATH"), &warning);
    if (!warning.empty())
      std::fprintf(stderr, "%s\n", warning.c_str());
    return chosen;
  }();
  return k;
}

const char *bf16KernelName(Bf16Kernel k) {
  return k == Bf16Kernel::Amx ? "amx" : k == Bf16Kernel::Dot ? "vdpbf16ps" : "fma";
}

Bf16Kernel bf16KernelFor(const Kernels &k, const char *request, double (*measure)(),
                         std::string *warning) {
  auto unforced = [&] {
    if (k.madBf16Amx)
      return Bf16Kernel::Amx;
    return k.madBf16Dot && measure() < kBf16DotPaysBelow ? Bf16Kernel::Dot : Bf16Kernel::Fma;
  };
  if (!request || !*request)
    return unforced();
  const char *why = nullptr;
  if (std::strcmp(request, "fma") == 0)
    return Bf16Kernel::Fma;
  if (std::strcmp(request, "dot") == 0) {
    if (k.madBf16Dot)
      return Bf16Kernel::Dot;
    why = "this matrix path has no vdpbf16ps kernel (it needs AVX512_BF16)";
  } else if (std::strcmp(request, "amx") == 0) {
    if (k.madBf16Amx)
      return Bf16Kernel::Amx;
    why = "this matrix path has no AMX kernel (it needs AMX-BF16 and the OS's tile permission)";
  } else {
    why = "unknown choice";
  }
  Bf16Kernel chosen = unforced();
  if (warning)
    *warning = std::string("TESSERA_MX_BF16=") + request + ": " + why + "; using " +
               bf16KernelName(chosen) + " (choices: amx, dot, fma)";
  return chosen;
}

Bf16Kernel activeBf16Kernel() {
  static const Bf16Kernel kernel = [] {
    std::string warning;
    Bf16Kernel chosen =
        bf16KernelFor(activeKernels(), std::getenv("TESSERA_MX_BF16"), bf16DotCostRatio, &warning);
    if (!warning.empty())
      std::fprintf(stderr, "%s\n", warning.c_str());
    return chosen;
  }();
  return kernel;
}

} // namespace tessera::cpu_mx

extern "C" const char *tsr_mx_shape_error(const tsr_mx_shape *s) {
  if (!s)
    return "matrix shape is NULL";
  if (tsr_mx_storage_bytes(s->elem) == 0)
    return "matrix element type must be i8, i32, f16, bf16 or f32";
  if (s->use > TSR_MX_USE_ACC)
    return "matrix use must be a, b or acc";
  if (s->use != TSR_MX_USE_ACC && s->elem == TSR_MX_I32)
    return "a and b matrices cannot hold i32 (only i8, f16, bf16, f32)";
  if (!validDim(s->rows) || !validDim(s->cols))
    return "matrix rows and cols must each be 8, 16, 32, 64 or 128";
  if (int(s->rows) * s->cols > 8192)
    return "matrix rows * cols must be <= 8192";
  if (s->use == TSR_MX_USE_B && (s->elem == TSR_MX_BF16 || s->elem == TSR_MX_I8) &&
      s->rows % 2 != 0)
    return "bf16 / i8 b matrices need an even number of rows"; // never, with the sizes above
  return nullptr;
}

extern "C" void tsr_mx_mad(uint8_t in_elem, int M, int N, int K, const void *a, const void *b,
                           const void *c, void *d) {
  if (!validDim(M) || !validDim(N) || !validDim(K) || M * K > 8192 || K * N > 8192 || M * N > 8192)
    die("tsr_mx_mad: M, N, K must each be 8, 16, 32, 64 or 128 with every tile <= 8192 "
        "elements");
  const Kernels &k = activeKernels();
  switch (in_elem) {
  case TSR_MX_F32:
  case TSR_MX_F16: // f16 tiles are held as f32: the products are exact either way
    k.madF32(M, N, K, static_cast<const float *>(a), static_cast<const float *>(b),
             static_cast<const float *>(c), static_cast<float *>(d));
    return;
  case TSR_MX_BF16: {
    Bf16Kernel kind = activeBf16Kernel();
    auto mad = kind == Bf16Kernel::Amx   ? k.madBf16Amx
               : kind == Bf16Kernel::Dot ? k.madBf16Dot
                                         : k.madBf16;
    mad(M, N, K, static_cast<const uint16_t *>(a), static_cast<const uint16_t *>(b),
        static_cast<const float *>(c), static_cast<float *>(d));
    return;
  }
  case TSR_MX_I8:
    (k.madI8Amx ? k.madI8Amx : k.madI8)(M, N, K, static_cast<const int16_t *>(a),
                                        static_cast<const int16_t *>(b),
                                        static_cast<const int32_t *>(c), static_cast<int32_t *>(d));
    return;
  default:
    die("tsr_mx_mad: in_elem must be f32, f16, bf16 or i8");
  }
}

extern "C" const char *tsr_mx_path_name(void) { return activeKernels().name; }

extern "C" const char *tsr_mx_bf16_kernel(void) { return bf16KernelName(activeBf16Kernel()); }
