// The "extern" executable format's GEMMs (mkl.gemm.f32, openblas.gemm.f32 and blas.gemm.f32
// through the HAL) against a naive double-precision loop: untransposed and transposed
// operands, a column-major C, batches with broadcast (stride 0) operands, odd sizes, element
// and byte offsets, split over 1 to 7 workgroups; bad launches are INVALID_ARGUMENT before
// anything runs, and a missing library is UNAVAILABLE (MKL missing: OpenBLAS serves).
#include "backends/cpu/runtime/openblas.h"
#include "backends/cpu/runtime/vendor_blas.h"
#include "backends/cpu/tests/test_kernels.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace tessera::cpu::testing {
namespace {

// Where `pip install mkl` put libmkl_rt when the loader's path lacks it: the lib/ folder of
// the prefix of the python3 on PATH (what tessera/__init__.py passes the driver). Set before
// any test loads the library; a machine without MKL skips the MKL cases.
class MklDirsFromPython : public ::testing::Environment {
public:
  void SetUp() override {
    if (std::getenv("TESSERA_MKL_DIRS"))
      return;
    FILE *p = popen("python3 -c 'import sys; print(sys.prefix + \"/lib\")' 2>/dev/null", "r");
    if (!p)
      return;
    char line[4096] = {};
    if (std::fgets(line, sizeof(line), p)) {
      std::string dir = line;
      while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r'))
        dir.pop_back();
      setenv("TESSERA_MKL_DIRS", dir.c_str(), 0);
    }
    pclose(p);
  }
};
[[maybe_unused]] ::testing::Environment *const kMklDirs =
    ::testing::AddGlobalTestEnvironment(new MklDirsFromPython);

struct Layout {
  int64_t off = 0, rs = 0, cs = 0, bs = 0, os = 0; // os: the outer batch level's stride
};

// A row-major [rows x cols] operand, or its transpose's storage when `colMajor`, `batch`
// copies apart (or one shared copy when `broadcast`), after `off` unused elements.
Layout layoutOf(int64_t rows, int64_t cols, bool colMajor, int64_t batch, bool broadcast,
                int64_t off, int64_t pad) {
  Layout l;
  l.off = off;
  l.rs = colMajor ? 1 : cols + pad;
  l.cs = colMajor ? rows + pad : 1;
  l.bs = broadcast || batch == 1 ? 0 : (colMajor ? l.cs * cols : l.rs * rows);
  return l;
}

// At least one value (an empty operand still gets a buffer), uniform in [-1, 1).
std::vector<float> randomValues(std::mt19937 &rng, int64_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(n, 1)));
  for (float &x : v)
    x = dist(rng);
  return v;
}

int64_t elementsOf(const Layout &l, int64_t rows, int64_t cols, int64_t batch) {
  return l.off + (batch - 1) * l.bs + (rows - 1) * l.rs + (cols - 1) * l.cs + 1;
}

struct Case {
  int64_t M, N, K, batch;
  bool aT, bT, cT, broadcastB;
  int64_t aOff, bOff, cOff, pad;
  int64_t outer = 1;
};

class ExternGemm : public CpuTest {
protected:
  tsr_kernel_t gemm(const std::string &name = "blas.gemm.f32") {
    tsr_executable_t exe = nullptr;
    EXPECT_EQ(hal::testing::consume(
                  tsr_executable_create(device_, "extern", name.data(), name.size(), &exe)),
              "");
    tsr_kernel_t k = nullptr;
    EXPECT_EQ(hal::testing::consume(tsr_executable_kernel(exe, name.c_str(), &k)), "");
    tsr_executable_release(exe); // the kernel keeps it alive
    kernels_.push_back(k);
    return k;
  }
  void TearDown() override {
    for (tsr_kernel_t k : kernels_)
      tsr_kernel_release(k);
    CpuTest::TearDown();
  }
  std::vector<tsr_arg_t> args(tsr_buffer_t a, tsr_buffer_t b, tsr_buffer_t c, const Case &t,
                              const Layout &la, const Layout &lb, const Layout &lc,
                              uint64_t cByteOffset = 0) {
    std::vector<tsr_arg_t> v = {tsr_arg_buffer(a, 0), tsr_arg_buffer(b, 0),
                                tsr_arg_buffer(c, cByteOffset)};
    for (int64_t x : {la.off, lb.off, lc.off, t.M,   t.N,   t.K,   t.batch, la.rs, la.cs, lb.rs,
                      lb.cs,  lc.rs,  lc.cs,  la.bs, lb.bs, lc.bs, t.outer, la.os, lb.os, lc.os})
      v.push_back(tsr_arg_i64(x));
    return v;
  }
  std::vector<tsr_kernel_t> kernels_;
};

