// Standalone near-exhaustive check of the erf f32 expansion (../math_f32.cpp), mirroring its
// operations (fused and unfused multiply-adds) against erfl over every positive f32 in
// [2^-20, 8] and every 7th below; not part of the build. COEFFS names a header with kB, kT,
// kP, kQ, kE as erf_fit.py prints them:
//   clang++-19 -O2 -std=c++20 -DCOEFFS='"coeffs.h"' erf_check.cpp -o erf_check -lpthread
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include COEFFS
static float bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
template <bool Fused> static float mad(float a, float b, float c) {
  if constexpr (Fused) return std::fmaf(a, b, c);
  else { volatile float p = a * b; return p + c; }
}
template <bool Fused> float myerf(float x) {
  float a = std::fabs(x), s = x * x;
  float p = kP[5];
  for (int i = 4; i >= 0; --i) p = mad<Fused>(p, s, kP[i]);
  float r1 = x * p;
  float t = std::fmin(a, kT);
  float u = t - kB;
  float q = kQ[6];
  for (int i = 5; i >= 0; --i) q = mad<Fused>(q, u, kQ[i]);
  float k = std::nearbyintf(q);
  float f = q - k;
  float e = kE[5];
  for (int i = 4; i >= 0; --i) e = mad<Fused>(e, f, kE[i]);
  uint32_t sb = uint32_t(int32_t(k) + 127) << 23;
  e = e * bits(sb);
  float r2 = std::copysign(1.0f - e, x);
  return !(a >= kB) ? r1 : r2;
}
static double ulp(double got, long double want) {
  if (std::isnan(got) || std::isnan((double)want)) return std::isnan(got) && std::isnan((double)want) ? 0 : 1e9;
  long double w = want; int e = w == 0 ? -126 : std::max(std::ilogb(w), -126);
  return (double)(std::fabs((long double)got - w) / std::ldexp(1.0L, e - 23));
}
template <bool Fused> void run(uint32_t lo, uint32_t hi, uint32_t step, double &worst, float &at) {
  for (uint64_t u = lo; u < hi; u += step) {
    float x = bits(uint32_t(u));
    double e = ulp(myerf<Fused>(x), std::erf((long double)x));
    if (e > worst) worst = e, at = x;
  }
}
template <bool Fused> void all(const char *name) {
  // positive f32 in [2^-20, 8] every pattern; below that every 7th; the function is odd.
  uint32_t lo = 0x35800000u, hi = 0x41000000u; // 2^-20 .. 8
  const int nt = 2;
  double w[nt + 1] = {}; float at[nt + 1] = {};
  std::vector<std::thread> th;
  uint32_t chunk = (hi - lo) / nt;
  for (int i = 0; i < nt; ++i)
    th.emplace_back([&, i] { run<Fused>(lo + i * chunk, i == nt - 1 ? hi : lo + (i + 1) * chunk, 1, w[i], at[i]); });
  for (auto &t : th) t.join();
  run<Fused>(0, lo, 7, w[nt], at[nt]);
  double worst = 0; float wx = 0;
  for (int i = 0; i <= nt; ++i) if (w[i] > worst) worst = w[i], wx = at[i];
  std::printf("%s: max %.3f ulp at x = %a (%.9g)\n", name, worst, wx, wx);
  float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e30f, -1e30f, 3.9f, 3.95f, 4.0f, 0.921875f, -0.921875f};
  for (float v : sp) { float g = myerf<Fused>(v); std::printf("  erf(%g) = %a sign %d err %.3f\n", v, g, std::signbit(g), ulp(g, std::erf((long double)v))); }
  // oddness
  for (uint32_t u = 0; u < 0x7f800000u; u += 9973) { float v = bits(u); float a = myerf<Fused>(v), b = myerf<Fused>(-v); if (a != -b) { std::printf("not odd at %a\n", v); break; } }
}
int main() { all<true>("fused"); all<false>("unfused"); }
