// The CPU driver's "extern" executable format (docs/hal.md, "Extern kernels"): kernels built
// into the driver that call a vendor library, today the f32 GEMM by cblas_sgemm of Intel MKL
// or OpenBLAS (vendor_blas.h, openblas.h; dlopen'ed on first use): "mkl.gemm.f32",
// "openblas.gemm.f32", and "blas.gemm.f32" (MKL when it loads, else OpenBLAS). They launch
// like any kernel: the HAL checks the argument kinds and buffer views, checkExternGemm (run by
// streamLaunch before enqueueing) checks that every element the GEMM touches lies inside its
// view, and the call runs on the stream's worker in order with the stream's other work.
//
// Why a built-in table and not a plugin: the arguments, the range check and the library's
// quirks (OPENBLAS_CORETYPE, MKL's threading layer) are specific to each routine, and the set
// is small. Why a grid: sequential MKL runs one row or column block (or batch entries) per
// workgroup, so the driver's own pool threads the GEMM (no second set of spinning threads).
#include "backends/cpu/runtime/entry_points.h"
#include "backends/cpu/runtime/openblas.h"
#include "backends/cpu/runtime/vendor_blas.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>

namespace tessera::cpu {
namespace {

// Parameter order of blas.gemm.f32 (docs/hal.md): C[o][b] = A[o][b] x B[o][b], for o < outer
// and b < batch, with A[o][b][m][k] at a_off + o*a_os + b*a_bs + m*a_rs + k*a_cs (elements),
// likewise B (K x N) and C (M x N). Two batch levels: heads split out of a projection
// ([B, H] over a permuted view) have no single batch stride.
enum GemmParam : uint32_t {
  kA,
  kB,
  kC,
  kAOff,
  kBOff,
  kCOff,
  kM,
  kN,
  kK,
  kBatch,
  kARs,
  kACs,
  kBRs,
  kBCs,
  kCRs,
  kCCs,
  kABs,
  kBBs,
  kCBs,
  kOuter,
  kAOs,
  kBOs,
  kCOs,
  kGemmParams,
  // gemm_bias only: C[b] = A[b] x B[b] + D[b], D (M x N, any strides, 0 where it broadcasts).
  kD = kGemmParams,
  kDOff,
  kDRs,
  kDCs,
  kDBs,
  kDOs,
  kGemmBiasParams
};
const char *const kGemmParamNames[kGemmParams] = {
    "A",    "B",     "C",    "a_off", "b_off", "c_off", "M",    "N",
    "K",    "batch", "a_rs", "a_cs",  "b_rs",  "b_cs",  "c_rs", "c_cs",
    "a_bs", "b_bs",  "c_bs", "outer", "a_os",  "b_os",  "c_os"};
const char *const kBiasParamNames[kGemmBiasParams - kGemmParams] = {"D",    "d_off", "d_rs",
                                                                    "d_cs", "d_bs",  "d_os"};

bool hostHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

const OpenBlas &openBlas() {
  // Loaded on the first extern executable, never at process start: no static constructor,
  // and processes that never ask for BLAS never load it.
  static const OpenBlas blas(hostHasAvx512(), std::getenv("TESSERA_OPENBLAS_LIBRARY")
                                                  ? std::getenv("TESSERA_OPENBLAS_LIBRARY")
                                                  : "libopenblas.so.0");
  return blas;
}

const Mkl &mkl() {
  static const Mkl m; // like openBlas(): loaded on first use
  return m;
}

// One library as the kernels see it: its cblas_sgemm and whether a launch's workgroups
// split the GEMM (sequential MKL) or workgroup 0 makes one call that threads inside
// (OpenBLAS; MKL when the caller chose its threading layer).
struct VendorGemm {
  OpenBlas::Sgemm sgemm = nullptr;
  bool splits = false;
};

const VendorGemm &mklGemm() {
  static const VendorGemm v{mkl().sgemm, mkl().sequential};
  return v;
}

const VendorGemm &openBlasGemm() {
  static const VendorGemm v{openBlas().sgemm, false};
  return v;
}

// How one row-major operand [rows x cols] reaches cblas: untransposed with leading dimension
// rs when its columns are unit-stride, transposed with leading dimension cs when its rows are.
struct BlasOperand {
  bool trans = false;
  int64_t ld = 1;
};

bool blasLayout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, BlasOperand *out) {
  // A dim of extent 1 never steps, so its stride is free; cblas wants ld >= max(1, extent).
  // An empty operand is never read.
  if (rows == 0 || cols == 0) {
    *out = {false, std::max<int64_t>(1, cols)};
    return true;
  }
  if (cols <= 1 || cs == 1) {
    if (rows <= 1 || rs >= std::max<int64_t>(1, cols)) {
      *out = {false, rows <= 1 ? std::max<int64_t>(1, cols) : rs};
      return true;
    }
  }
  if (rows <= 1 || rs == 1) {
    if (cols <= 1 || cs >= std::max<int64_t>(1, rows)) {
      *out = {true, cols <= 1 ? std::max<int64_t>(1, rows) : cs};
      return true;
    }
  }
  return false;
}

struct GemmArgs {
  int64_t off[3], M, N, K, batch, outer, rs[3], cs[3], bs[3], os[3];
};

GemmArgs readGemm(const int64_t *v) {
  GemmArgs g;
  for (int i = 0; i < 3; ++i) {
    g.off[i] = v[kAOff + i];
    g.rs[i] = v[kARs + 2 * i];
    g.cs[i] = v[kACs + 2 * i];
    g.bs[i] = v[kABs + i];
    g.os[i] = v[kAOs + i];
  }
  g.M = v[kM];
  g.N = v[kN];
  g.K = v[kK];
  g.batch = v[kBatch];
  g.outer = v[kOuter];
  return g;
}

// The cblas call of one batch entry. A column-major C (rs == 1) is computed as
// C^T = B^T x A^T, so every operand with one unit stride is accepted.
struct GemmCall {
  bool swap = false;
  BlasOperand a, b, c;
};

std::string gemmLayout(const GemmArgs &g, GemmCall *call) {
  BlasOperand c;
  if (blasLayout(g.M, g.N, g.rs[2], g.cs[2], &c) && !c.trans) {
    call->swap = false;
  } else if (blasLayout(g.N, g.M, g.cs[2], g.rs[2], &c) && !c.trans) {
    call->swap = true;
  } else {
    return "C has neither a unit column stride nor a unit row stride with a leading dimension "
           "covering a row (c_rs " +
           std::to_string(g.rs[2]) + ", c_cs " + std::to_string(g.cs[2]) + ")";
  }
  call->c = c;
  // Swapped: A' = B^T (N x K: rs b_cs, cs b_rs), B' = A^T (K x M: rs a_cs, cs a_rs).
  const bool okA = call->swap ? blasLayout(g.N, g.K, g.cs[1], g.rs[1], &call->a)
                              : blasLayout(g.M, g.K, g.rs[0], g.cs[0], &call->a);
  const bool okB = call->swap ? blasLayout(g.K, g.M, g.cs[0], g.rs[0], &call->b)
                              : blasLayout(g.K, g.N, g.rs[1], g.cs[1], &call->b);
  if (!okA || !okB)
    return std::string((call->swap ? !okB : !okA) ? "A" : "B") +
           " has no unit stride (with a leading dimension covering the other dim): a_rs " +
           std::to_string(g.rs[0]) + " a_cs " + std::to_string(g.cs[0]) + ", b_rs " +
           std::to_string(g.rs[1]) + " b_cs " + std::to_string(g.cs[1]);
  return "";
}

// The start of block r of `blocks` over `extent` rows or columns, rounded to 16 (a whole
// number of AVX-512 vectors) so that a column split keeps the library's aligned paths.
int64_t blockStart(int64_t r, int64_t blocks, int64_t extent) {
  if (r <= 0)
    return 0;
  if (r >= blocks)
    return extent;
  return std::min(extent, (r * extent / blocks + 8) / 16 * 16);
}

// gemm_bias: the piece [r0, r1) x [c0, c1) of the cblas call's C (row-major, `ld`) filled
// with D, whose (m, n) element is d[m*drs + n*dcs] (m, n: the GEMM's own dims, so swapped
// when the call computes C^T).
void fillBias(float *c, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float *d,
              int64_t drs, int64_t dcs, bool swap) {
  const int64_t rs = swap ? dcs : drs, cs = swap ? drs : dcs;
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = c0; j < c1; ++j)
      c[i * ld + j] = d[i * rs + j * cs];
}

