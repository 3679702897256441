#!/usr/bin/env python3
"""Writes numpy_cases.inc: operator calls with inputs and NumPy's outputs, which
numpy_cases_test.cc checks the reference evaluator against. Data generation only: the test
reads the generated file and never runs Python. Re-run after changing a case:
    python3 tests/reference/make_numpy_cases.py > tests/reference/numpy_cases.inc
"""
import math

import numpy as np

rng = np.random.default_rng(20261122)
cases = []


def f32(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def case(call, args, out):
    cases.append((call, args, np.asarray(out)))


def conv2d(x, w, stride, pad, dil, groups):
    # pad = (top, left, bottom, right); zero padding, NCHW / OIHW.
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        xs = x[:, g * ci:(g + 1) * ci]
        for ky in range(kh):
            for kx in range(kw):
                win = xs[:, :, ky * dil[0]: ky * dil[0] + stride[0] * (oh - 1) + 1: stride[0],
                         kx * dil[1]: kx * dil[1] + stride[1] * (ow - 1) + 1: stride[1]]
                out[:, oc] += np.einsum("nchw,c->nhw", win, w[oc, :, ky, kx].astype(np.float64))
    return out


def max_pool2d(x, pool, stride, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])),
               constant_values=-np.inf)
    h, w = x.shape[2:]
    oh = (h - pool[0]) // stride[0] + 1
    ow = (w - pool[1]) // stride[1] + 1
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for ky in range(pool[0]):
        for kx in range(pool[1]):
            out = np.maximum(out, x[:, :, ky: ky + stride[0] * (oh - 1) + 1: stride[0],
                                    kx: kx + stride[1] * (ow - 1) + 1: stride[1]])
    return out


x, w = f32(2, 4, 7, 6), f32(6, 2, 3, 2)
case("R.conv2d(a, b, strides=[2, 1], padding=[1, 0, 2, 1], dilation=[1, 2], groups=2)", [x, w],
     conv2d(x, w, (2, 1), (1, 0, 2, 1), (1, 2), 2))
x, w = f32(1, 3, 5, 5), f32(4, 3, 3, 3)
case("R.conv2d(a, b, padding=[1])", [x, w], conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1))
x = f32(2, 3, 6, 5)
case("R.max_pool2d(a, pool_size=[3, 2], strides=[2, 1], padding=[1, 1, 0, 1])", [x],
     max_pool2d(x, (3, 2), (2, 1), (1, 1, 0, 1)))
a, b = f32(2, 1, 3, 4), f32(5, 4, 2)
case("R.matmul(a, b)", [a, b], np.matmul(a.astype(np.float64), b.astype(np.float64)))
a, b = f32(4), f32(3, 4, 2)
case("R.matmul(a, b)", [a, b], np.matmul(a.astype(np.float64), b.astype(np.float64)))
x = f32(5, 6, 7)
case("R.strided_slice(a, begin=[4, -1], end=[-2147483648, -2147483648], axes=[0, 2], strides=[-2, -3])",
     [x], x[4:-2147483648:-2, :, -1:-2147483648:-3])
case("R.strided_slice(a, begin=[1, -5], end=[100, 5], axes=[1, 2], strides=[2, 1])", [x], x[:, 1:100:2, -5:5])
idx = np.array([[3, 0, 5], [1, 1, 2]], dtype=np.int64)
case("R.take(a, b, axis=1)", [x, idx], np.take(x, idx, axis=1))
x, g, bt = f32(3, 4, 5), f32(4, 5), f32(4, 5)
x64 = x.astype(np.float64)
mean = x64.mean(axis=(1, 2), keepdims=True)
var = x64.var(axis=(1, 2), keepdims=True)
case("R.layer_norm(a, b, c, axes=[1, 2], epsilon=1e-05)", [x, g, bt], (x64 - mean) / np.sqrt(var + 1e-5) * g + bt)
e = np.exp(x64 - x64.max(axis=1, keepdims=True))
case("R.softmax(a, axis=1)", [x], e / e.sum(axis=1, keepdims=True))
case("R.gelu(a)", [x], np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x64))
case("R.argmax(a, axis=1)", [x], np.argmax(x, axis=1))
case("R.sum(a, axis=[0, 2], keepdims=true)", [x], x64.sum(axis=(0, 2), keepdims=True))
case("R.permute_dims(a, axes=[2, 0, 1])", [x], np.transpose(x, (2, 0, 1)))
y = f32(3, 4, 2)
case("R.concat((a, b), axis=-1)", [x, y], np.concatenate([x, y], axis=-1))
wt = f32(5)
case("R.rms_norm(a, b, epsilon=1e-05)", [x, wt], x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-5) * wt)
cond = rng.integers(0, 2, size=(3, 1, 5)).astype(np.bool_)
p, q = f32(4, 5), f32(3, 4, 1)
case("R.where(a, b, c)", [cond, p, q], np.where(cond, p, q))
case("R.subtract(a, b)", [p, q], p.astype(np.float64) - q)
case("R.broadcast_to(a, R.shape([2, 3, 4, 5]))", [p], np.broadcast_to(p, (2, 3, 4, 5)))

