/* The CPU matrix runtime ABI (issue #13, docs/ir.md "Matrix ops", spec section 6 "CPU").
 *
 * JIT-compiled kernels call these C functions to execute the IR's subgroup-scope matrix ops
 * (matrix_load / matrix_store / matrix_fill / matrix_mad); the library picks its code path
 * (generic C++, AVX2, AVX-512) once per process by CPUID. A matrix value is one 64-byte-aligned
 * block of tsr_mx_tile_bytes() bytes per subgroup:
 *   - `acc` tiles are plain row-major R x C arrays of the storage type (the codegen reads and
 *     writes them directly for matrix_map and matrix_fill): f32 -> float, i32 -> int32_t,
 *     f16 -> float (held as f32), bf16 -> uint16_t (bf16 bits), i8 -> int16_t;
 *   - `a` and `b` tiles use a private packed layout only this library reads and writes.
 * Every function is thread-safe and reentrant (no state but the path, chosen once); they use
 * at most 64 KiB of stack (tsr_mx_mad on bf16: two f32 scratch tiles; load/store: 32 KiB).
 * Plain C (C99 and C++), no LLVM, no HAL, no IR headers: the element codes below equal
 * ir::Scalar's values and the use codes ir::MatrixUse's (checked by matrix_runtime_test).
 * Never change a declaration here: codegen emits calls against it.
 */
#ifndef TESSERA_BACKENDS_CPU_MATRIX_MATRIX_ABI_H_
#define TESSERA_BACKENDS_CPU_MATRIX_MATRIX_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define TSR_MX_INLINE constexpr inline
#else
#define TSR_MX_INLINE static inline
#endif

/* Element codes (= ir::Scalar) and use codes (= ir::MatrixUse). */
enum { TSR_MX_I8 = 1, TSR_MX_I32 = 3, TSR_MX_F16 = 5, TSR_MX_BF16 = 6, TSR_MX_F32 = 7 };
enum { TSR_MX_USE_A = 0, TSR_MX_USE_B = 1, TSR_MX_USE_ACC = 2 };

/* One matrix type plus the op's addressing facts. elem: TSR_MX_*, use: TSR_MX_USE_*,
 * col_major: the op's `.col` modifier, checked: the kernel's bounds mode is checked (the
 * runtime behaves the same either way: it always returns the first fault). */
typedef struct {
  uint8_t elem, use, col_major, checked;
  uint16_t rows, cols;
} tsr_mx_shape;

/* Bytes one element takes in a tile: f16 is held as f32 and i8 as i16 (the AVX-512 kernels
 * multiply i16 pairs with vpdpwssd); 0 for an element type matrices cannot have. */
TSR_MX_INLINE int64_t tsr_mx_storage_bytes(uint8_t elem) {
  return elem == TSR_MX_F32 || elem == TSR_MX_I32 || elem == TSR_MX_F16 ? 4
         : elem == TSR_MX_BF16 || elem == TSR_MX_I8                     ? 2
                                                                        : 0;
}

/* Bytes of one tile (the per-subgroup storage block; allocate it 64-byte aligned). The same for
 * every use: the packed a/b layouts need no padding for the shapes the IR allows. */
TSR_MX_INLINE int64_t tsr_mx_tile_bytes(uint8_t elem, int rows, int cols, uint8_t use) {
  return (void)use, ((int64_t)rows * cols * tsr_mx_storage_bytes(elem) + 63) / 64 * 64;
}

/* NULL when the library accepts `s` (elem valid for its use, rows and cols in {8, 16, 32, 64,
 * 128}, rows * cols <= 8192), else a static message naming what is wrong. The ops below take a
 * valid shape as a precondition (the IR verifier guarantees it) and abort with this message
 * otherwise. */
const char *tsr_mx_shape_error(const tsr_mx_shape *s);

/* Load / store one tile. base: element 0 of the buffer view or shared array (element type =
 * s->elem); count: its number of elements (unchecked mode may pass INT64_MAX). Element (r, c),
 * r < min(rows, brows), c < min(cols, bcols), is at index off + r*ld + c (row-major) or
 * off + c*ld + r (col_major), computed exactly; an index < 0 or >= count (an index that would
 * overflow int64 included) is out of range: a load reads 0 for it, a store drops it. Elements
 * outside the bounds are not accessed (a load gives 0, a store leaves memory alone).
 * Returns -1 when no accessed element was out of range; otherwise the smallest linear index
 * r*cols + c of an out-of-range element, and *bad_index (if not NULL) gets its buffer index
 * (saturated to INT64_MIN / INT64_MAX when it overflows int64). *bad_index is 0 when none. */
int64_t tsr_mx_load(const tsr_mx_shape *s, void *tile, const void *base, int64_t count, int64_t off,
                    int64_t ld, int64_t brows, int64_t bcols, int64_t *bad_index);
int64_t tsr_mx_store(const tsr_mx_shape *s, const void *tile, void *base, int64_t count,
                     int64_t off, int64_t ld, int64_t brows, int64_t bcols, int64_t *bad_index);

/* Every element = v, for any use (a/b packed tiles too). v is a value of the element type
 * (converted as the IR's convert op would: f16/bf16 round to nearest even, i8/i32 exact). */
void tsr_mx_fill(const tsr_mx_shape *s, void *tile, double v);

/* d = c + a*b with a: M x K (use a), b: K x N (use b), c, d: M x N acc tiles; d may equal c
 * (in place), a and b never alias d. in_elem: TSR_MX_F32 / F16 / BF16 with f32 c, d, or
 * TSR_MX_I8 with i32 c, d (signed, wrapping). M, N, K in {8, 16, 32, 64, 128}, M*K, K*N,
 * M*N <= 8192. Float results meet docs/ir.md's matrix_mad bound (any summation order, FMA,
 * subnormal products may flush). */
void tsr_mx_mad(uint8_t in_elem, int M, int N, int K, const void *a, const void *b, const void *c,
                void *d);

/* The code path this process uses: "generic", "avx2" (AVX2 + FMA + F16C, hosts without
 * AVX-512), "avx512" (AVX-512F/BW/VL: f32/f16 kernels), "avx512-vnni" (also vpdpwssd for i8) or
 * "avx512-bf16" (also AVX512_BF16 and VNNI). Chosen once, by CPUID and XGETBV; the environment
 * variable TESSERA_MX_PATH=generic|avx2|avx512 overrides it (tests), a path the host cannot run
 * is refused with a message on stderr and the detected path used. */
const char *tsr_mx_path_name(void);

/* How this process multiplies bf16 tiles: "vdpbf16ps" (AVX512_BF16's pair dot product, where it
 * was measured to pay: it costs under 1.5 FMAs on this host) or "fma" (both tiles widened to
 * f32, then the f32 FMA kernel). Measured once (~0.2 ms, on first use); the environment
 * variable TESSERA_MX_BF16=dot|fma overrides it. Both meet the same bound. */
const char *tsr_mx_bf16_kernel(void);

#undef TSR_MX_INLINE
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_CPU_MATRIX_MATRIX_ABI_H_ */
