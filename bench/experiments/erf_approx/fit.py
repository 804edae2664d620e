#!/usr/bin/env python3
"""Fits the polynomial of Kiln's approximate erf (compiler/emit.cpp, Emitter::approx_erf):
erf(x) ~ tanh(x p(x^2)), p(u) = c0 + c1 u + ... + c_{n-1} u^(n-1).

The fit is linear in atanh(erf(x)) / x, weighted by x (1 - erf(x)^2) (the derivative of erf's
error with respect to p's), on [0, 4.5] where erf(x) < 1 - 1e-15, and reweighted (Lawson's
iteration) towards the smallest largest error of erf. Prints, for 2 to 6 terms, the largest
|tanh(x p(x^2)) - erf(x)| on the fitted range and on [0, 8] (a negative leading coefficient
turns p down past the range), and the coefficients; then, for the 5 terms Kiln uses, the
error with the coefficients rounded to f32 and the smallest x p(x^2) past x = 4 (tanh(x p)
rounds to 1 in f32 from x p >= 9). Pure Python (math only): about 20 s.
  python3 bench/experiments/erf_approx/fit.py
"""
import math
import struct

X, N = 4.5, 4000
XS = [X * (i + 0.5) / N for i in range(N)]


def solve(a, b):
    n = len(b)
    m = [row[:] + [bb] for row, bb in zip(a, b)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                for c in range(i, n + 1):
                    m[r][c] -= f * m[i][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def horner(coef, u):
    p = 0.0
    for c in reversed(coef):
        p = p * u + c
    return p


def fit(terms, iterations=300):
    pts = [x for x in XS if math.erf(x) < 1 - 1e-15]
    target = [math.atanh(math.erf(x)) / x for x in pts]
    weight = [x * (1 - math.erf(x) ** 2) for x in pts]
    lawson = [1.0] * len(pts)
    scale = X * X  # fit in u / scale: a well-conditioned basis on [0, 1]
    best = None
    for _ in range(iterations):
        a = [[0.0] * terms for _ in range(terms)]
        b = [0.0] * terms
        for x, t, w, l in zip(pts, target, weight, lawson):
            phi = [(x * x / scale) ** k for k in range(terms)]
            ww = w * w * l
            for i in range(terms):
                b[i] += ww * phi[i] * t
                for j in range(terms):
                    a[i][j] += ww * phi[i] * phi[j]
        coef = [c / scale**k for k, c in enumerate(solve(a, b))]
        errs = [math.tanh(x * horner(coef, x * x)) - math.erf(x) for x in pts]
        worst = max(abs(e) for e in errs)
        if best is None or worst < best[0]:
            best = (worst, coef)
        total = sum(l * abs(e) for l, e in zip(lawson, errs))
        lawson = [l * abs(e) / total * len(pts) + 1e-30 for l, e in zip(lawson, errs)]
    return best


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


chosen = None
for terms in range(2, 7):
    worst, coef = fit(terms)
    wide = max(abs(math.tanh(x * horner(coef, x * x)) - math.erf(x))
               for x in (8.0 * i / 200000 for i in range(200001)))
    print(f"{terms} terms: max error {worst:.3e} (2^{math.log2(worst):.2f}) on [0, {X}], "
          f"{wide:.3e} on [0, 8]; c = {', '.join(f'{c:.9e}' for c in coef)}")
    if terms == 5:
        chosen = coef
c = [f32(v) for v in chosen]
print("5 terms in f32:", ", ".join(float.hex(v) for v in c))
worst = max(abs(math.tanh(x * horner(c, x * x)) - math.erf(x))
            for x in (6.0 * i / 2000000 for i in range(1, 2000001)))
smallest, x = math.inf, 4.0
while x < 1e19:
    smallest = min(smallest, x * horner(c, x * x))
    x *= 1.001
print(f"  max error {worst:.3e} (2^{math.log2(worst):.2f}) on [0, 6]; "
      f"min x p(x^2) on [4, 1e19]: {smallest:.2f}")
