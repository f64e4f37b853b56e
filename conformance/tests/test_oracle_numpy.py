"""Cross-check of the oracle: the reference interpreter's math ops against numpy / libm.

`tessera conform --oracle-dump F` runs only the interpreter on the selected cases (uniform,
special and hard generators) and writes `variant inputs... output` as hex floats.

Tolerances, and why:
- f64: the interpreter evaluates in long double and rounds once (<= 0.5 ULP + 2^-11 ULP);
  numpy's float64 functions (glibc libm, or numpy's own SIMD loops) are documented < 1 ULP
  but not correctly rounded, so the two may differ by 1 ULP. Functions numpy can only compose
  (rsqrt = 1/sqrt, sigmoid = 1/(1+exp(-x))) carry each step's rounding: 3 ULP.
- f64 sin/cos/tan: glibc's (so numpy's) reduction of huge arguments is not exact (1.4e5 ULP
  off at the doubles closest to a multiple of pi/2, which the `hard` generator includes), so
  samples where numpy disagrees are checked against an exact big-integer evaluation
  (`exact_trig`), within 1 ULP.
- f32: the interpreter computes in f64 and rounds once to f32; the numpy value rounded to f32
  must be the same float, except where numpy's f64 value lies within a few f64 ULPs of an f32
  rounding midpoint (numpy's own < 1 ULP error can then flip the rounding; the chance per
  sample is ~2^-27). Such samples are counted and must stay rare.
"""
import math
import os
from fractions import Fraction
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))

REFS = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "erf": np.vectorize(math.erf, otypes=[np.float64]), "pow": np.power,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}
COMPOSED = {"rsqrt", "sigmoid"}


def dump(tmp_path, op, dtype):
    out = tmp_path / f"{op}.{dtype}.txt"
    r = subprocess.run([str(BIN), "conform", "--oracle-dump", out, "--filter", f"{op}.{dtype}/*"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [line.split()[1:] for line in out.read_text().splitlines()]
    data = np.array([[float.fromhex(v) for v in row] for row in rows], dtype=np.float64)
    return data[:, :-1], data[:, -1]


def exact_trig(op, x, bits=1300):
    """sin/cos/tan of a double, exact to far below an ULP: x mod pi/2 in fixed point with
    `bits` fraction bits (pi by Machin's formula), then Taylor series of the remainder."""
    one = 1 << bits

    def atan_inv(n):  # atan(1/n) * 2^bits
        total, term, k = 0, (one << 8) // n, 0
        while term:
            total += term // (2 * k + 1) * (-1) ** k
            term //= n * n
            k += 1
        return total >> 8

    half_pi = (16 * atan_inv(5) - 4 * atan_inv(239)) // 2
    m, e = math.frexp(abs(x))
    X = int(m * 2**53) << (e - 53 + bits) if e - 53 + bits >= 0 else int(m * 2**53) >> -(e - 53 + bits)
    q, r = divmod(X, half_pi)
    s, c, term, k = 0, 0, one, 0  # Taylor: term = r^k / k!
    while term:
        if k % 2 == 0:
            c += term if k % 4 == 0 else -term
        else:
            s += term if k % 4 == 1 else -term
        k += 1
        term = term * r // one // k
    sin_r, cos_r = [(s, c), (c, -s), (-s, -c), (-c, s)][q % 4]
    sign = -1 if x < 0 else 1  # Fraction -> float rounds correctly
    if op == "sin":
        return float(Fraction(sign * sin_r, one))
    if op == "cos":
        return float(Fraction(cos_r, one))
    return float(Fraction(sign * sin_r, cos_r))


def f64_ulps(a, b):
    """Distance in representable doubles (same-sign ordering), NaN == NaN, inf == inf."""
    ia = a.view(np.int64).astype(object)
    ib = b.view(np.int64).astype(object)
    out = []
    for x, y, u, v in zip(a, b, ia, ib):
        if np.isnan(x) or np.isnan(y):
            out.append(0 if np.isnan(x) and np.isnan(y) else math.inf)
            continue
        if x == y:
            out.append(0)
            continue
        ou = u if u >= 0 else -(u & 0x7FFFFFFFFFFFFFFF)
        ov = v if v >= 0 else -(v & 0x7FFFFFFFFFFFFFFF)
        out.append(abs(ou - ov))
    return np.array(out, dtype=float)


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")


@pytest.mark.parametrize("op", sorted(REFS))
def test_f64_agrees_with_numpy(tmp_path, op):
    ins, got = dump(tmp_path, op, "f64")
    assert len(got) > 1000
    with np.errstate(all="ignore"):
        want = REFS[op](*ins.T).astype(np.float64)
    tol = 3 if op in COMPOSED else 1
    d = f64_ulps(got, want)
    if op in ("sin", "cos", "tan"):  # numpy is not the reference at the hardest arguments
        for i in np.nonzero(d > tol)[0]:
            want[i] = exact_trig(op, float(ins[i][0]))
        d = f64_ulps(got, want)
    bad = np.nonzero(d > tol)[0]
    assert bad.size == 0, (f"{op}.f64: {bad.size} samples beyond {tol} ULP, e.g. inputs "
                           f"{ins[bad[0]]} interp {got[bad[0]]!r} numpy {want[bad[0]]!r}")


@pytest.mark.parametrize("op", sorted(REFS))
def test_f32_is_correctly_rounded_vs_numpy(tmp_path, op):
    ins, got = dump(tmp_path, op, "f32")
    assert len(got) > 1000
    with np.errstate(all="ignore"):
        wide = REFS[op](*ins.T).astype(np.float64)
        want = wide.astype(np.float32).astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    near_mid = 0
    for i in np.nonzero(~same)[0]:
        lo, hi = sorted((got[i], want[i]))
        assert np.float32(hi) == np.nextafter(np.float32(lo), np.float32(np.inf)), (
            f"{op}.f32 inputs {ins[i]}: interp {got[i]!r} numpy {want[i]!r}: not neighbours")
        mid = (lo + hi) / 2
        slack = 8 * np.spacing(abs(mid)) if op not in COMPOSED else 32 * np.spacing(abs(mid))
        assert abs(wide[i] - mid) <= slack, (
            f"{op}.f32 inputs {ins[i]}: interp {got[i]!r}, numpy {want[i]!r} (f64 {wide[i]!r}) "
            "not near a rounding midpoint")
        near_mid += 1
    assert near_mid <= max(2, len(got) // 10000)