const uint32_t kOne[3] = {1, 1, 1};

TEST_F(ExternGemm, MatchesANaiveLoopOverLayoutsBatchesAndOffsets) {
  const Case cases[] = {
      {1, 1, 1, 1, false, false, false, false, 0, 0, 0, 0},
      {37, 29, 53, 1, false, false, false, false, 3, 5, 7, 0},
      {37, 29, 53, 1, true, false, false, false, 1, 0, 2, 3},
      {37, 29, 53, 1, false, true, false, false, 0, 4, 0, 1},
      {17, 65, 9, 1, true, true, true, false, 2, 2, 9, 2},
      {16, 24, 31, 3, false, true, false, true, 0, 1, 3, 0},
      {5, 7, 130, 4, true, false, true, false, 6, 0, 1, 1},
      {64, 1, 40, 2, false, false, false, false, 0, 0, 0, 0},
      {0, 5, 3, 2, false, false, false, false, 0, 0, 0, 0},
      {4, 6, 0, 2, false, false, false, false, 0, 0, 0, 0}, // K = 0: C = 0
      // Split by rows, by columns (N > M) and by batch entries, with transposes.
      {97, 41, 23, 1, true, false, false, false, 1, 2, 3, 1},
      {13, 131, 19, 1, false, true, true, false, 0, 3, 1, 2},
      {11, 35, 7, 9, false, false, false, true, 2, 0, 5, 0},
  };
  std::vector<std::string> names = {"openblas.gemm.f32", "blas.gemm.f32"};
  if (Mkl())
    names.push_back("mkl.gemm.f32");
  else
    std::printf("MKL is not installed here (%s): mkl.gemm.f32 is not tested\n",
                Mkl().error.c_str());
  std::mt19937 rng(7);
  for (const std::string &name : names)
    for (uint32_t parts : {1u, 4u, 7u})
      for (const Case &t : cases) {
        tsr_kernel_t k = gemm(name);
        ASSERT_NE(k, nullptr);
        const uint32_t grid[3] = {parts, 1, 1};
        SCOPED_TRACE(::testing::Message()
                     << name << " grid " << parts << " M " << t.M << " N " << t.N << " K " << t.K
                     << " batch " << t.batch << " aT " << t.aT << " bT " << t.bT << " cT " << t.cT);
        Layout la = layoutOf(t.M, t.K, t.aT, t.batch, false, t.aOff, t.pad);
        Layout lb = layoutOf(t.K, t.N, t.bT, t.batch, t.broadcastB, t.bOff, t.pad);
        Layout lc = layoutOf(t.M, t.N, t.cT, t.batch, false, t.cOff, t.pad);
        auto fill = [&](int64_t n) { return randomValues(rng, n); };
        std::vector<float> a = fill(elementsOf(la, t.M, t.K, t.batch));
        std::vector<float> b = fill(elementsOf(lb, t.K, t.N, t.batch));
        std::vector<float> c(size_t(std::max<int64_t>(elementsOf(lc, t.M, t.N, t.batch), 1)),
                             99.0f);
        tsr_buffer_t ba = allocate(a.size() * 4), bb = allocate(b.size() * 4),
                     bc = allocate(c.size() * 4);
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, a.data(), ba, 0, a.size() * 4));
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, b.data(), bb, 0, b.size() * 4));
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, c.data(), bc, 0, c.size() * 4));
        std::vector<tsr_arg_t> v = args(ba, bb, bc, t, la, lb, lc);
        TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, kOne, v.data(), uint32_t(v.size())));
        std::vector<float> got(c.size());
        TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, bc, 0, got.data(), got.size() * 4));
        TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
        std::vector<bool> written(c.size(), false);
        for (int64_t n = 0; n < t.batch; ++n)
          for (int64_t i = 0; i < t.M; ++i)
            for (int64_t j = 0; j < t.N; ++j) {
              double ref = 0, mag = 0;
              for (int64_t p = 0; p < t.K; ++p) {
                double x = a[size_t(la.off + n * la.bs + i * la.rs + p * la.cs)];
                double y = b[size_t(lb.off + n * lb.bs + p * lb.rs + j * lb.cs)];
                ref += x * y;
                mag += std::fabs(x * y);
              }
              const size_t at = size_t(lc.off + n * lc.bs + i * lc.rs + j * lc.cs);
              written[at] = true;
              // f32 accumulation of K products: |error| <= K * 2^-24 * sum |a||b| (rounding of
              // each product and sum), doubled for the blocked order's slack.
              ASSERT_NEAR(got[at], ref, 2.0 * double(t.K) * std::ldexp(mag, -24) + 1e-30)
                  << "C[" << n << "][" << i << "][" << j << "]";
            }
        for (size_t e = 0; e < c.size(); ++e)
          if (!written[e])
            ASSERT_EQ(got[e], 99.0f) << "element " << e << " outside C was written";
      }
}

