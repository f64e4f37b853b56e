// The helper functions the generated OpenCL C calls: f16 / bf16 rounding and bits, the
// fault record, IEEE minimumNumber / maximumNumber, the exact narrow fma, atomics OpenCL 1.2
// lacks (f32 add, 64-bit min / max) and the exact index of a matrix element.
//
// Each is emitted only when used, in this table's order (so the output is deterministic).
// Their semantics are the interpreter's (ir/interp/numerics*.cpp); they must never call a
// builtin whose accuracy OpenCL leaves open (only conversions, vload/vstore_half, fma and
// integer ops, all exact in OpenCL C 1.2).
#include "backends/opencl/codegen/oc_emitter.h"

namespace tessera::opencl::detail {

namespace {

// f16: the register is a float holding an f16 value; vstore_half_r* rounds once (core
// OpenCL 1.2: no cl_khr_fp16 needed), vload_half widens exactly.
#define TSR_F16_ROUND(mode, T)                                                                     \
  "float tsr_f16_" #mode "_" #T "(" #T " x) {\n"                                                   \
  "  ushort h;\n"                                                                                  \
  "  vstore_half_" #mode "(x, 0, (half *)&h);\n"                                                   \
  "  return vload_half(0, (const half *)&h);\n"                                                    \
  "}\n"

const std::vector<Helper> kHelpers = {
    {"tsr_f16_rte_float", "", TSR_F16_ROUND(rte, float)},
    {"tsr_f16_rtz_float", "", TSR_F16_ROUND(rtz, float)},
    {"tsr_f16_rtp_float", "", TSR_F16_ROUND(rtp, float)},
    {"tsr_f16_rtn_float", "", TSR_F16_ROUND(rtn, float)},
    {"tsr_f16_rte_double", "", TSR_F16_ROUND(rte, double)},
    {"tsr_f16_rtz_double", "", TSR_F16_ROUND(rtz, double)},
    {"tsr_f16_rtp_double", "", TSR_F16_ROUND(rtp, double)},
    {"tsr_f16_rtn_double", "", TSR_F16_ROUND(rtn, double)},
    // An f16 register is a float holding an f16 value, and a NaN keeps its bits both ways
    // (sign, quiet bit, payload at the top of the float's, as hardware widens it; docs/ir.md):
    // PoCL's vload_half / vstore_half turned f16 0x7FFE into 0x7FFF.
    {"tsr_f16_bits", "",
     "ushort tsr_f16_bits(float x) {\n"
     "  if (isnan(x)) {\n"
     "    uint u = as_uint(x), m = (u >> 13) & 0x3FFu;\n"
     "    return (ushort)(((u >> 16) & 0x8000u) | 0x7C00u | (m != 0u ? m : 0x200u));\n"
     "  }\n"
     "  ushort h;\n"
     "  vstore_half_rte(x, 0, (half *)&h);\n"
     "  return h;\n"
     "}\n"},
    {"tsr_f16_from_bits", "",
     "float tsr_f16_from_bits(ushort h) {\n"
     "  if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0u)\n"
     "    return as_float(((uint)(h & 0x8000u) << 16) | 0x7F800000u | ((uint)(h & 0x3FFu) << "
     "13));\n"
     "  return vload_half(0, (const half *)&h);\n"
     "}\n"},
    // bf16 from `f`, a float whose magnitude is the exact value truncated toward zero to f32,
    // and `sticky` (the truncation lost something): rounded once in `mode` (0 rte, 1 rtz,
    // 2 rtp, 3 rtn). NaN becomes the canonical quiet NaN 0x7FC0 with its sign (a conversion
    // promises no NaN bits; bitcasts, loads and stores do not come here).
    {"tsr_bf16", "",
     "float tsr_bf16(float f, int sticky, int mode) {\n"
     "  uint u = as_uint(f);\n"
     "  if (isnan(f))\n"
     "    return as_float((u & 0x80000000u) | 0x7FC00000u);\n"
     "  uint lo = u & 0xFFFFu, hi = u & 0xFFFF0000u;\n"
     "  if (lo == 0u && !sticky)\n"
     "    return as_float(hi);\n"
     "  int neg = (int)(u >> 31);\n"
     "  int up = mode == 0 ? (lo > 0x8000u || (lo == 0x8000u && (sticky || (hi & 0x10000u))))\n"
     "        : mode == 1 ? 0 : mode == 2 ? !neg : neg;\n"
     "  return as_float(up ? hi + 0x10000u : hi);\n"
     "}\n"},
    {"tsr_bf16_double", "tsr_bf16",
     "float tsr_bf16_double(double x, int mode) {\n"
     "  float f = convert_float_rtz(x);\n"
     "  return tsr_bf16(f, !isnan(x) && (double)f != x, mode);\n"
     "}\n"},
    {"tsr_f16_sat", "",
     "float tsr_f16_sat(float r, int srcInf) {\n"
     "  return isinf(r) && !srcInf ? copysign(65504.0f, r) : r;\n"
     "}\n"},
    {"tsr_bf16_sat", "",
     "float tsr_bf16_sat(float r, int srcInf) {\n"
     "  return isinf(r) && !srcInf ? copysign(as_float(0x7F7F0000u), r) : r;\n"
     "}\n"},
    // IEEE 754-2019 minimumNumber / maximumNumber: a NaN operand is ignored, -0 < +0. OpenCL's
    // fmin/fmax already return the other operand for one NaN; only equal operands (+0 and -0)
    // need the sign fixed, by OR-ing (min) or AND-ing (max) their bits. Branch-free: PoCL
    // vectorises loops over these (the branchy form cost row softmax 15 %: bench/opencl_bench).
    {"tsr_minnum_float", "",
     "float tsr_minnum_float(float a, float b) {\n"
     "  return a == b ? as_float(as_uint(a) | as_uint(b)) : fmin(a, b);\n"
     "}\n"},
    {"tsr_maxnum_float", "",
     "float tsr_maxnum_float(float a, float b) {\n"
     "  return a == b ? as_float(as_uint(a) & as_uint(b)) : fmax(a, b);\n"
     "}\n"},
    {"tsr_minnum_double", "",
     "double tsr_minnum_double(double a, double b) {\n"
     "  return a == b ? as_double(as_ulong(a) | as_ulong(b)) : fmin(a, b);\n"
     "}\n"},
    {"tsr_maxnum_double", "",
     "double tsr_maxnum_double(double a, double b) {\n"
     "  return a == b ? as_double(as_ulong(a) & as_ulong(b)) : fmax(a, b);\n"
     "}\n"},
    // a * b + c for f16 / bf16 operands (held in floats), as a double rounded to odd: the
    // product is exact in double, the sum's error exact by TwoSum; rounding the result once
    // more to 11 or 8 bits is then the correctly rounded fma (53 >= p + 2).
    {"tsr_fma_odd", "",
     "double tsr_fma_odd(float a, float b, float c) {\n"
     "  double ab = (double)a * (double)b;\n"
     "  double hi = ab + (double)c;\n"
     "  if (isinf(hi) || isnan(hi))\n"
     "    return hi;\n"
     "  double bv = hi - ab;\n"
     "  double lo = (ab - (hi - bv)) + ((double)c - bv);\n"
     "  if (lo != 0.0 && (as_ulong(hi) & 1ul) == 0ul)\n"
     "    hi = as_double(as_ulong(hi) + ((lo > 0.0) == (hi > 0.0) ? 1l : -1l));\n"
     "  return hi;\n"
     "}\n"},
    // The fault record (backends/kernel_faults.h) in words 1..14 of the control buffer: the
    // first faulting work-item claims it, later faults keep running with defined results.
    {"tsr_fault", "",
     "void tsr_fault(__global uint *control, uint kind, uint line, uint col, uint param,\n"
     "               long index, long count) {\n"
     "  if (atomic_cmpxchg((volatile __global uint *)&control[1], 0u, kind) != 0u)\n"
     "    return;\n"
     "  control[2] = line;\n"
     "  control[3] = col;\n"
     "  control[4] = param;\n"
     "  control[5] = (uint)index;\n"
     "  control[6] = (uint)((ulong)index >> 32);\n"
     "  control[7] = (uint)count;\n"
     "  control[8] = (uint)((ulong)count >> 32);\n"
     "  control[9] = (uint)get_local_id(0);\n"
     "  control[10] = (uint)get_local_id(1);\n"
     "  control[11] = (uint)get_local_id(2);\n"
     "  control[12] = (uint)get_group_id(0);\n"
     "  control[13] = (uint)get_group_id(1);\n"
     "  control[14] = (uint)get_group_id(2);\n"
     "}\n"},
    {"tsr_cancelled", "",
     "int tsr_cancelled(__global uint *control) {\n"
     "  return *(volatile __global uint *)&control[0] != 0u;\n"
     "}\n"},
// f32 atomic add: a compare-exchange loop on the bits (OpenCL 1.2 has no float add).
#define TSR_ATOMIC_ADD_F32(space, tag)                                                             \
  {                                                                                                \
    "tsr_atomic_add_f32_" tag, "",                                                                 \
        "float tsr_atomic_add_f32_" tag "(volatile " space " float *p, float v) {\n"               \
        "  volatile " space " uint *q = (volatile " space " uint *)p;\n"                           \
        "  uint old = *q, seen;\n"                                                                 \
        "  do {\n"                                                                                 \
        "    seen = old;\n"                                                                        \
        "    old = atomic_cmpxchg(q, seen, as_uint(as_float(seen) + v));\n"                        \
        "  } while (old != seen);\n"                                                               \
        "  return as_float(old);\n"                                                                \
        "}\n"                                                                                      \
  }
    TSR_ATOMIC_ADD_F32("__global", "g"),
    TSR_ATOMIC_ADD_F32("__local", "l"),
// 64-bit min / max: cl_khr_int64_base_atomics has no min / max, so compare-exchange.
#define TSR_ATOMIC_MINMAX_64(name, T, space, tag, cmp)                                             \
  {                                                                                                \
    "tsr_atomic_" name "_" tag, "",                                                                \
        "long tsr_atomic_" name "_" tag "(volatile " space " long *p, long v) {\n"                 \
        "  long old = *p, seen;\n"                                                                 \
        "  do {\n"                                                                                 \
        "    seen = old;\n"                                                                        \
        "    if (!((" T ")v " cmp " (" T ")seen))\n"                                               \
        "      return seen;\n"                                                                     \
        "    old = atom_cmpxchg(p, seen, v);\n"                                                    \
        "  } while (old != seen);\n"                                                               \
        "  return old;\n"                                                                          \
        "}\n"                                                                                      \
  }
    TSR_ATOMIC_MINMAX_64("smin64", "long", "__global", "g", "<"),
    TSR_ATOMIC_MINMAX_64("smax64", "long", "__global", "g", ">"),
    TSR_ATOMIC_MINMAX_64("umin64", "ulong", "__global", "g", "<"),
    TSR_ATOMIC_MINMAX_64("umax64", "ulong", "__global", "g", ">"),
    TSR_ATOMIC_MINMAX_64("smin64", "long", "__local", "l", "<"),
    TSR_ATOMIC_MINMAX_64("smax64", "long", "__local", "l", ">"),
    TSR_ATOMIC_MINMAX_64("umin64", "ulong", "__local", "l", "<"),
    TSR_ATOMIC_MINMAX_64("umax64", "ulong", "__local", "l", ">"),
    // The index off + i * ld + j of a matrix element, exactly: 0 when it overflows i64 (the
    // element is then out of range), else 1 with the index in *out.
    {"tsr_mat_index", "",
     "int tsr_mat_index(long off, long ld, long i, long j, long *out) {\n"
     "  /* off + i * ld + j exactly, as a 128-bit hi:lo (an intermediate product past\n"
     "     64 bits may come back into range); in range iff it fits in a long. */\n"
     "  ulong lo = (ulong)i * (ulong)ld;\n"
     "  long hi = mul_hi(i, ld);\n"
     "  ulong s = lo + (ulong)off;\n"
     "  hi += (off < 0 ? -1l : 0l) + (s < lo ? 1l : 0l);\n"
     "  ulong t = s + (ulong)j;\n"
     "  hi += (j < 0 ? -1l : 0l) + (t < s ? 1l : 0l);\n"
     "  if (hi != ((long)t < 0 ? -1l : 0l))\n"
     "    return 0;\n"
     "  *out = (long)t;\n"
     "  return 1;\n"
     "}\n"},
};

} // namespace

const std::vector<Helper> &helperTable() { return kHelpers; }

} // namespace tessera::opencl::detail
