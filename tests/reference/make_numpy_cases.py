#!/usr/bin/env python3
"""Writes numpy_cases.inc: operator calls with inputs and NumPy's outputs, which
numpy_cases_test.cc checks the reference evaluator against. Data generation only: the test
reads the generated file and never runs Python. Re-run after changing a case:
    python3 tests/reference/make_numpy_cases.py > tests/reference/numpy_cases.inc
"""
import math

import numpy as np

import numpy_cases_data

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

numpy_cases_data.add_cases(case)


# Reductions and channel normalizations for the ONNX operators, drawn from their own
# generator so that cases added above do not change them.
nn_rng = np.random.default_rng(20261126)


def nn_f32(*shape, lo=-2, hi=2):
    return nn_rng.uniform(lo, hi, size=shape).astype(np.float32)


def group_norm(x, scale, bias, groups, eps):
    x64 = x.astype(np.float64)
    g = x64.reshape(x.shape[0], groups, -1)
    mean = g.mean(axis=2, keepdims=True)
    var = g.var(axis=2, keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)
    chan = (1, -1) + (1,) * (x.ndim - 2)
    return y * scale.reshape(chan) + bias.reshape(chan)


def lrn(x, size, alpha, beta, bias):
    # ONNX LRN by its definition: a window of channels [c - floor((size-1)/2), c + ceil((size-1)/2)].
    x64 = x.astype(np.float64)
    sq = np.pad(x64 ** 2, [(0, 0), ((size - 1) // 2, size - 1 - (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, k:k + x.shape[1]] for k in range(size))
    return x64 / (bias + alpha / size * window) ** beta


x = nn_f32(3, 4, 5, lo=0.5, hi=1.5)
case("R.prod(a, axis=[1, 2])", [x], x.astype(np.float64).prod(axis=(1, 2)))
case("R.prod(a, axis=[0], keepdims=true)", [x], x.astype(np.float64).prod(axis=0, keepdims=True))
ix = nn_rng.integers(-3, 4, size=(2, 5)).astype(np.int64)
case("R.prod(a, axis=[1])", [ix], ix.prod(axis=1))
x = nn_f32(3, 4, 5)
case("R.variance(a, axis=[0, 2])", [x], x.astype(np.float64).var(axis=(0, 2)))
case("R.variance(a, keepdims=true, correction=1)", [x], x.astype(np.float64).var(keepdims=True, ddof=1))
x = nn_f32(3, 4, 5, lo=-30, hi=30)
x64 = x.astype(np.float64)
for axis in (1, -1):
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    case("R.log_softmax(a, axis=%d)" % axis, [x], shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)))
x, s, b, mu, v = nn_f32(2, 3, 4, 2), nn_f32(3), nn_f32(3), nn_f32(3), nn_f32(3, lo=0.1, hi=2)
chan = (1, 3, 1, 1)
case("R.batch_norm(a, b, c, d, e, epsilon=0.01)", [x, s, b, mu, v],
     (x.astype(np.float64) - mu.reshape(chan)) / np.sqrt(v.astype(np.float64).reshape(chan) + 0.01)
     * s.reshape(chan) + b.reshape(chan))
x, s, b = nn_f32(2, 6, 3, 2), nn_f32(6), nn_f32(6)
case("R.group_norm(a, b, c, num_groups=2, epsilon=0.001)", [x, s, b], group_norm(x, s, b, 2, 1e-3))
case("R.instance_norm(a, b, c)", [x, s, b], group_norm(x, s, b, 6, 1e-5))
x = nn_f32(2, 6, 3)
case("R.lrn(a, size=3)", [x], lrn(x, 3, 1e-4, 0.75, 1.0))
case("R.lrn(a, size=4, alpha=0.5, beta=0.6, bias=2.0)", [x], lrn(x, 4, 0.5, 0.6, 2.0))
with np.errstate(invalid="ignore", over="ignore"):
    r = np.array([[1, nan, 3, 4], [-inf, 2, 0, 1], [inf, 0, 1, 2], [-inf, -inf, -inf, -inf]], dtype=np.float32)
    r64 = r.astype(np.float64)
    shifted = r64 - r64.max(axis=1, keepdims=True)
    case("R.log_softmax(a, axis=1)", [r], shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))
    case("R.prod(a, axis=[1])", [r], r64.prod(axis=1))
    case("R.variance(a, axis=[1])", [r], r64.var(axis=1))