// gemm_bias: C = A x B + D with D broadcast over rows (a bias), over batches (stride 0), or a
// full strided matrix; transposed operands and a column-major C (the swapped call) included.
TEST_F(ExternGemm, GemmBiasAddsDBroadcastOrFull) {
  struct BiasCase {
    int64_t M, N, K, batch;
    bool aT, bT, cT;
    int64_t drs, dcs, dbs; // in elements of D; 0 broadcasts
  };
  const BiasCase cases[] = {
      {37, 29, 53, 1, false, true, false, 0, 1, 0},    // a bias row
      {61, 17, 31, 3, true, false, false, 0, 1, 0},    // the same bias for every batch entry
      {13, 71, 7, 2, false, false, true, 0, 1, 0},     // column-major C: the swapped call
      {23, 19, 11, 2, false, true, false, 1, 23, 437}, // a full column-major D per entry
      {5, 4, 0, 1, false, false, false, 0, 1, 0},      // K = 0: C = D
  };
  std::vector<std::string> names = {"openblas.gemm_bias.f32"};
  if (Mkl())
    names.push_back("mkl.gemm_bias.f32");
  std::mt19937 rng(11);
  for (const std::string &name : names)
    for (uint32_t parts : {1u, 3u})
      for (const BiasCase &t : cases) {
        SCOPED_TRACE(::testing::Message() << name << " grid " << parts << " M " << t.M << " N "
                                          << t.N << " batch " << t.batch << " d_rs " << t.drs);
        tsr_kernel_t k = gemm(name);
        ASSERT_NE(k, nullptr);
        Case c = {t.M, t.N, t.K, t.batch, t.aT, t.bT, t.cT, false, 0, 0, 0, 0};
        Layout la = layoutOf(t.M, t.K, t.aT, t.batch, false, 0, 0);
        Layout lb = layoutOf(t.K, t.N, t.bT, t.batch, false, 0, 0);
        Layout lc = layoutOf(t.M, t.N, t.cT, t.batch, false, 0, 0);
        const int64_t dElems = (t.batch - 1) * t.dbs + (t.M - 1) * t.drs + (t.N - 1) * t.dcs + 1;
        auto fill = [&](int64_t n) { return randomValues(rng, n); };
        std::vector<float> a = fill(elementsOf(la, t.M, t.K, t.batch));
        std::vector<float> b = fill(elementsOf(lb, t.K, t.N, t.batch));
        std::vector<float> d = fill(dElems);
        std::vector<float> out(size_t(elementsOf(lc, t.M, t.N, t.batch)), 99.0f);
        tsr_buffer_t ba = allocate(a.size() * 4), bb = allocate(b.size() * 4),
                     bc = allocate(out.size() * 4), bd = allocate(d.size() * 4);
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, a.data(), ba, 0, a.size() * 4));
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, b.data(), bb, 0, b.size() * 4));
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, d.data(), bd, 0, d.size() * 4));
        TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, out.data(), bc, 0, out.size() * 4));
        std::vector<tsr_arg_t> v = args(ba, bb, bc, c, la, lb, lc);
        v.push_back(tsr_arg_buffer(bd, 0));
        for (int64_t x : {int64_t(0), t.drs, t.dcs, t.dbs, int64_t(0)})
          v.push_back(tsr_arg_i64(x));
        const uint32_t grid[3] = {parts, 1, 1};
        TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, kOne, v.data(), uint32_t(v.size())));
        std::vector<float> got(out.size());
        TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, bc, 0, got.data(), got.size() * 4));
        TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
        for (int64_t n = 0; n < t.batch; ++n)
          for (int64_t i = 0; i < t.M; ++i)
            for (int64_t j = 0; j < t.N; ++j) {
              double ref = d[size_t(n * t.dbs + i * t.drs + j * t.dcs)], mag = std::fabs(ref);
              for (int64_t p = 0; p < t.K; ++p) {
                double x = a[size_t(la.off + n * la.bs + i * la.rs + p * la.cs)];
                double y = b[size_t(lb.off + n * lb.bs + p * lb.rs + j * lb.cs)];
                ref += x * y;
                mag += std::fabs(x * y);
              }
              ASSERT_NEAR(got[size_t(n * lc.bs + i * lc.rs + j * lc.cs)], ref,
                          2.0 * double(t.K + 1) * std::ldexp(mag, -24) + 1e-30)
                  << "C[" << n << "][" << i << "][" << j << "]";
            }
      }
  // D's last element past its view: refused before running.
  tsr_kernel_t k = gemm("blas.gemm_bias.f32");
  Case c = {8, 8, 8, 1, false, false, false, false, 0, 0, 0, 0};
  Layout l = layoutOf(8, 8, false, 1, false, 0, 0);
  tsr_buffer_t x = allocate(64 * 4), bias = allocate(7 * 4);
  std::vector<tsr_arg_t> v = args(x, x, allocate(64 * 4), c, l, l, l);
  v.push_back(tsr_arg_buffer(bias, 0));
  for (int64_t e : {int64_t(0), int64_t(0), int64_t(1), int64_t(0), int64_t(0)})
    v.push_back(tsr_arg_i64(e));
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "reads D element 7, past its view of 7");
  v.resize(v.size() - 6);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "takes 29 arguments, got arg_count 23");
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
}

