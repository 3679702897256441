#!/usr/bin/env python3
"""Derives the polynomial coefficients of codegen/fast_math.cc (float32 exp, erf, erfc, 2^r, tanh, log).

A development tool, not part of the product: run it by hand (needs numpy and mpmath) and paste
the printed float32 coefficients into codegen/fast_math.cc. Each approximation is a weighted
minimax polynomial found with the Remez exchange algorithm: the function values come from
mpmath at 40 digits, the polynomial and error curves are evaluated in float64 on a dense grid
(the targets are around 1e-8, far above float64 rounding). Coefficients are then rounded to
float32 and the error of the rounded polynomial is printed next to the minimax error.

    python3 scripts/fast_math_coefficients.py
"""
import math

import mpmath
import numpy as np

mpmath.mp.dps = 40


def remez(f, w, lo, hi, degree, iters=40, grid=20000):
    """Coefficients c[0..degree] minimizing max |w(u) (f(u) - sum c_i u^i)| on [lo, hi]."""
    us = np.linspace(lo, hi, grid)
    fs = np.array([float(f(mpmath.mpf(u))) for u in us])
    ws = np.array([float(w(mpmath.mpf(u))) for u in us])
    n = degree + 2
    # Chebyshev extrema as the first reference.
    k = np.arange(n)
    ref = 0.5 * (lo + hi) - 0.5 * (hi - lo) * np.cos(math.pi * k / (n - 1))
    ref_idx = np.clip(np.searchsorted(us, ref), 0, grid - 1)
    coef = None
    for _ in range(iters):
        u = us[ref_idx]
        # w_j p(u_j) + (-1)^j E = w_j f(u_j): rows scaled by the weight, which may vanish.
        wj = ws[ref_idx]
        a = np.zeros((n, n))
        for i in range(degree + 1):
            a[:, i] = wj * u ** i
        a[:, degree + 1] = [(-1) ** j for j in range(n)]
        sol = np.linalg.solve(a, wj * fs[ref_idx])
        coef = sol[:degree + 1]
        err = ws * (fs - np.polyval(coef[::-1], us))
        # One extremum per run of equal sign, then trim to n alternating points.
        ext = []
        start = 0
        for i in range(1, grid + 1):
            if i == grid or np.sign(err[i]) != np.sign(err[start]):
                j = start + int(np.argmax(np.abs(err[start:i])))
                ext.append(j)
                start = i
        while len(ext) > n:
            if len(ext) - n == 1:
                ext.pop(0 if abs(err[ext[0]]) < abs(err[ext[-1]]) else -1)
                continue
            m = min(range(len(ext)), key=lambda q: abs(err[ext[q]]))
            if m == 0 or m == len(ext) - 1:
                ext.pop(m)
            else:
                ext.pop(m)
                keep = ext[m - 1] if abs(err[ext[m - 1]]) >= abs(err[ext[m]]) else ext[m]
                ext[m - 1:m + 1] = [keep]
        if len(ext) < n:
            break
        ref_idx = np.array(ext)
    err = ws * (fs - np.polyval(coef[::-1], us))
    c32 = np.array(coef, dtype=np.float32).astype(np.float64)
    err32 = ws * (fs - np.polyval(c32[::-1], us))
    return coef, np.max(np.abs(err)), np.max(np.abs(err32))


def remez_f32(f, w, lo, hi, degree, refit=2, grid=8000):
    """remez, with the first `refit` coefficients rounded to float32 one at a time and the
    higher ones fitted again to what is left (f - c0 - c1 u ...) / u^i, so that rounding the
    leading coefficients, which dominate, costs little."""
    fixed = []
    for i in range(refit):
        def fi(u, i=i):
            acc = f(u)
            for j, c in enumerate(fixed):
                acc -= mpmath.mpf(c) * u ** j
            return acc / u ** i
        coef, _, _ = remez(fi, lambda u, i=i: w(u) * u ** i, lo, hi, degree - i, grid=grid)
        fixed.append(float(np.float32(coef[0])))

    def rest(u):
        acc = f(u)
        for j, c in enumerate(fixed):
            acc -= mpmath.mpf(c) * u ** j
        return acc / u ** refit
    coef, e, _ = remez(rest, lambda u: w(u) * u ** refit, lo, hi, degree - refit, grid=grid)
    full = np.concatenate([np.array(fixed), coef])
    us = np.linspace(lo, hi, grid)
    fs = np.array([float(f(mpmath.mpf(u))) for u in us])
    ws = np.array([float(w(mpmath.mpf(u))) for u in us])
    c32 = np.array(full, dtype=np.float32).astype(np.float64)
    e32 = np.max(np.abs(ws * (fs - np.polyval(c32[::-1], us))))
    return full, e, e32