def conv_nd(x, w, stride, pad_b, pad_e, dil, groups):
    # Any number of spatial dims: zero padding, then a sum over taps of strided slices.
    import itertools
    k = len(stride)
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(pad_b, pad_e)))
    o, ci = w.shape[:2]
    ks = w.shape[2:]
    outs = [(x.shape[2 + d] - dil[d] * (ks[d] - 1) - 1) // stride[d] + 1 for d in range(k)]
    out = np.zeros((x.shape[0], o) + tuple(outs))
    og = o // groups
    for oc in range(o):
        g = oc // og
        xs = x[:, g * ci:(g + 1) * ci]
        for taps in itertools.product(*[range(n) for n in ks]):
            sl = tuple(slice(taps[d] * dil[d], taps[d] * dil[d] + stride[d] * (outs[d] - 1) + 1, stride[d])
                       for d in range(k))
            out[:, oc] += np.tensordot(w[(oc, slice(None)) + taps].astype(np.float64), xs[(slice(None), slice(None)) + sl],
                                       axes=([0], [1]))
    return out


def conv_transpose_nd(x, w, stride, pad_b, pad_e, out_pad, dil, groups):
    # A second formulation: the input spread out by the stride (zeros between), padded by
    # dil * (K - 1) - pad on each side (+ output_padding at the end), convolved with the
    # kernel flipped in space and with its in/out channels swapped.
    k = len(stride)
    c = x.shape[1]
    ks = w.shape[2:]
    spread = np.zeros(x.shape[:2] + tuple((x.shape[2 + d] - 1) * stride[d] + 1 for d in range(k)))
    spread[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)] = x
    pb = [dil[d] * (ks[d] - 1) - pad_b[d] for d in range(k)]
    pe = [dil[d] * (ks[d] - 1) - pad_e[d] + out_pad[d] for d in range(k)]
    # Negative padding crops.
    crop = tuple(slice(max(0, -pb[d]), spread.shape[2 + d] - max(0, -pe[d])) for d in range(k))
    spread = spread[(slice(None), slice(None)) + crop]
    cg, og = c // groups, w.shape[1]
    wt = np.zeros((og * groups, cg) + tuple(ks))
    for g in range(groups):
        blk = w[g * cg:(g + 1) * cg]  # (cg, og, K...)
        wt[g * og:(g + 1) * og] = np.swapaxes(blk, 0, 1)[(slice(None), slice(None)) + (slice(None, None, -1),) * k]
    return conv_nd(spread, wt, (1,) * k, [max(0, v) for v in pb], [max(0, v) for v in pe], dil, groups)


