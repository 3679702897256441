#!/usr/bin/env python3
"""Derives the float64 polynomial coefficients of codegen/fast_math_trig.cc (float32 sin, cos,
tan, asin, acos, atan, which compute in float64 inside) and the bits of 2/pi its argument
reduction uses.

A development tool, not part of the product: run it by hand (needs numpy and mpmath) and
paste the printed coefficients. Each polynomial is a near-minimax fit of the relative error
(Lawson's algorithm: least squares with weights reweighted by the error, on a dense grid,
function values from mpmath); the errors printed (around 1e-12) are far below float32's 6e-8.

    python3 scripts/fast_math_double_coefficients.py
"""
import math
import mpmath
import numpy as np

mpmath.mp.dps = 100


def remez(f, w, lo, hi, degree, iters=60, grid=6000):
    """Coefficients c[0..degree] (nearly) minimizing max |w(u) (f(u) - sum c_i u^i)| on [lo, hi]."""
    us = np.linspace(lo, hi, grid)
    fs = np.array([float(f(mpmath.mpf(u))) for u in us])
    ws = np.array([float(w(mpmath.mpf(u))) for u in us])
    # Chebyshev basis on [lo, hi] for a well-conditioned least-squares problem.
    x = (2 * us - (lo + hi)) / (hi - lo)
    basis = np.polynomial.chebyshev.chebvander(x, degree)
    lawson = np.full(grid, 1.0 / grid)
    for _ in range(iters):
        sw = np.sqrt(lawson) * ws
        cheb = np.linalg.lstsq(basis * sw[:, None], fs * sw, rcond=None)[0]
        err = np.abs(ws * (fs - basis @ cheb))
        lawson *= err
        lawson /= lawson.sum()
    # To monomials in u.
    mono = np.polynomial.chebyshev.cheb2poly(cheb)
    scale = np.polynomial.polynomial.Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])
    poly = np.polynomial.polynomial.Polynomial([0.0])
    power = np.polynomial.polynomial.Polynomial([1.0])
    for c in mono:
        poly += c * power
        power *= scale
    coef = poly.coef
    err = np.max(np.abs(ws * (fs - np.polyval(coef[::-1], us))))
    return coef, err, err


def show(name, coef, e):
    print(f"// {name}: minimax weighted error {e:.3g}")
    print("//   {" + ", ".join(float(c).hex() for c in coef) + "}")


def main():
    mp = mpmath
    q = float(mp.pi / 4) * 1.0001
    # sin(r) = r + r^3 S(r^2), |r| <= pi/4; relative error of sin.
    coef, e, _ = remez(lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5 if z != 0 else mp.mpf(-1) / 6,
                       lambda z: z ** 1.5 / mp.sin(mp.sqrt(z)) if z != 0 else mp.mpf(0), 1e-12, q * q, 4)
    show("sin S(z), sin(r) = r + r^3 S(r^2), |r| <= pi/4", coef, e)
    # cos(r) = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4; relative error of cos.
    coef, e, _ = remez(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2 if z != 0 else mp.mpf(1) / 24,
                       lambda z: z ** 2 / mp.cos(mp.sqrt(z)), 1e-12, q * q, 4)
    show("cos C(z), cos(r) = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4", coef, e)
    # atan(t) = t + t^3 P(t^2), 0 <= t <= tan(pi/8); relative error of atan.
    t8 = float(mp.tan(mp.pi / 8)) * 1.0001
    for deg in (7,):
        coef, e, _ = remez(lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5 if z != 0 else mp.mpf(-1) / 3,
                           lambda z: z ** 1.5 / mp.atan(mp.sqrt(z)) if z != 0 else mp.mpf(0), 1e-12, t8 * t8, deg)
        show(f"atan P(z) degree {deg}, atan(t) = t + t^3 P(t^2), 0 <= t <= tan(pi/8)", coef, e)
    # asin(x) = x + x^3 P(x^2), 0 <= x <= 1/2; relative error of asin.
    for deg in (8,):
        coef, e, _ = remez(lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5 if z != 0 else mp.mpf(1) / 6,
                           lambda z: z ** 1.5 / mp.asin(mp.sqrt(z)) if z != 0 else mp.mpf(0), 1e-12, 0.2501, deg)
        show(f"asin P(z) degree {deg}, asin(x) = x + x^3 P(x^2), 0 <= x <= 1/2", coef, e)
    # 2/pi in 24-bit chunks: 2/pi = sum C_i 2^(-24 (i + 1)).
    bits = int(mp.floor(2 / mp.pi * mp.mpf(2) ** (24 * 10)))
    chunks = [(bits >> (24 * (9 - i))) & 0xFFFFFF for i in range(10)]
    print("// 2/pi in 24-bit chunks: " + ", ".join(f"0x{c:06x}" for c in chunks))
    print(f"// pi/2 = {float(mp.pi / 2).hex()} + {float(mp.pi / 2 - mp.mpf(float(mp.pi / 2))).hex()}")


if __name__ == "__main__":
    main()
