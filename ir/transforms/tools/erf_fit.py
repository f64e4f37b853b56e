# Fits the coefficients of the erf f32 expansion (../math_f32.cpp): weighted least squares in
# float64 on Chebyshev nodes, printed rounded to f32 (hex). Usage:
#   python3 erf_fit.py BREAK DEG_P DEG_Q SAT DEG_E   (math_f32.cpp: 0.921875 5 6 4.0 5)
# Prints each fit's max error before rounding; the rounded f32 code is verified separately.
import numpy as np, math, sys
# Region 1: erf(x)/x = P(s), s = x^2 in [0, B^2]; relative-error weighted LSQ on Chebyshev nodes.
B = float(sys.argv[1]) if len(sys.argv) > 1 else 0.921875
d1 = int(sys.argv[2]) if len(sys.argv) > 2 else 6
d2 = int(sys.argv[3]) if len(sys.argv) > 3 else 10
T = float(sys.argv[4]) if len(sys.argv) > 4 else 3.92
def cheb(a, b, n):
    k = np.arange(n); return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))
s = cheb(0, B * B, 2000); x = np.sqrt(s)
f = np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in x])
A = np.vander(s, d1 + 1, increasing=True) / f[:, None]
c1 = np.linalg.lstsq(A, np.ones_like(s), rcond=None)[0]
print("P err", np.max(np.abs(np.vander(s, d1+1, increasing=True) @ c1 / f - 1)))
# Region 2: log2(erfc(t)) = Q(t) on [B, T]; weight erfc(t) (absolute error of 1 - 2^Q).
t = cheb(B, T, 4000)
g = np.array([math.log2(math.erfc(v)) for v in t]); w = np.array([math.erfc(v) for v in t])
u = (t - B)  # fit in shifted variable for conditioning
A = np.vander(u, d2 + 1, increasing=True) * w[:, None]
c2 = np.linalg.lstsq(A, g * w, rcond=None)[0]
print("Q err (abs in result)", np.max(np.abs((np.vander(u, d2+1, increasing=True) @ c2 - g) * w * math.log(2))))
# 2^f for f in [-0.5, 0.5], relative error
DE = int(sys.argv[5]) if len(sys.argv) > 5 else 6
fr = cheb(-0.5, 0.5, 2000); e = 2.0 ** fr
A = np.vander(fr, DE+1, increasing=True) / e[:, None]
c3 = np.linalg.lstsq(A, np.ones_like(fr), rcond=None)[0]
c3[0] = 1.0
print("exp2 err", np.max(np.abs(np.vander(fr, DE+1, increasing=True) @ c3 / e - 1)))
def out(name, c):
    print("static const float %s[] = {%s};" % (name, ", ".join(float(np.float32(v)).hex() + "f" for v in c)))
out("kP", c1); out("kQ", c2); out("kE", c3)