TEST_F(ExternGemm, BadLaunchesAreInvalidArgumentBeforeRunning) {
  tsr_kernel_t k = gemm();
  ASSERT_NE(k, nullptr);
  Case t = {8, 8, 8, 1, false, false, false, false, 0, 0, 0, 0};
  Layout l = layoutOf(8, 8, false, 1, false, 0, 0);
  tsr_buffer_t a = allocate(64 * 4), b = allocate(64 * 4), c = allocate(64 * 4);
  std::vector<tsr_arg_t> v = args(a, b, c, t, l, l, l);
  TSR_EXPECT_OK(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())));
  // C's view starts 4 bytes in: its last element is past the view.
  v = args(a, b, c, t, l, l, l, 16);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "reads or writes C element 63, past its view of 60");
  Layout off = l;
  off.off = 1;
  v = args(a, b, c, t, off, l, l);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "A element 64");
  Layout strided = {0, 2, 2, 0}; // no unit stride
  v = args(a, b, c, t, strided, l, l);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "A has no unit stride");
  Case neg = t;
  neg.K = -1;
  v = args(a, b, c, neg, l, l, l);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "K = -1 is negative");
  v = args(a, b, c, t, l, l, l);
  const uint32_t two[3] = {2, 1, 1}, twoByTwo[3] = {2, 2, 1};
  TSR_EXPECT_OK(tsr_stream_launch(stream_, k, two, kOne, v.data(), uint32_t(v.size())));
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, twoByTwo, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "launches as grid Px1x1");
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, two, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "");
  v.pop_back();
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "");
  // The outer level: a stride reaching past the view, and counts whose product overflows.
  Case twice = t;
  twice.outer = 2;
  Layout outerStep = l;
  outerStep.os = 1;
  v = args(a, b, c, twice, l, l, outerStep);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "C element 64, past its view of 64");
  Case huge = t;
  huge.batch = huge.outer = int64_t(1) << 32;
  v = args(a, b, c, huge, l, l, l);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "outer x batch (4294967296 x 4294967296) overflows");
  Case far = t;
  far.outer = int64_t(1) << 40;
  Layout farStep = l;
  farStep.os = int64_t(1) << 40;
  v = args(a, b, c, far, farStep, l, l);
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, kOne, kOne, v.data(), uint32_t(v.size())),
                   TSR_INVALID_ARGUMENT, "A element 9223372036854775807, past its view");
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
}

