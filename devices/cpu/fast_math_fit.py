#!/usr/bin/env python3
"""Fits the coefficients of devices/cpu/fast_erf.h and fast_exp.h and prints them (numpy).

erf: erf on [0, 4) is split into 16 intervals of width 1/4. Interval k > 0 holds a degree-6
polynomial in y = |x| - centre_k (the interval's midpoint): its constant term is erf(centre_k),
so the Horner sum ends by adding a small correction to a value near the result, and rounding
errors of the higher terms shrink with y. Interval 0 is centred on 0 and evaluated as
x + x * P(x), with P a degree-5 fit of erf(x)/x - 1 (about 0.13): the result keeps full relative
accuracy down to the smallest subnormal. Each fit is a minimax one (Lawson's iteration of
weighted least squares) of the relative error; the largest, 0.044 ulp, is far below the rounding
of the float evaluation, which brings the total to 1.151 ulp (every float, against double erf).

exp: exp(r) on |r| <= ln(2)/2 as 1 + r + r^2 Q(r), Q of degree 4, minimax in relative error of
exp (0.05 ulp); with the rounding of the evaluation, 0.909 ulp over every float.
Usage: python3 devices/cpu/fast_math_fit.py
"""
import math

import numpy as np

DEGREE = 6
WIDTH = 0.25
INTERVALS = 16


def minimax(basis, target, rel, iters=300):
    """Coefficients c minimising max |basis @ c - target| (relative to target when rel)."""
    w = np.ones(len(target))
    scale = 1 / np.abs(target) if rel else np.ones(len(target))
    for _ in range(iters):
        sw = np.sqrt(w) * scale
        c, *_ = np.linalg.lstsq(basis * sw[:, None], target * sw, rcond=None)
        err = (basis @ c - target) * scale
        w *= np.abs(err) + 1e-300
        w /= w.sum()
    return c, np.abs(err).max()


def hex_float(v):
    return float(np.float32(v)).hex().replace('0000000p', 'p').replace('0x0.0p+0', '0x0p+0') + 'f'


def fit_erf():
    table = [[0.0] * INTERVALS for _ in range(DEGREE + 1)]
    worst = 0.0
    for k in range(INTERVALS):
        lo, hi = k * WIDTH, (k + 1) * WIDTH
        x = lo + (hi - lo) * (np.cos(np.linspace(np.pi, 0, 2000)) * 0.5 + 0.5)
        if k == 0:
            x = x[1:]
            c, err = minimax(np.vander(x, DEGREE, increasing=True), np.array([math.erf(v) / v - 1 for v in x]), False)
            c, err = [0.0] + list(c), err / (2 / math.sqrt(math.pi))
        else:
            y = x - (lo + hi) / 2
            c, err = minimax(np.vander(y, DEGREE + 1, increasing=True), np.array([math.erf(v) for v in x]), True)
        worst = max(worst, err)
        for i in range(DEGREE + 1):
            table[i][k] = float(np.float32(c[i]))
    print(f"// erf: largest fit error {worst / 2**-24:.3f} ulp")
    for i, row in enumerate(table):
        print(f"  {{{', '.join(hex_float(v) for v in row)}}},  // y^{i}")


def fit_exp():
    r = math.log(2) / 2 * np.cos(np.linspace(np.pi, 0, 4000))
    r = r[np.abs(r) > 1e-9]
    # Relative error of exp(r) = 1 + r + r^2 Q(r) is r^2 / exp(r) times the error of Q.
    scale = r**2 / np.exp(r)
    c, err = minimax(np.vander(r, 5, increasing=True) * scale[:, None], (np.exp(r) - 1 - r) / r**2 * scale, False)
    print(f"// exp: largest fit error {err / 2**-24:.3f} ulp")
    print(f"  kQ[5] = {{{', '.join(hex_float(v) for v in c)}}};")


def main():
    fit_erf()
    fit_exp()


if __name__ == "__main__":
    main()