# NaN and infinities: NumPy's rules are what the evaluator must follow (np.maximum and
# np.max propagate NaN, np.argmax returns the first NaN, relu is np.maximum(x, 0)).
nan, inf = np.nan, np.inf
with np.errstate(invalid="ignore", over="ignore"):
    a = np.array([[nan, 1, -inf, 2, nan, inf], [0.5, -1, inf, -inf, 3, -2]], dtype=np.float32)
    b = np.array([1, nan, 3, -inf, nan, nan], dtype=np.float32)
    case("R.maximum(a, b)", [a, b], np.maximum(a, b))
    case("R.minimum(a, b)", [a, b], np.minimum(a, b))
    case("R.maximum(a, b)", [b, a], np.maximum(b, a))
    case("R.relu(a)", [a], np.maximum(a, np.float32(0)))
    r = np.array([[1, nan, 3, 4], [-inf, 2, inf, 0], [nan, nan, -1, 5], [7, 1, 7, nan],
                  [-inf, -inf, -inf, -inf]], dtype=np.float32)
    case("R.max(a, axis=[1])", [r], np.max(r, axis=1))
    case("R.min(a, axis=[1])", [r], np.min(r, axis=1))
    case("R.max(a, axis=[0], keepdims=true)", [r], np.max(r, axis=0, keepdims=True))
    case("R.argmax(a, axis=1)", [r], np.argmax(r, axis=1))
    case("R.argmin(a, axis=1)", [r], np.argmin(r, axis=1))
    case("R.argmax(a, axis=0)", [r], np.argmax(r, axis=0))
    case("R.sum(a, axis=[1])", [r], r.astype(np.float64).sum(axis=1))
    r64 = r.astype(np.float64)
    e = np.exp(r64 - r64.max(axis=1, keepdims=True))
    case("R.softmax(a, axis=1)", [r], e / e.sum(axis=1, keepdims=True))
    x = f32(1, 2, 4, 5)
    x[0, 0, 1, 2] = nan
    x[0, 1, 3, 4] = inf
    x[0, 1, 0, 0] = -inf
    case("R.max_pool2d(a, pool_size=[2, 2], strides=[1, 2], padding=[1])", [x],
         max_pool2d(x, (2, 2), (1, 2), (1, 1, 1, 1)))
    x, w = f32(1, 2, 3, 3), f32(2, 2, 2, 2)
    w[1, 0, 0, 0] = inf
    x[0, 1, 2, 2] = nan
    case("R.conv2d(a, b, padding=[1])", [x, w], conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1))