void gemmRun(const tsr_cpu_launch_ctx *ctx, void **args, const VendorGemm &blas, bool bias) {
  // Workgroup `part` of `parts` takes a contiguous share of the (batch entry, block) items:
  // whole batch entries when there are enough of them, else row blocks of the larger of the
  // cblas call's M and N. A library that threads inside gets one call, in workgroup 0.
  const int64_t parts = blas.splits ? ctx->num_groups[0] : 1;
  const int64_t part = ctx->group_id[0];
  if (part >= parts)
    return;
  int64_t v[kGemmParams] = {};
  for (uint32_t i = kAOff; i < kGemmParams; ++i)
    std::memcpy(&v[i], args[i], sizeof(int64_t));
  const GemmArgs g = readGemm(v);
  if (g.M == 0 || g.N == 0 || g.batch == 0 || g.outer == 0)
    return;
  GemmCall call;
  gemmLayout(g, &call); // checked at launch: cannot fail here
  const float *base[2];
  std::memcpy(&base[0], args[kA], sizeof(void *));
  std::memcpy(&base[1], args[kB], sizeof(void *));
  float *c;
  std::memcpy(&c, args[kC], sizeof(void *));
  const int64_t m = call.swap ? g.N : g.M, n = call.swap ? g.M : g.N;
  const bool rows = m >= n;
  const int64_t extent = rows ? m : n;
  const int64_t entries = g.outer * g.batch; // checkExternGemm: no overflow
  const int64_t blocks = entries >= parts ? 1 : std::min(extent, (parts + entries - 1) / entries);
  const int64_t items = entries * blocks;
  const auto share = [&](int64_t p) { return int64_t(static_cast<__int128>(p) * items / parts); };
  for (int64_t it = share(part), end = share(part + 1); it < end; ++it) {
    if (ctx->cancel && *ctx->cancel)
      return; // past the deadline: runLaunch reports it
    const int64_t e = it / blocks, r = it % blocks, o = e / g.batch, b = e % g.batch;
    const int64_t lo = blockStart(r, blocks, extent), hi = blockStart(r + 1, blocks, extent);
    if (lo >= hi)
      continue;
    const float *a = base[0] + g.off[0] + o * g.os[0] + b * g.bs[0];
    const float *bm = base[1] + g.off[1] + o * g.os[1] + b * g.bs[1];
    float *cm = c + g.off[2] + o * g.os[2] + b * g.bs[2];
    const float *x = call.swap ? bm : a, *y = call.swap ? a : bm;
    if (bias) {
      // C prefilled with D, then beta = 1: the bias add costs one pass over the piece.
      int64_t d[5];
      for (int i = 0; i < 5; ++i)
        std::memcpy(&d[i], args[kDOff + i], sizeof(int64_t));
      const float *dm;
      std::memcpy(&dm, args[kD], sizeof(void *));
      fillBias(cm, call.c.ld, rows ? lo : 0, rows ? hi : m, rows ? 0 : lo, rows ? n : hi,
               dm + d[0] + o * d[4] + b * d[3], d[1], d[2], call.swap);
    }
    // x is m x K (stored K x m when transposed), y K x n (stored n x K), C m x n row-major.
    if (rows) {
      x += lo * (call.a.trans ? 1 : call.a.ld);
      cm += lo * call.c.ld;
    } else {
      y += lo * (call.b.trans ? call.b.ld : 1);
      cm += lo;
    }
    blas.sgemm(101 /*RowMajor*/, call.a.trans ? 112 : 111, call.b.trans ? 112 : 111,
               int(rows ? hi - lo : m), int(rows ? n : hi - lo), int(g.K), 1.0f, x, int(call.a.ld),
               y, int(call.b.ld), bias ? 1.0f : 0.0f, cm, int(call.c.ld));
  }
}