// Two batch levels: attention heads read in place from a [B, S, 3 * H * D] projection, as the
// graph runtime launches a GEMM over batch dims [B, H] of a permuted view (graph/rewrite.h):
// Q[o][b] (S x D) at o*S*3HD + b*D + s*3HD + d, K^T[o][b] (D x S) from the K third, C
// contiguous [B, H, S, S], plus gemm_bias with a D that steps per outer entry only.
TEST_F(ExternGemm, TwoBatchLevelsReadHeadsInPlace) {
  const int64_t B = 3, S = 13, H = 4, D = 7, row = 3 * H * D;
  std::vector<std::string> names = {"openblas.gemm.f32", "openblas.gemm_bias.f32"};
  if (Mkl()) {
    names.push_back("mkl.gemm.f32");
    names.push_back("mkl.gemm_bias.f32");
  }
  std::mt19937 rng(5);
  std::vector<float> x = randomValues(rng, B * S * row), bias = randomValues(rng, B * S);
  for (const std::string &name : names)
    for (uint32_t parts : {1u, 5u, 16u}) {
      SCOPED_TRACE(::testing::Message() << name << " grid " << parts);
      const bool withBias = name.find("bias") != std::string::npos;
      tsr_kernel_t k = gemm(name);
      ASSERT_NE(k, nullptr);
      Case t = {S, S, D, H, false, false, false, false, 0, 0, 0, 0, B};
      Layout q = {0, row, 1, D, S * row};
      Layout kt = {H * D, 1, row, D, S * row}; // K^T: rows are d (unit), columns are s
      Layout lc = {0, S, 1, S * S, H * S * S};
      std::vector<float> out(size_t(B * H * S * S), 99.0f);
      tsr_buffer_t bx = allocate(x.size() * 4), bc = allocate(out.size() * 4),
                   bd = allocate(bias.size() * 4);
      TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, x.data(), bx, 0, x.size() * 4));
      TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, out.data(), bc, 0, out.size() * 4));
      TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, bias.data(), bd, 0, bias.size() * 4));
      std::vector<tsr_arg_t> v = args(bx, bx, bc, t, q, kt, lc);
      if (withBias) { // D[o][b][m][n] = bias[o * S + n]: one row per batch, shared by heads
        v.push_back(tsr_arg_buffer(bd, 0));
        for (int64_t e : {int64_t(0), int64_t(0), int64_t(1), int64_t(0), S})
          v.push_back(tsr_arg_i64(e));
      }
      const uint32_t grid[3] = {parts, 1, 1};
      TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, kOne, v.data(), uint32_t(v.size())));
      std::vector<float> got(out.size());
      TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, bc, 0, got.data(), got.size() * 4));
      TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
      for (int64_t o = 0; o < B; ++o)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < S; ++i)
            for (int64_t j = 0; j < S; ++j) {
              double ref = withBias ? bias[size_t(o * S + j)] : 0.0, mag = std::fabs(ref);
              for (int64_t d = 0; d < D; ++d) {
                double qv = x[size_t(o * S * row + i * row + h * D + d)];
                double kv = x[size_t(o * S * row + j * row + H * D + h * D + d)];
                ref += qv * kv;
                mag += std::fabs(qv * kv);
              }
              ASSERT_NEAR(got[size_t(((o * H + h) * S + i) * S + j)], ref,
                          2.0 * double(D + 1) * std::ldexp(mag, -24) + 1e-30)
                  << "C[" << o << "][" << h << "][" << i << "][" << j << "]";
            }
    }
}