# Elementwise math: NumPy's functions on float32 inputs computed in float64, special values
# included; round is half to even; floor_divide / mod follow Python, fmod C.
with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
    x = np.concatenate([f32(20) * 3, np.array([0, -0.0, nan, inf, -inf, 1e-30, -1e30, 1e6, 123456.7],
                                              dtype=np.float32)])
    x64 = x.astype(np.float64)
    for name, fn in [("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("atan", np.arctan),
                     ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh), ("expm1", np.expm1),
                     ("floor", np.floor), ("ceil", np.ceil), ("abs", np.abs), ("sign", np.sign),
                     ("reciprocal", np.reciprocal), ("isnan", np.isnan), ("isinf", np.isinf)]:
        case(f"R.{name}(a)", [x], fn(x64))
    case("R.erf(a)", [x], np.vectorize(math.erf)(x64))
    case("R.isinf(a, detect_negative=false)", [x], np.isposinf(x64))
    case("R.isinf(a, detect_positive=false)", [x], np.isneginf(x64))
    u = np.concatenate([rng.uniform(-1.2, 1.2, size=12).astype(np.float32),
                        np.array([1, -1, 0, -0.0, nan, inf], dtype=np.float32)])
    for name, fn in [("asin", np.arcsin), ("acos", np.arccos), ("atanh", np.arctanh)]:
        case(f"R.{name}(a)", [u], fn(u.astype(np.float64)))
    v = np.concatenate([rng.uniform(-1.5, 40, size=12).astype(np.float32),
                        np.array([1, -1, 0, nan, inf, -inf, 1e30], dtype=np.float32)])
    case("R.acosh(a)", [v], np.arccosh(v.astype(np.float64)))
    case("R.log1p(a)", [v], np.log1p(v.astype(np.float64)))
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51, 1e7 + 1, nan, inf], dtype=np.float32)
    case("R.round(a)", [ties], np.round(ties.astype(np.float64)))
    a = np.array([7, -7, 7, -7, 0, -0.0, 5.5, -5.5, inf, 3, -3, nan, 1, 6], dtype=np.float32)
    b = np.array([2, 2, -2, -2, 3, -3, 0.5, 2, 2, inf, inf, 1, nan, 0], dtype=np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    case("R.floor_divide(a, b)", [a, b], np.floor_divide(a64, b64))
    case("R.floor_mod(a, b)", [a, b], np.mod(a64, b64))
    case("R.mod(a, b)", [a, b], np.fmod(a64, b64))
    ia = np.array([7, -7, 7, -7, 0, 13, -13, -9223372036854775807 - 1], dtype=np.int64)
    ib = np.array([2, 2, -2, -2, 3, 5, -5, -1], dtype=np.int64)
    case("R.floor_mod(a, b)", [ia, ib], np.mod(ia, ib))
    case("R.mod(a, b)", [ia, ib], np.fmod(ia, ib))
    case("R.floor_divide(a, b)", [ia[:-1], ib[:-1]], np.floor_divide(ia[:-1], ib[:-1]))
    lo, hi = np.array(-1, dtype=np.float32), np.array(1.5, dtype=np.float32)
    case("R.clip(a, b, c)", [x, lo, hi], np.minimum(np.maximum(x64, -1), 1.5))
    bounds = np.array([[-1, 0.5], [nan, 2]], dtype=np.float32)
    y = np.array([[0.7], [nan]], dtype=np.float32)
    case("R.clip(a, b, c)", [y, bounds[:, :1], bounds[:, 1:]],
         np.minimum(np.maximum(y.astype(np.float64), bounds[:, :1]), bounds[:, 1:]))
    p = rng.integers(0, 2, size=(3, 4)).astype(np.bool_)
    q = rng.integers(0, 2, size=(4,)).astype(np.bool_)
    case("R.logical_and(a, b)", [p, q], np.logical_and(p, q))
    case("R.logical_or(a, b)", [p, q], np.logical_or(p, q))
    case("R.logical_xor(a, b)", [p, q], np.logical_xor(p, q))
    case("R.logical_not(a)", [p], np.logical_not(p))
    m = rng.integers(-2 ** 40, 2 ** 40, size=(6,)).astype(np.int64)
    k = np.array([0, 1, 5, 17, 40, 63], dtype=np.int64)
    case("R.bitwise_and(a, b)", [m, m[::-1].copy()], np.bitwise_and(m, m[::-1]))
    case("R.bitwise_or(a, b)", [m, m[::-1].copy()], np.bitwise_or(m, m[::-1]))
    case("R.bitwise_xor(a, b)", [m, m[::-1].copy()], np.bitwise_xor(m, m[::-1]))
    case("R.bitwise_not(a)", [m], np.invert(m))
    case("R.left_shift(a, b)", [m, k], np.left_shift(m, k))
    case("R.right_shift(a, b)", [m, k], np.right_shift(m, k))


def dtype_name(arr):
    return {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
            np.dtype(np.int64): "int64", np.dtype(np.bool_): "bool"}[arr.dtype]


def value(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(v)


def values(arr):
    return ", ".join(value(float(v)) for v in np.asarray(arr, dtype=np.float64).ravel())


def dims(arr):
    return ", ".join(str(d) for d in arr.shape)


print("// Generated by tests/reference/make_numpy_cases.py (NumPy " + np.__version__ + "); do not edit.")
for call, args, out in cases:
    print("{\"" + call.replace("\"", "\\\"") + "\",")
    print(" {")
    for arg in args:
        print("  {\"%s\", {%s}, {%s}}," % (dtype_name(arg), dims(arg), values(arg)))
    print(" },")
    print(" {%s}, {%s}}," % (dims(out), values(out)))