template <const VendorGemm &(*Lib)(), bool Bias>
void gemmKernel(const tsr_cpu_launch_ctx *ctx, void **args) {
  gemmRun(ctx, args, Lib(), Bias);
}

// The largest element offset (inclusive) one operand touches, -1 when it touches none, or
// INT64_MAX when it does not fit in i64 (all arguments are non-negative: checked first).
int64_t lastElement(int64_t off, int64_t outer, int64_t os, int64_t batch, int64_t bs, int64_t rows,
                    int64_t rs, int64_t cols, int64_t cs) {
  if (outer == 0 || batch == 0 || rows == 0 || cols == 0)
    return -1;
  int64_t last = off;
  const int64_t steps[4][2] = {{outer - 1, os}, {batch - 1, bs}, {rows - 1, rs}, {cols - 1, cs}};
  for (const auto &s : steps) {
    int64_t p;
    if (__builtin_mul_overflow(s[0], s[1], &p) || __builtin_add_overflow(last, p, &last))
      return INT64_MAX;
  }
  return last;
}

} // namespace

tsr_status_t checkExternGemm(const CpuKernel &k, const uint32_t grid[3],
                             const uint32_t workgroup[3], const tsr_drv_arg_t *args,
                             uint32_t count) {
  const char *name = k.name.c_str();
  const bool bias = k.params.size() == kGemmBiasParams;
  if (count != k.params.size())
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: %s takes %u arguments, got %u", name,
                           uint32_t(k.params.size()), count);
  if (grid[0] == 0 || grid[1] * uint64_t(grid[2]) != 1 ||
      workgroup[0] * uint64_t(workgroup[1]) * workgroup[2] != 1)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: %s launches as grid Px1x1, workgroup 1x1x1 (got grid "
                           "%ux%ux%u, workgroup %ux%ux%u)",
                           name, grid[0], grid[1], grid[2], workgroup[0], workgroup[1],
                           workgroup[2]);
  int64_t v[kGemmParams] = {};
  for (uint32_t i = kAOff; i < kGemmParams; ++i)
    v[i] = args[i].value.i64;
  for (uint32_t i = kAOff; i < kGemmParams; ++i)
    if (v[i] < 0 || (i >= kM && i <= kK && v[i] > INT_MAX))
      return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: %s argument %s = %lld is %s", name,
                             kGemmParamNames[i], (long long)v[i],
                             v[i] < 0 ? "negative" : "past 2^31 - 1 (cblas int)");
  const GemmArgs g = readGemm(v);
  int64_t entries;
  if (__builtin_mul_overflow(g.outer, g.batch, &entries))
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: %s: outer x batch (%lld x %lld) overflows 64 bits", name,
                           (long long)g.outer, (long long)g.batch);
  GemmCall call;
  std::string layout = gemmLayout(g, &call);
  if (!layout.empty())
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: %s: %s", name, layout.c_str());
  if (call.a.ld > INT_MAX || call.b.ld > INT_MAX || call.c.ld > INT_MAX)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: %s: a leading dimension is past 2^31 - 1 (cblas int)",
                           name);
  const int64_t rows[3] = {g.M, g.K, g.M}, cols[3] = {g.K, g.N, g.N};
  for (int i = 0; i < 3; ++i) {
    const int64_t last = lastElement(g.off[i], g.outer, g.os[i], g.batch, g.bs[i], rows[i], g.rs[i],
                                     cols[i], g.cs[i]);
    const uint64_t elems = args[i].value.buffer.length / sizeof(float);
    if (last >= 0 && uint64_t(last) >= elems)
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "cpu driver: %s reads or writes %s element %lld, past its view of "
                             "%llu f32 elements",
                             name, kGemmParamNames[i], (long long)last, (unsigned long long)elems);
  }
  if (bias) {
    int64_t d[5];
    for (int i = 0; i < 5; ++i) {
      d[i] = args[kDOff + i].value.i64;
      if (d[i] < 0)
        return tsr_status_make(TSR_INVALID_ARGUMENT,
                               "cpu driver: %s argument %s = %lld is "
                               "negative",
                               name, kBiasParamNames[1 + i], (long long)d[i]);
    }
    const int64_t last = lastElement(d[0], g.outer, d[4], g.batch, d[3], g.M, d[1], g.N, d[2]);
    const uint64_t elems = args[kD].value.buffer.length / sizeof(float);
    if (last >= 0 && uint64_t(last) >= elems)
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "cpu driver: %s reads D element %lld, past its view of %llu f32 "
                             "elements",
                             name, (long long)last, (unsigned long long)elems);
  }
  return nullptr;
}