def pool_nd(x, kind, ks, stride, pad_b, pad_e, dil, ceil_mode=False, include_pad=False):
    # Direct loops over output positions and window taps.
    import itertools
    k = len(ks)
    outs = []
    for d in range(k):
        span = x.shape[2 + d] + pad_b[d] + pad_e[d] - dil[d] * (ks[d] - 1) - 1
        n = -(-span // stride[d]) + 1 if ceil_mode else span // stride[d] + 1
        if ceil_mode and (n - 1) * stride[d] >= x.shape[2 + d] + pad_b[d]:
            n -= 1
        outs.append(n)
    out = np.zeros(x.shape[:2] + tuple(outs))
    x64 = x.astype(np.float64)
    for pos in itertools.product(*[range(n) for n in outs]):
        vals, count = [], 0
        for taps in itertools.product(*[range(n) for n in ks]):
            at = [pos[d] * stride[d] - pad_b[d] + taps[d] * dil[d] for d in range(k)]
            inside = all(0 <= at[d] < x.shape[2 + d] for d in range(k))
            padded = all(-pad_b[d] <= at[d] < x.shape[2 + d] + pad_e[d] for d in range(k))
            count += (padded if include_pad else inside)
            if inside:
                vals.append(x64[(slice(None), slice(None)) + tuple(at)])
        idx = (slice(None), slice(None)) + pos
        if kind == "max":
            out[idx] = np.max(np.stack(vals), axis=0)
        else:
            out[idx] = np.sum(np.stack(vals), axis=0) / count
    return out


x, w = nn_f32(2, 4, 9), nn_f32(6, 2, 3)
case("R.conv1d(a, b, strides=[2], padding=[1, 2], dilation=[2], groups=2)", [x, w],
     conv_nd(x, w, (2,), (1,), (2,), (2,), 2))
x, w = nn_f32(1, 2, 4, 5, 3), nn_f32(3, 2, 2, 3, 2)
case("R.conv3d(a, b, strides=[1, 2, 1], padding=[1, 0, 1, 0, 1, 1])", [x, w],
     conv_nd(x, w, (1, 2, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1), 1))
x, w = nn_f32(1, 4, 5), nn_f32(4, 3, 3)
case("R.conv1d_transpose(a, b, strides=[2], padding=[1], output_padding=[1])", [x, w],
     conv_transpose_nd(x, w, (2,), (1,), (1,), (1,), (1,), 1))
x, w = nn_f32(2, 4, 3, 4), nn_f32(4, 3, 3, 2)
case("R.conv2d_transpose(a, b, strides=[2, 3], padding=[1, 0, 0, 1], output_padding=[1, 0], dilation=[1, 2], groups=2)",
     [x, w], conv_transpose_nd(x, w, (2, 3), (1, 0), (0, 1), (1, 0), (1, 2), 2))
x = nn_f32(2, 3, 8)
case("R.max_pool1d(a, pool_size=[3], strides=[2], padding=[1], ceil_mode=true)", [x],
     pool_nd(x, "max", (3,), (2,), (1,), (1,), (1,), ceil_mode=True))
case("R.avg_pool1d(a, pool_size=[4], strides=[3], padding=[2, 1], dilation=[2], count_include_pad=true)", [x],
     pool_nd(x, "avg", (4,), (3,), (2,), (1,), (2,), include_pad=True))
x = nn_f32(1, 2, 5, 6)
case("R.avg_pool2d(a, pool_size=[3, 3], strides=[2, 2], padding=[1])", [x],
     pool_nd(x, "avg", (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)))
case("R.avg_pool2d(a, pool_size=[3, 2], strides=[2, 2], padding=[1, 0, 1, 1], ceil_mode=true, count_include_pad=true)",
     [x], pool_nd(x, "avg", (3, 2), (2, 2), (1, 0), (1, 1), (1, 1), ceil_mode=True, include_pad=True))
x = nn_f32(1, 2, 3, 4, 5)
case("R.max_pool3d(a, pool_size=[2, 2, 3], strides=[1, 2, 2], padding=[1])", [x],
     pool_nd(x, "max", (2, 2, 3), (1, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1)))
case("R.avg_pool3d(a, pool_size=[2], strides=[1], padding=[0, 1, 0, 1, 0, 1])", [x],
     pool_nd(x, "avg", (2, 2, 2), (1, 1, 1), (0, 1, 0), (1, 0, 1), (1, 1, 1)))


def resize(x, size, axes, method, mode="half_pixel", nearest="round_prefer_floor", a=-0.75, exclude=False,
           extrapolation=0.0, scales=None, roi=None):
    # ONNX Resize by its definition, one output element at a time over the tensor product of
    # the per-axis taps (nearest: 1, linear: 2, cubic: 4), skipping taps of weight 0.
    import itertools
    x64 = x.astype(np.float64)
    out = np.zeros(size)

    def coord(k, y, n_in, n_out):
        s = scales[k] if scales else n_out / n_in
        if scales:
            n_out = n_in * s  # ONNX's reference: the unrounded resized length
        if mode == "half_pixel":
            return (y + 0.5) / s - 0.5
        if mode == "pytorch_half_pixel":
            return (y + 0.5) / s - 0.5 if n_out > 1 else 0.0
        if mode == "align_corners":
            return y * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        if mode == "asymmetric":
            return y / s
        start, end = roi[k], roi[k + len(axes)]
        return (start * (n_in - 1) + y * (end - start) * (n_in - 1) / (n_out - 1) if n_out > 1
                else 0.5 * (start + end) * (n_in - 1))

    def cubic(t):
        t = abs(t)
        return ((a + 2) * t - (a + 3)) * t * t + 1 if t <= 1 else (((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0)

    for pos in itertools.product(*[range(n) for n in size]):
        per_axis, outside = [], False
        for k, d in enumerate(axes):
            n_in = x.shape[d]
            c = coord(k, pos[d], n_in, size[d])
            if mode == "tf_crop_and_resize" and (c < 0 or c > n_in - 1):
                outside = True
            clampi = lambda i: min(max(i, 0), n_in - 1)
            lo = math.floor(c)
            if method == "nearest":
                r = {"round_prefer_floor": math.ceil(c - 0.5), "round_prefer_ceil": math.floor(c + 0.5),
                     "floor": math.floor(c), "ceil": math.ceil(c)}[nearest]
                taps = [(clampi(r), 1.0)]
            elif method == "linear":
                taps = [(clampi(lo), 1 - (c - lo)), (clampi(lo + 1), c - lo)]
            else:
                taps = [(lo + j, cubic(j - (c - lo))) for j in range(-1, 3)]
                if exclude:
                    taps = [(i, w if 0 <= i < n_in else 0.0) for i, w in taps]
                    total = sum(w for _, w in taps)
                    taps = [(i, w / total) for i, w in taps]
                taps = [(clampi(i), w) for i, w in taps]
            per_axis.append(taps)
        if outside:
            out[pos] = extrapolation
            continue
        total = 0.0
        for combo in itertools.product(*per_axis):
            w = np.prod([t[1] for t in combo])
            if w == 0:
                continue
            idx = list(pos)
            for k, d in enumerate(axes):
                idx[d] = combo[k][0]
            total += w * x64[tuple(idx)]
        out[pos] = total
    return out


x = nn_f32(1, 2, 3, 4)
case("R.resize(a, R.shape([1, 2, 7, 5]), axes=[2, 3])", [x], resize(x, (1, 2, 7, 5), [2, 3], "nearest"))
case("R.resize(a, R.shape([1, 2, 5, 9]), axes=[2, 3], method=\"linear\", coordinate_transformation_mode=\"asymmetric\", "
     "scales=[1.7, 2.2])", [x], resize(x, (1, 2, 5, 9), [2, 3], "linear", mode="asymmetric", scales=[1.7, 2.2]))
case("R.resize(a, R.shape([1, 2, 6, 3]), axes=[2, 3], method=\"cubic\", exclude_outside=true, cubic_coeff_a=-0.5)",
     [x], resize(x, (1, 2, 6, 3), [2, 3], "cubic", a=-0.5, exclude=True))
case("R.resize(a, R.shape([1, 2, 4, 4]), axes=[2, 3], method=\"cubic\", coordinate_transformation_mode=\"align_corners\")",
     [x], resize(x, (1, 2, 4, 4), [2, 3], "cubic", mode="align_corners"))
case("R.resize(a, R.shape([1, 2, 5, 3]), axes=[2, 3], method=\"linear\", coordinate_transformation_mode=\"tf_crop_and_resize\", "
     "roi=[-0.3, 0.2, 0.9, 1.4], extrapolation_value=5.0)", [x],
     resize(x, (1, 2, 5, 3), [2, 3], "linear", mode="tf_crop_and_resize", roi=[-0.3, 0.2, 0.9, 1.4], extrapolation=5.0))
case("R.resize(a, R.shape([2, 2, 3, 6]), method=\"nearest\", coordinate_transformation_mode=\"pytorch_half_pixel\", "
     "nearest_mode=\"round_prefer_ceil\")", [x],
     resize(x, (2, 2, 3, 6), [0, 1, 2, 3], "nearest", mode="pytorch_half_pixel", nearest="round_prefer_ceil"))
# With scales, align_corners uses the unrounded length in * scale (ONNX's reference).
case("R.resize(a, R.shape([1, 2, 1, 2]), axes=[2, 3], method=\"linear\", coordinate_transformation_mode=\"align_corners\", "
     "scales=[0.6, 0.6])", [x], resize(x, (1, 2, 1, 2), [2, 3], "linear", mode="align_corners", scales=[0.6, 0.6]))

# Elementwise math: NumPy's functions on float32 inputs computed in float64, special values
# included; round is half to even; floor_divide / mod follow Python, fmod C. Their own
# generator, so that cases added above do not change them.
math_rng = np.random.default_rng(20261127)


def math_f32(*shape):
    return math_rng.uniform(-2, 2, size=shape).astype(np.float32)


with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
    x = np.concatenate([math_f32(20) * 3, np.array([0, -0.0, nan, inf, -inf, 1e-30, -1e30, 1e6, 123456.7],
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
    u = np.concatenate([math_rng.uniform(-1.2, 1.2, size=12).astype(np.float32),
                        np.array([1, -1, 0, -0.0, nan, inf], dtype=np.float32)])
    for name, fn in [("asin", np.arcsin), ("acos", np.arccos), ("atanh", np.arctanh)]:
        case(f"R.{name}(a)", [u], fn(u.astype(np.float64)))
    v = np.concatenate([math_rng.uniform(-1.5, 40, size=12).astype(np.float32),
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
    p = math_rng.integers(0, 2, size=(3, 4)).astype(np.bool_)
    q = math_rng.integers(0, 2, size=(4,)).astype(np.bool_)
    case("R.logical_and(a, b)", [p, q], np.logical_and(p, q))
    case("R.logical_or(a, b)", [p, q], np.logical_or(p, q))
    case("R.logical_xor(a, b)", [p, q], np.logical_xor(p, q))
    case("R.logical_not(a)", [p], np.logical_not(p))
    m = math_rng.integers(-2 ** 40, 2 ** 40, size=(6,)).astype(np.int64)
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