TEST_F(ExternGemm, UnknownNamesAreRefused) {
  tsr_executable_t exe = nullptr;
  const char names[] = "blas.gemm.f32, mkl.gemm.f64";
  TSR_EXPECT_ERROR(tsr_executable_create(device_, "extern", names, sizeof(names) - 1, &exe),
                   TSR_INVALID_ARGUMENT, "extern kernel 'mkl.gemm.f64' is not built in");
  TSR_EXPECT_ERROR(tsr_executable_create(device_, "extern", " ", 1, &exe), TSR_INVALID_ARGUMENT,
                   "names no kernel");
}

TEST(OpenBlasLoader, AMissingLibrarySaysWhy) {
  OpenBlas missing(false, "libtessera-no-such-blas.so");
  EXPECT_FALSE(missing);
  EXPECT_NE(missing.error.find("libtessera-no-such-blas.so"), std::string::npos) << missing.error;
}

TEST(MklLoader, AMissingLibrarySaysWhy) {
  setenv("TESSERA_MKL_LIBRARY", "libtessera-no-such-mkl.so", 1);
  Mkl missing;
  unsetenv("TESSERA_MKL_LIBRARY");
  EXPECT_FALSE(missing);
  EXPECT_NE(missing.error.find("libtessera-no-such-mkl.so"), std::string::npos) << missing.error;
}

// The driver loads each library once per process, so the missing-library paths run in a
// fresh process (the threadsafe death-test style re-executes this binary). Exit codes: 0 as
// expected, else which check failed.
int createStatus(tsr_device_t device, const char *name, tsr_status_code_t code,
                 const char *needle) {
  tsr_executable_t exe = nullptr;
  tsr_status_t st = tsr_executable_create(device, "extern", name, std::strlen(name), &exe);
  const bool ok = tsr_status_code(st) == code &&
                  (!st || std::string(tsr_status_message(st)).find(needle) != std::string::npos);
  if (!ok)
    std::fprintf(stderr, "%s: %s\n", name, st ? tsr_status_message(st) : "ok");
  tsr_status_free(st);
  if (exe)
    tsr_executable_release(exe);
  return ok ? 0 : 1;
}

TEST_F(ExternGemm, AMissingMklFallsBackToOpenBlas) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TESSERA_MKL_LIBRARY", "libtessera-no-such-mkl.so", 1);
        int bad = createStatus(device_, "mkl.gemm.f32", TSR_UNAVAILABLE,
                               "needs MKL, which cannot be loaded: libtessera-no-such-mkl.so");
        bad |= createStatus(device_, "blas.gemm.f32", TSR_OK, "") << 1;
        bad |= createStatus(device_, "openblas.gemm.f32", TSR_OK, "") << 2;
        std::_Exit(bad);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ExternGemm, AMissingLibraryIsUnavailable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TESSERA_MKL_LIBRARY", "libtessera-no-such-mkl.so", 1);
        setenv("TESSERA_OPENBLAS_LIBRARY", "libtessera-no-such-blas.so", 1);
        int bad = createStatus(device_, "blas.gemm.f32", TSR_UNAVAILABLE,
                               "needs MKL or OpenBLAS, which cannot be loaded: "
                               "libtessera-no-such-mkl.so");
        bad |= createStatus(device_, "openblas.gemm.f32", TSR_UNAVAILABLE,
                            "needs OpenBLAS, which cannot be loaded: libtessera-no-such-blas")
               << 1;
        std::_Exit(bad);
      },
      ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace tessera::cpu::testing