def show(name, coef, e, e32):
    print(f"// {name}: minimax weighted error {e:.3g}, with float32 coefficients {e32:.3g}")
    for i, c in enumerate(coef):
        print(f"//   c{i} = {float(np.float32(c)).hex()}  ({np.float32(c)!r})")


def main():
    mp = mpmath
    ln2 = mp.log(2)

    # exp(r) = 1 + r + r^2 q(r) on |r| <= ln2/2 (a little wider: without FMA the reduction
    # may round k the other way at a tie); relative error of exp.
    lim = 0.35
    coef, e, e32 = remez_f32(lambda r: (mp.exp(r) - 1 - r) / r ** 2 if r != 0 else mp.mpf(0.5),
                         lambda r: r ** 2 / mp.exp(r), -lim, lim, 4, refit=1)
    show("exp q(r), exp(r) = 1 + r + r^2 q(r), |r| <= 0.35, rel. error of exp", coef, e, e32)

    # erf(x) = x + x Q(x^2) for |x| <= A; relative error of erf. (x P(x^2) would need
    # P(0) = 2/sqrt(pi), whose float32 rounding alone is 5e-8 relative; Q(0) = 2/sqrt(pi) - 1
    # rounds 9 times closer.)
    a = 0.5
    coef, e, e32 = remez_f32(lambda s: mp.erf(mp.sqrt(s)) / mp.sqrt(s) - 1 if s != 0 else 2 / mp.sqrt(mp.pi) - 1,
                             lambda s: mp.sqrt(s) / mp.erf(mp.sqrt(s)) if s != 0 else mp.sqrt(mp.pi) / 2,
                             1e-9, a * a, 4, refit=1)
    show(f"erf Q(s), erf(x) = x + x Q(x^2), |x| <= {a}, rel. error", coef, e, e32)

    # erfc(x) = 2^(L(x - A) - 1) for A <= x <= 4, L(u) = log2(erfc(A + u)) + 1: in u = x - A
    # and offset by 1 (L(0) = -0.06), L and its Horner steps are small where erfc is largest
    # and its error shows most. The error weighted by erfc * ln2 is that of erfc, absolute,
    # printed in float32 ulps of erf (which is in [0.52, 1) there: ulp 2^-24).
    coef, e, e32 = remez_f32(lambda u: mp.log(mp.erfc(a + u), 2) + 1,
                             lambda u: mp.erfc(a + u) * mp.log(2) * 2 ** 24,
                             1e-9, 4 - a, 6, refit=2)
    show(f"erfc L(u), erfc(x) = 2^(L(x - {a}) - 1), {a} <= x <= 4, error of erfc in ulps of erf", coef, e, e32)

    # 2^r = 1 + r P(r) for |r| <= 1/2 (erfc's 2^L = 2^k 2^r, k = round(L)); relative error.
    coef, e, e32 = remez_f32(lambda r: (2 ** r - 1) / r if r != 0 else ln2, lambda r: r / 2 ** r,
                             -0.5, 0.5, 5, refit=1)
    show("2^r P(r), 2^r = 1 + r P(r), |r| <= 1/2, rel. error of 2^r", coef, e, e32)

    # tanh(x) = x + x^3 P(x^2) for |x| <= B; relative error of tanh.
    b = 0.625
    coef, e, e32 = remez_f32(lambda s: (mp.tanh(mp.sqrt(s)) - mp.sqrt(s)) / s ** 1.5 if s != 0 else mp.mpf(-1) / 3,
                         lambda s: s ** 1.5 / mp.tanh(mp.sqrt(s)) if s != 0 else mp.mpf(0),
                         1e-9, b * b, 5)
    show(f"tanh P(s), tanh(x) = x + x^3 P(x^2), |x| <= {b}, rel. error", coef, e, e32)

    # log(1 + f) = f + f^2 P(f) for sqrt(1/2) - 1 <= f <= sqrt(2) - 1; relative error of log1p.
    coef, e, e32 = remez_f32(lambda f: (mp.log1p(f) - f) / f ** 2 if f != 0 else mp.mpf(-0.5),
                         lambda f: f ** 2 / mp.log1p(f) if f != 0 else mp.mpf(0),
                         float(mp.sqrt(0.5) - 1), float(mp.sqrt(2) - 1), 10, refit=1)
    show("log P(f), log(1+f) = f + f^2 P(f), sqrt(1/2)-1 <= f <= sqrt(2)-1, rel. error", coef, e, e32)
    print(f"// ln2 = {float(ln2).hex()}")


if __name__ == "__main__":
    main()
