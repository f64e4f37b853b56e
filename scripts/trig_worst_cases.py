#!/usr/bin/env python3
"""The hardest arguments for trigonometric range reduction, per floating-point format.

For every binary exponent E, the significand M (p bits) that puts x = M 2^E closest to a
multiple of pi/2: the minimum of ||M 2^(E+1)/pi|| (distance to the nearest integer), found
among the convergents, their multiples and the semiconvergents of the continued fraction of
2^(E+1)/pi mod 1 (the method behind Muller's and Kahan-McDonald's tables; it finds
6381956970095103 * 2^797, whose distance to a multiple of pi/2 is 4.7e-19). Prints the C++
tables of conformance/inputs.cpp: the hardest overall (the smallest distance) and the
hardest of each exponent band.
Needs mpmath; takes a few minutes for f64.
"""
import math
import sys
from fractions import Fraction

import mpmath

FORMATS = {  # name: (p, lowest exponent with x > pi/4, highest exponent, bands, top)
    "f64": (53, -52, 971, 16, 16),
    "f32": (24, -23, 104, 8, 8),
    "f16": (11, -10, 5, 16, 0),
    "bf16": (8, -7, 120, 8, 8),
}


def best(E, p):
    mpmath.mp.prec = max(E, 0) + 400
    alpha = mpmath.mpf(2) ** (E + 1) / mpmath.pi
    theta = Fraction(int(mpmath.floor((alpha - mpmath.floor(alpha)) * mpmath.mpf(2) ** 360)),
                     2 ** 360)
    lo, hi = 2 ** (p - 1), 2 ** p - 1
    cands, f, q2, q1 = set(), theta, 1, 0
    while True:
        a = f.numerator // f.denominator
        q = a * q1 + q2
        if q > hi:  # semiconvergents q2 + j q1
            cands.update(s for s in (q2 + j * q1 for j in range(a + 1)) if lo <= s <= hi)
            break
        first = max(1, -(-lo // q))
        cands.update(t * q for t in range(first, min(hi // q, first + 64) + 1))
        q2, q1 = q1, q
        if f == a:
            break
        f = 1 / (f - a)

    def dist(M):
        r = M * theta - (M * theta).numerator // (M * theta).denominator
        return min(r, 1 - r)

    M = min(cands, key=dist)
    return M, float(dist(M)) * math.pi / 2


def main(name):
    p, elo, ehi, bands, top = FORMATS[name]
    rows = []  # (-log2 of the distance to k pi/2: the reduced argument's leading zeros, E, M, d)
    for E in range(elo, ehi + 1):
        M, d = best(E, p)
        rows.append((-math.log2(d), E, M, d))
    chosen = set(sorted(rows, reverse=True)[:top])
    width = -(-len(rows) // bands)
    for i in range(0, len(rows), width):
        chosen.add(max(rows[i:i + width]))
    for bits, E, M, d in sorted(chosen, key=lambda r: r[1]):
        print(f"    {{{M}, {E}}}, // {M * 2.0 ** E:.17g}: {d:.3g} = 2^{-bits:.1f} from k pi/2")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "f64")