tsr_status_t readExternModule(const void *data, size_t size, CpuExecutable &executable) {
  std::string text(static_cast<const char *>(data), size);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find_first_not_of(" \t\r\n,", pos);
    if (start == std::string::npos)
      break;
    size_t end = text.find_first_of(" \t\r\n,", start);
    if (end == std::string::npos)
      end = text.size();
    std::string name = text.substr(start, end - start);
    pos = end;
    // "<library>.<routine>": library blas (MKL, else OpenBLAS), mkl or openblas; routine
    // gemm.f32 or gemm_bias.f32.
    const size_t dot = name.find('.');
    const std::string lib = name.substr(0, dot);
    const std::string routine = dot == std::string::npos ? "" : name.substr(dot + 1);
    const bool bias = routine == "gemm_bias.f32";
    const bool anyLib = lib == "blas";
    const bool wantMkl = anyLib || lib == "mkl";
    if ((!wantMkl && lib != "openblas") || (!bias && routine != "gemm.f32"))
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "cpu driver: extern kernel '%s' is not built in (known: "
                             "<library>.gemm.f32 and <library>.gemm_bias.f32 for library "
                             "blas, mkl or openblas)",
                             name.c_str());
    for (const CpuKernel &k : executable.kernels)
      if (k.name == name)
        return tsr_status_make(TSR_INVALID_ARGUMENT,
                               "cpu driver: extern kernel '%s' is named twice", name.c_str());
    const bool useMkl = wantMkl && mkl();
    if (!useMkl && (!anyLib && wantMkl))
      return tsr_status_make(TSR_UNAVAILABLE,
                             "cpu driver: extern kernel %s needs MKL, which cannot be loaded: %s",
                             name.c_str(), mkl().error.c_str());
    if (!useMkl && !openBlas())
      return tsr_status_make(
          TSR_UNAVAILABLE, "cpu driver: extern kernel %s needs %s, which cannot be loaded: %s",
          name.c_str(), anyLib ? "MKL or OpenBLAS" : "OpenBLAS",
          (anyLib ? mkl().error + "; " + openBlas().error : openBlas().error).c_str());
    CpuKernel k;
    k.name = name;
    for (uint32_t p = 0; p < (bias ? kGemmBiasParams : kGemmParams); ++p) {
      k.paramNames.push_back(p < kGemmParams ? kGemmParamNames[p]
                                             : kBiasParamNames[p - kGemmParams]);
      k.params.push_back({p < kAOff || p == kD ? TSR_TYPE_BUFFER : TSR_TYPE_I64, nullptr});
    }
    k.requiredWorkgroup[0] = k.requiredWorkgroup[1] = k.requiredWorkgroup[2] = 1;
    k.fn = useMkl ? (bias ? gemmKernel<mklGemm, true> : gemmKernel<mklGemm, false>)
                  : (bias ? gemmKernel<openBlasGemm, true> : gemmKernel<openBlasGemm, false>);
    k.check = checkExternGemm;
    k.costArgs = {kM, kN, kK, kBatch, kOuter};
    // OpenBLAS, or MKL with a threading layer the caller chose, threads inside its one call;
    // sequential MKL runs on the pool's workgroups like any kernel.
    k.ownThreads = !useMkl || !mkl().sequential;
    executable.kernels.push_back(std::move(k));
  }
  if (executable.kernels.empty())
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: the extern module names no kernel (e.g. blas.gemm.f32)");
  for (CpuKernel &k : executable.kernels)
    for (size_t p = 0; p < k.params.size(); ++p)
      k.params[p].name = k.paramNames[p].c_str();
  return nullptr;
}

} // namespace tessera::cpu
