// The code paths of the CPU matrix runtime behind matrix_abi.h: one table of kernels per path
// (generic C++, AVX2 + FMA, AVX-512), chosen once per process in matrix_runtime.cpp. The bounds and
// fault logic of load/store lives once, in matrix_access.cpp, and calls only the table's contiguous
// row converters, so every path faults identically. Internal: the codegen sees only the ABI.
//
// Packed layouts (tile storage, see matrix_abi.h for the storage types):
//   acc: row-major R x C.
//   a (M x K): row-major, for every type: the f32 kernels broadcast a[i][k]; the bf16 / i8
//     kernels broadcast the 32-bit pair a[i][2p], a[i][2p+1].
//   b (K x N): f32 / f16: row-major K x N floats. bf16 / i8: K/2 x N x 2 pairs,
//     b[k][j] at ((k / 2) * N + j) * 2 + k % 2, the operand order of vdpbf16ps / vpdpwssd.
#ifndef TESSERA_BACKENDS_CPU_MATRIX_MATRIX_KERNELS_H_
#define TESSERA_BACKENDS_CPU_MATRIX_MATRIX_KERNELS_H_

#include "backends/cpu/matrix/matrix_abi.h"

#include <cstdint>
#include <string>

namespace tessera::cpu_mx {

struct Kernels {
  const char *name;
  // d = c + a*b on tiles in the layouts above (d may equal c).
  void (*madF32)(int M, int N, int K, const float *a, const float *b, const float *c, float *d);
  void (*madBf16)(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                  float *d);
  void (*madI8)(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                int32_t *d);
  // n contiguous elements converted between memory and storage types.
  void (*f16ToF32)(const uint16_t *src, float *dst, int n);
  void (*f32ToF16)(const float *src, uint16_t *dst, int n); // round to nearest even
  void (*i8ToI16)(const int8_t *src, int16_t *dst, int n);
  void (*i16ToI8)(const int16_t *src, int8_t *dst, int n); // truncating (values fit)
  // Whole row-major tiles whose every element is in range (the common case inside a GEMM):
  // src is element (0, 0), ld the row stride in elements. Return false for a case they do not
  // handle (the caller then takes the general path); nullptr: none.
  bool (*loadFull)(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld);
  bool (*storeFull)(const tsr_mx_shape *s, const void *tile, void *dst, int64_t ld);
  // The same for whole col-major (`.col`) tiles: src is element (0, 0), column c starts at
  // src + c * ld elements. Same contract: false -> the general path; nullptr: none.
  bool (*loadFullCol)(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld);
  // vdpbf16ps directly on the bf16 pairs (nullptr without AVX512_BF16). madBf16 widens both
  // tiles to f32 and runs the FMA kernel; which of the two tsr_mx_mad runs is measured once per
  // process (bf16DotFor): vdpbf16ps does twice the MACs of an FMA per instruction, but
  // retires at ~0.3x the FMA rate on Intel (Sapphire/Emerald Rapids) and at the FMA rate on AMD
  // Zen 4 (docs/performance.md).
  void (*madBf16Dot)(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                     float *d);
  // AMX (matrix_amx.cpp): TDPBF16PS on the tiles as they are, and TDPBSSD on i8 tiles narrowed
  // from their i16 storage; nullptr where the host lacks AMX-BF16 / AMX-INT8 or the OS refuses
  // this process the tile state. Any shape the ABI allows. tsr_mx_mad prefers them where present
  // (16 x 16 x 32 multiply-adds per instruction: ~15x the AVX-512 kernels' rate on one core).
  void (*madBf16Amx)(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                     float *d);
  void (*madI8Amx)(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                   int32_t *d);
};

const Kernels &genericKernels();
// The AVX-512 table when the host can run it (CPUID + XGETBV), else nullptr. Its bf16 / i8
// kernels fall back to the generic ones where AVX512_BF16 / AVX512_VNNI are missing.
const Kernels *avx512Kernels();
// The AVX2 table ("avx2": AVX2, FMA, F16C; for hosts without AVX-512) when the host can run it
// (CPUID + XGETBV), else nullptr. No bf16 dot kernel (madBf16Dot is nullptr).
const Kernels *avx2Kernels();
// The table for a TESSERA_MX_PATH value generic | avx2 | avx512 (NULL or "": the detected one,
// avx512 where available, else avx2, else generic). A path this host cannot run, or an unknown
// name, gives the detected table and a one-line *warning saying so.
const Kernels &kernelsFor(const char *request, std::string *warning);
// The table this process uses (kernelsFor(getenv("TESSERA_MX_PATH")), the warning printed on
// stderr), chosen on the first call.
const Kernels &activeKernels();

// AMX on this host (CPUID, XGETBV, palette 1 with 8 tiles of 16 x 64 bytes) with the tile data
// permission granted to this process (arch_prctl ARCH_REQ_XCOMP_PERM, requested here).
struct AmxSupport {
  bool bf16 = false, int8 = false;
};
AmxSupport detectAmx();
// The AMX kernels proper (call only where detectAmx() said so). amxMadBf16 treats subnormal
// inputs as zero, as TDPBF16PS does: the table's entry scans for them first (matrix_avx512.cpp).
void amxMadBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                float *d);
void amxMadI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
              int32_t *d);

// Seconds per vdpbf16ps over seconds per FMA on zmm registers, each the best of several short
// timed runs of independent chains (~0.2 ms in all). Only on a host whose AVX-512 table has
// madBf16Dot (it executes vdpbf16ps).
double bf16DotCostRatio();
// vdpbf16ps pays when it costs less than this many FMAs: it does the work of two, and saves
// the widening of both tiles; 1.5 leaves a margin for timing noise (measured: ~1.0 on Zen 4,
// ~3.5 on Emerald Rapids).
inline constexpr double kBf16DotPaysBelow = 1.5;
// The kernel tsr_mx_mad runs bf16 tiles on.
enum class Bf16Kernel { Fma, Dot, Amx };
const char *bf16KernelName(Bf16Kernel k); // "fma", "vdpbf16ps", "amx"
// The choice for table k: TESSERA_MX_BF16 = "amx" | "dot" | "fma" as `request` forces one (amx /
// dot only where k has that kernel); NULL or "" takes AMX where k has it, else decides between
// vdpbf16ps and fma by `measure()` (called only where k has the dot kernel) against
// kBf16DotPaysBelow. A request that cannot be met, or an unknown one, gives the unforced choice
// and a one-line *warning saying so.
Bf16Kernel bf16KernelFor(const Kernels &k, const char *request, double (*measure)(),
                         std::string *warning);
// The choice this process makes for activeKernels() (TESSERA_MX_BF16, the warning printed on
// stderr), made on the first call.
Bf16Kernel activeBf16Kernel();

// Scalar conversions shared by the paths (exact IEEE semantics, round to nearest even).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
uint16_t floatToBf16(float f);

} // namespace tessera::cpu_mx

#endif // TESSERA_BACKENDS_CPU_MATRIX_MATRIX_KERNELS_H_
