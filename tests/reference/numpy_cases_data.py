"""NumPy cases of the data-movement and indexing operators (gather/scatter, one_hot, pad,
tile, flip, trilu, cumsum, sort, einsum, ...), added to numpy_cases.inc by
make_numpy_cases.py. A separate generator keeps their random draws from shifting the other
cases' inputs."""
import numpy as np

rng = np.random.default_rng(20261126)


def f32(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def i64(lo, hi, *shape):
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def gather_nd(data, indices, batch_dims=0):
    # ONNX GatherND written with NumPy indexing, one batch position at a time.
    bshape = indices.shape[:batch_dims]
    k = indices.shape[-1]
    out = []
    for b in np.ndindex(*bshape):
        d, idx = data[b], indices[b]
        out.append(d[tuple(np.moveaxis(idx, -1, 0))] if k else d)
    out = np.array(out)
    return out.reshape(bshape + indices.shape[batch_dims:-1] + data.shape[batch_dims + k:])


def scatter_nd(data, indices, updates, ufunc=None):
    out = data.copy()
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((flat_idx.shape[0],) + data.shape[k:])
    for i, u in zip(flat_idx, flat_upd):
        if ufunc is None:
            out[tuple(i)] = u
        else:
            ufunc.at(out, tuple(i), u)
    return out


def scatter_elements(data, indices, updates, axis, ufunc=None):
    out = data.copy()
    for u in np.ndindex(*indices.shape):
        at = list(u)
        at[axis] = indices[u]
        if ufunc is None:
            out[tuple(at)] = updates[u]
        else:
            ufunc.at(out, tuple(at), updates[u])
    return out


def add_cases(case):
    x = f32(3, 4, 5)
    idx = i64(-4, 4, 3, 6, 5)
    case("R.gather_elements(a, b, axis=1)", [x, idx], np.take_along_axis(x, idx % 4, axis=1))
    idx = i64(-5, 5, 2, 3, 5)
    case("R.gather_elements(a, b, axis=-1)", [x, idx], np.take_along_axis(x[:2, :3], idx % 5, axis=-1))
    idx = i64(-3, 3, 2, 4, 2)
    case("R.gather_nd(a, b)", [x, idx], gather_nd(x, idx % [3, 4]))
    idx = i64(-4, 4, 3, 2, 1)
    case("R.gather_nd(a, b, batch_dims=1)", [x, idx], gather_nd(x, idx % 4, 1))
    idx = i64(0, 3, 2, 3)
    case("R.gather_nd(a, b)", [x, idx], gather_nd(x, idx))

    d = f32(4, 5)
    idx = i64(-4, 4, 3, 5)
    u = f32(3, 5)
    case("R.scatter_elements(a, b, c)", [d, idx, u], scatter_elements(d, idx % 4, u, 0))
    case("R.scatter_elements(a, b, c, reduction=\"add\")", [d, idx, u],
         scatter_elements(d.astype(np.float64), idx % 4, u, 0, np.add))
    idx = i64(-5, 5, 4, 7)
    u = f32(4, 7)
    case("R.scatter_elements(a, b, c, axis=1, reduction=\"mul\")", [d, idx, u],
         scatter_elements(d.astype(np.float64), idx % 5, u, 1, np.multiply))
    case("R.scatter_elements(a, b, c, axis=1, reduction=\"max\")", [d, idx, u],
         scatter_elements(d, idx % 5, u, 1, np.maximum))
    case("R.scatter_elements(a, b, c, axis=1, reduction=\"min\")", [d, idx, u],
         scatter_elements(d, idx % 5, u, 1, np.minimum))

    d = f32(4, 5, 3)
    idx = i64(-4, 4, 6, 1)
    u = f32(6, 5, 3)
    case("R.scatter_nd(a, b, c, reduction=\"add\")", [d, idx, u], scatter_nd(d.astype(np.float64), idx % 4, u, np.add))
    idx = np.stack([i64(-4, 4, 2, 3), i64(-5, 5, 2, 3)], axis=-1)
    u = f32(2, 3, 3)
    case("R.scatter_nd(a, b, c)", [d, idx, u], scatter_nd(d, idx % [4, 5], u))
    case("R.scatter_nd(a, b, c, reduction=\"mul\")", [d, idx, u],
         scatter_nd(d.astype(np.float64), idx % [4, 5], u, np.multiply))

    idx = i64(-6, 7, 3, 4)
    eye = np.eye(5)
    hot = np.where(((idx >= -5) & (idx < 5))[..., None], eye[idx % 5], 0.0)
    case("R.one_hot(a, depth=5)", [idx], hot)
    case("R.one_hot(a, depth=5, axis=0, on_value=3.0, off_value=-1.0, dtype=float64)", [idx],
         np.moveaxis(hot * 4 - 1, -1, 0))

    def onnx_pad(x, pads, mode="constant", value=0.0):
        # ONNX's reference: negative pads crop, then np.pad.
        r = x.ndim
        sl = tuple(slice(max(-pads[d], 0), x.shape[d] - max(-pads[d + r], 0)) for d in range(r))
        width = [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)]
        if mode == "constant":
            return np.pad(x[sl], width, mode="constant", constant_values=value)
        return np.pad(x[sl], width, mode=mode)

    x = f32(3, 4)
    for pads, mode in [([1, 0, 2, 3], "constant"), ([0, 5, 0, 2], "reflect"), ([2, 1, 0, 3], "edge"),
                       ([1, -1, 3, 4], "wrap"), ([-1, 2, 1, -2], "reflect"), ([4, 9, 5, 7], "reflect")]:
        call = "R.pad(a, pads=[%s], mode=\"%s\"%s)" % (", ".join(map(str, pads)), mode,
                                                       ", pad_value=2.5" if mode == "constant" else "")
        case(call, [x], onnx_pad(x, pads, mode, 2.5))
    x = f32(2, 3, 5)
    case("R.pad(a, pads=[-1, 2, 1, 0, -1, -3])", [x], onnx_pad(x, [-1, 2, 1, 0, -1, -3]))
    case("R.pad(a, pads=[0, 0, 3, 0, 0, 4], mode=\"reflect\")", [x[:, :1]], onnx_pad(x[:, :1], [0, 0, 3, 0, 0, 4], "reflect"))
    case("R.tile(a, repeats=[2, 1, 3])", [x], np.tile(x, (2, 1, 3)))
    case("R.tile(a, repeats=[2])", [x], np.tile(x, 2))
    case("R.tile(a, repeats=[3, 1, 2, 1])", [x], np.tile(x, (3, 1, 2, 1)))
    case("R.flip(a, axis=[0, -1])", [x], np.flip(x, (0, 2)))
    case("R.flip(a)", [x], np.flip(x))
    x = f32(2, 4, 6)
    for k in [-5, -1, 0, 2, 7]:
        case("R.trilu(a, k=%d)" % k, [x], np.triu(x, k))
        case("R.trilu(a, upper=false, k=%d)" % k, [x], np.tril(x, k))
    x = f32(1, 3, 1, 2)
    case("R.squeeze(a)", [x], np.squeeze(x))
    case("R.squeeze(a, axis=[-2])", [x], np.squeeze(x, -2))
    case("R.expand_dims(a, axis=[0, 3, -1])", [x], np.expand_dims(x, (0, 3, -1)))

    x = f32(3, 7)
    case("R.cumsum(a, axis=1)", [x], np.cumsum(x.astype(np.float64), axis=1))
    case("R.cumsum(a, axis=0, reverse=true)", [x], np.flip(np.cumsum(np.flip(x.astype(np.float64), 0), 0), 0))
    case("R.cumsum(a, axis=1, exclusive=true)", [x], np.cumsum(x.astype(np.float64), axis=1) - x)
    case("R.cumsum(a, axis=-1, exclusive=true, reverse=true)", [x],
         np.flip(np.cumsum(np.flip(x.astype(np.float64), 1), 1), 1) - x)
    xi = i64(-9, 9, 4, 5)
    case("R.cumsum(a, axis=0)", [xi], np.cumsum(xi, axis=0))

    nan, inf = np.nan, np.inf
    s = np.array([[3, nan, -1, 3, -inf, 0, nan, inf, -0.0, 3],
                  [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]], dtype=np.float32)
    case("R.sort(a)", [s], np.sort(s, axis=-1, kind="stable"))
    case("R.argsort(a)", [s], np.argsort(s, axis=-1, kind="stable"))
    # Descending, NaN first, ties by index: a stable sort of the negated keys with NaN mapped
    # below -inf.
    neg = np.where(np.isnan(s), -np.inf, -s.astype(np.float64))
    neg_rank = np.where(np.isnan(s), 0, 1)  # NaN first
    order = np.lexsort((np.arange(s.shape[1])[None, :].repeat(2, 0), neg, neg_rank), axis=-1)
    case("R.argsort(a, descending=true)", [s], order)
    case("R.sort(a, descending=true)", [s], np.take_along_axis(s, order, axis=-1))
    case("R.topk(a, k=4)[0]", [s], np.take_along_axis(s, order[:, :4], axis=-1))
    case("R.topk(a, k=4)[1]", [s], order[:, :4])
    x = f32(6, 5)
    case("R.sort(a, axis=0)", [x], np.sort(x, axis=0, kind="stable"))
    case("R.argsort(a, axis=0)", [x], np.argsort(x, axis=0, kind="stable"))
    xi = i64(-3, 3, 4, 9)
    case("R.argsort(a, axis=1)", [xi], np.argsort(xi, axis=1, kind="stable"))
    case("R.topk(a, k=3, largest=false)[0]", [xi], np.sort(xi, axis=1, kind="stable")[:, :3])
    case("R.topk(a, k=3, largest=false)[1]", [xi], np.argsort(xi, axis=1, kind="stable")[:, :3])

    a, b = f32(2, 3, 4), f32(2, 4, 5)
    case("R.einsum((a, b), subscripts=\"bij, bjk -> bik\")", [a, b], np.einsum("bij,bjk->bik", a, b))
    x = f32(3, 5, 5)
    case("R.einsum((a,), subscripts=\"...ii ->...i\")", [x], np.einsum("...ii->...i", x))
    u, v = f32(5), f32(5)
    case("R.einsum((a, b), subscripts=\"i,i\")", [u, v], np.einsum("i,i", u.astype(np.float64), v))
    x = f32(3, 4)
    case("R.einsum((a,), subscripts=\"ij->i\")", [x], np.einsum("ij->i", x.astype(np.float64)))
    case("R.einsum((a,), subscripts=\"ij->ji\")", [x], np.einsum("ij->ji", x))
    case("R.einsum((a,), subscripts=\"ij\")", [x], np.einsum("ij", x))
    case("R.einsum((a,), subscripts=\"ji\")", [x], np.einsum("ji", x))
    a, b, c = f32(4, 1, 3), f32(2, 3, 2), f32(2)
    case("R.einsum((a, b, c), subscripts=\"...j,...jk,k\")", [a, b, c],
         np.einsum("...j,...jk,k", a.astype(np.float64), b, c))
    a, b = f32(2, 3, 3), f32(3, 2)
    case("R.einsum((a, b), subscripts=\"bii,iB->Bb\")", [a, b], np.einsum("bii,iB->Bb", a.astype(np.float64), b))
    a = i64(-5, 5, 3, 4)
    case("R.einsum((a, a), subscripts=\"ij,kj->ik\")", [a, a], np.einsum("ij,kj->ik", a, a))

    x = f32(5, 6, 7)
    big = np.iinfo(np.int64)
    for begin, end, strides, axes in [([1, -2], [100, 0], [2, -1], [1, 2]),
                                      ([big.min, 4], [big.max, -100], [1, -2], [0, 1]),
                                      ([-1, 0, 3], [-100, 6, 3], [-3, 5, 1], [0, 1, 2])]:
        sl = [slice(None)] * 3
        for b, e, s, a in zip(begin, end, strides, axes):
            sl[a] = slice(b, e, s)
        args = [x, np.array(begin, np.int64), np.array(end, np.int64), np.array(strides, np.int64)]
        case("R.dynamic_strided_slice(a, b, c, d, axes=[%s])" % ", ".join(map(str, axes)), args, x[tuple(sl)])
    case("R.dynamic_strided_slice(a, b, c, d)", [x, np.array([2], np.int64), np.array([-1], np.int64),
                                                 np.array([1], np.int64)], x[2:-1])
