"""Spec cases for the scatter/gather, data-shaped, quantisation, loss and window ops
of the reference interpreter (tests/compiler/test_interp_scatter.cpp).

Usage: gen_cases.py OUT_DIR

One folder per case in the ONNX test-data layout (model.onnx,
test_data_set_0/input_K.pb, output_K.pb). Expected outputs are computed here with
plain numpy loops written from the ONNX operator spec (never onnx.reference or
trnsim), covering modes the packaged ONNX node tests do not: reductions with
duplicate indices, negative indices, batch_dims, OneHot out-of-range indices,
unsorted Unique, round-half-to-even and saturation in quantisation, per-axis
parameters, ignore_index. A case with an `expect_error` file must be refused with
an error containing that text (and naming the node) instead.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OUT = sys.argv[1]
CASES = []
F32 = np.float32
rng = np.random.default_rng(11)


def case(name, op, inputs, outputs, attrs=None, opset=17, error=None, consts=None):
    """One single-node model. inputs: arrays (None = omitted optional input);
    consts: {input index: True} for inputs stored as initializers."""
    CASES.append((name, op, inputs, outputs, attrs or {}, opset, error, consts or {}))


def write_case(name, op, inputs, outputs, attrs, opset, error, consts):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    in_names, g_inputs, feeds, inits = [], [], [], []
    for k, a in enumerate(inputs):
        if a is None:
            in_names.append("")
            continue
        nm = "in%d" % k
        in_names.append(nm)
        a = np.asarray(a)
        if consts.get(k):
            inits.append(numpy_helper.from_array(a, nm))
            continue
        g_inputs.append(helper.make_tensor_value_info(
            nm, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(a.dtype)], list(a.shape)))
        feeds.append((nm, a))
    out_names = ["out%d" % k for k in range(len(outputs))]
    g_outputs = [helper.make_tensor_value_info(
        nm, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(np.asarray(outputs[k]).dtype)], None)
        for k, nm in enumerate(out_names)]
    node = helper.make_node(op, in_names, out_names, name="n_" + name, **attrs)
    graph = helper.make_graph([node], name, g_inputs, g_outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (nm, a) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, nm).SerializeToString())
    if error:
        with open(os.path.join(d, "expect_error"), "w") as f:
            f.write(error)
    for k, o in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(o), out_names[k]).SerializeToString())


def f32(x):
    return np.asarray(x, dtype=F32)


def i64(x):
    return np.asarray(x, dtype=np.int64)


def rnd(*shape):
    return rng.uniform(-3, 3, size=shape).astype(F32)


REDUCE = {"none": lambda d, u: u, "add": lambda d, u: d + u, "mul": lambda d, u: d * u}


# ------------------------------------------------------------ ScatterElements
def scatter_elements(data, ind, upd, axis, red="none"):
    """out[idx with idx[axis] = ind[idx]] (op)= upd[idx], in row-major order."""
    out = data.copy()
    axis %= data.ndim
    for idx in np.ndindex(*ind.shape):
        t = list(idx)
        i = int(ind[idx])
        t[axis] = i + data.shape[axis] if i < 0 else i
        out[tuple(t)] = REDUCE[red](out[tuple(t)], upd[idx])
    return out


d = rnd(3, 4)
ind = i64([[1, -1, 0, 2], [2, 0, -3, 1]])
u = rnd(2, 4)
case("scatter_elements_axis0_negative", "ScatterElements", [d, ind, u],
     [scatter_elements(d, ind, u, 0)], {"axis": 0}, opset=13)
ind = i64([[0, 0, 3], [1, 1, 1], [2, 0, 2]])
u = rnd(3, 3)
for red in ("add", "mul"):
    case("scatter_elements_dup_" + red, "ScatterElements", [d, ind, u],
         [scatter_elements(d, ind, u, 1, red)], {"axis": 1, "reduction": red}, opset=16)
di = np.arange(12, dtype=np.int32).reshape(3, 4)
ui = np.asarray([[5, -7, 9]], dtype=np.int32)
case("scatter_elements_int32_add", "ScatterElements", [di, i64([[3, 3, 0]]), ui],
     [scatter_elements(di, i64([[3, 3, 0]]), ui, -1, "add")], {"axis": -1, "reduction": "add"},
     opset=16)
d3 = rnd(2, 3, 4)
ind3 = i64(rng.integers(-3, 3, size=(2, 2, 3)))
u3 = rnd(2, 2, 3)
case("scatter_elements_3d_axis_m2", "ScatterElements", [d3, ind3, u3],
     [scatter_elements(d3, ind3, u3, -2)], {"axis": -2})
lu = rnd(1, 4)
case("scatter_legacy_opset10", "Scatter", [d, i64([[2, 0, 1, 2]]), lu],
     [scatter_elements(d, i64([[2, 0, 1, 2]]), lu, 0)], {"axis": 0}, opset=10)
case("scatter_elements_index_out_of_range", "ScatterElements", [d, i64([[0, 4]]), rnd(1, 2)],
     [d], {"axis": 1}, error="index 4 is out of range for a dim of size 4")
case("scatter_elements_index_below_range", "ScatterElements", [d, i64([[-4]]), rnd(1, 1)],
     [d], {"axis": 0}, error="index -4 is out of range for a dim of size 3")
case("scatter_elements_bad_reduction", "ScatterElements", [d, i64([[0]]), rnd(1, 1)],
     [d], {"axis": 0, "reduction": "sub"}, opset=16, error="reduction must be")


# ------------------------------------------------------------------ ScatterND
def scatter_nd(data, ind, upd, red="none"):
    out = data.copy()
    k = ind.shape[-1]
    for idx in np.ndindex(*ind.shape[:-1]):
        t = tuple(int(i) + (data.shape[j] if i < 0 else 0) for j, i in enumerate(ind[idx]))
        out[t] = REDUCE[red](out[t], upd[idx])
    return out


d = rnd(4, 3, 2)
ind = i64([[1, 2], [3, 0], [1, 2], [-1, -3]])
u = rnd(4, 2)
for red in ("none", "add", "mul"):
    case("scatternd_elems_dup_" + red, "ScatterND", [d, ind, u],
         [scatter_nd(d, ind, u, red)], {"reduction": red} if red != "none" else {},
         opset=16)
ind = i64([[[2]], [[0]]])
u = rnd(2, 1, 3, 2)
case("scatternd_slices", "ScatterND", [d, ind, u], [scatter_nd(d, ind, u)], opset=13)
dl = np.arange(6, dtype=np.int64).reshape(2, 3)
case("scatternd_int64_full_index", "ScatterND", [dl, i64([[1, 1], [0, -1]]), i64([70, 80])],
     [scatter_nd(dl, i64([[1, 1], [0, -1]]), i64([70, 80]))], opset=13)
case("scatternd_index_out_of_range", "ScatterND", [d, i64([[4, 0]]), rnd(1, 2)], [d],
     opset=13, error="index 4 is out of range for a dim of size 4")
case("scatternd_bad_updates", "ScatterND", [d, i64([[1, 0]]), rnd(1, 3)], [d], opset=13,
     error="updates")


# ------------------------------------------------------------------- GatherND
def gather_nd(data, ind, b=0):
    bshape = ind.shape[:b]
    k = ind.shape[-1]
    out = np.zeros(ind.shape[:-1] + data.shape[b + k:], data.dtype)
    for idx in np.ndindex(*ind.shape[:-1]):
        src = data[idx[:b]]
        t = tuple(int(i) + (src.shape[j] if i < 0 else 0) for j, i in enumerate(ind[idx]))
        out[idx] = src[t]
    return out


g = rnd(3, 4, 2)
for nm, ind, b in [("k1", i64([[2], [-1], [0]]), 0), ("k2", i64([[[1, 3]], [[-3, 0]]]), 0),
                   ("k3", i64([[2, 3, 1], [0, 0, 0]]), 0),
                   ("batch1", i64([[[1, 0], [3, 1]], [[0, 1], [2, 0]], [[3, 1], [-4, 0]]]), 1),
                   ("batch2", i64([[[1], [0], [1], [0]], [[0], [0], [1], [1]],
                                   [[1], [1], [0], [0]]]), 2)]:
    case("gathernd_" + nm, "GatherND", [g, ind], [gather_nd(g, ind, b)], {"batch_dims": b},
         opset=13)
case("gathernd_index_out_of_range", "GatherND", [g, i64([[2, 4]])], [g[:1, 0]], opset=13,
     error="index 4 is out of range for a dim of size 4")
case("gathernd_batch_mismatch", "GatherND", [g, i64([[0], [1]])], [g[:2, 0]],
     {"batch_dims": 1}, opset=13, error="batch dim 0 differs")


# --------------------------------------------------------------------- OneHot
def one_hot(ind, depth, values, axis=-1):
    r = ind.ndim
    axis = axis + r + 1 if axis < 0 else axis
    out = np.empty(ind.shape[:axis] + (depth,) + ind.shape[axis:], values.dtype)
    for idx in np.ndindex(*out.shape):
        d = idx[axis]
        src = idx[:axis] + idx[axis + 1:]
        v = int(np.trunc(ind[src]))
        hot = -depth <= v < depth and (v % depth) == d
        out[idx] = values[1] if hot else values[0]
    return out


oi = i64([[0, 3, -1], [-4, 5, 2]])
vals = f32([-1.0, 2.0])
for axis in (-1, 0, 1, -3):
    case("onehot_axis%s" % str(axis).replace("-", "m"), "OneHot", [oi, i64(4), vals],
         [one_hot(oi, 4, vals, axis)], {"axis": axis}, opset=11)
of = f32([1.7, -0.5, -2.2, 3.9])
vi = np.asarray([0, 7], dtype=np.int32)
case("onehot_float_indices_int_values", "OneHot", [of, f32(4.0), vi], [one_hot(of, 4, vi)],
     opset=11)
case("onehot_depth_initializer", "OneHot", [oi, i64([3]), vals], [one_hot(oi, 3, vals)],
     opset=11, consts={1: True})
case("onehot_bad_values", "OneHot", [oi, i64(4), f32([1, 2, 3])], [vals], opset=11,
     error="must be [2]")


# ----------------------------------------------------------- NonZero / Unique
nz = f32([[[0, 1.5], [0, 0]], [[-2, 0], [0, 3]]])
case("nonzero_3d", "NonZero", [nz], [i64(np.array(np.nonzero(nz)))], opset=13)
case("nonzero_none", "NonZero", [np.zeros((2, 3), np.int32)], [np.zeros((2, 0), np.int64)],
     opset=13)
case("nonzero_initializer", "NonZero", [np.asarray([True, False, True])],
     [i64([[0, 2]])], opset=13, consts={0: True})


def unique(x, axis=None, sorted_=True):
    """Slices (elements) of x, by first occurrence or ascending."""
    if axis is None:
        slices = [x.reshape(-1)[i:i + 1] for i in range(x.size)]
    else:
        slices = [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    keys, first, inv, counts = [], [], [], []
    for i, s in enumerate(slices):
        key = tuple(s.reshape(-1).tolist())
        if key in keys:
            inv.append(keys.index(key))
            counts[keys.index(key)] += 1
        else:
            keys.append(key)
            first.append(i)
            counts.append(1)
            inv.append(len(keys) - 1)
    order = list(range(len(keys)))
    if sorted_:
        order.sort(key=lambda g: keys[g])
    rank = {g: r for r, g in enumerate(order)}
    if axis is None:
        y = np.asarray([keys[g][0] for g in order], x.dtype)
    else:
        y = np.stack([slices[first[g]] for g in order], axis=axis)
    return [y, i64([first[g] for g in order]), i64([rank[g] for g in inv]),
            i64([counts[g] for g in order])]


ux = f32([3, 1, 3, -2, 1, 7, 3])
case("unique_sorted", "Unique", [ux], unique(ux), opset=11)
case("unique_unsorted", "Unique", [ux], unique(ux, sorted_=False), {"sorted": 0}, opset=11)
um = np.asarray([[2, 1, 2, 1], [0, 5, 0, 5], [2, 1, 2, 1]], dtype=np.int64)
case("unique_axis0_int", "Unique", [um], unique(um, 0), {"axis": 0}, opset=11)
case("unique_axis_m1_unsorted", "Unique", [um], unique(um, 1, False), {"axis": -1, "sorted": 0},
     opset=11)
u3 = np.asarray(rng.integers(0, 2, size=(2, 5, 2)), dtype=F32)
case("unique_3d_axis1", "Unique", [u3], unique(u3, 1), {"axis": 1}, opset=11)
case("unique_only_y", "Unique", [ux], unique(ux)[:1], opset=11)


# ------------------------------------------------------------------- Compress
cx = rnd(3, 4)
for nm, cond, axis in [("axis0", [1, 0, 1], 0), ("axis1_short", [0, 1, 1], 1),
                       ("axis_m1_none", [0, 0, 0, 0], -1), ("flat", [1, 0, 0, 1, 1, 0, 1], None)]:
    c = np.asarray(cond, bool)
    if axis is None:
        want = cx.reshape(-1)[:len(c)][c]
    else:
        idx = [i for i in range(len(c)) if c[i]]
        want = np.take(cx, idx, axis=axis)
    case("compress_" + nm, "Compress", [cx, c], [f32(want)],
         {} if axis is None else {"axis": axis}, opset=11)
case("compress_condition_too_long", "Compress", [cx, np.ones(5, bool)], [cx], {"axis": 1},
     opset=11, error="condition has 5 entries")


# --------------------------------------------------------------------- CumSum
def cumsum(x, axis, exclusive=0, reverse=0):
    x = np.moveaxis(x, axis, -1)
    out = np.zeros_like(x)
    n = x.shape[-1]
    for idx in np.ndindex(*x.shape[:-1]):
        acc = x.dtype.type(0)
        order = range(n - 1, -1, -1) if reverse else range(n)
        for j in order:
            if not exclusive:
                acc = acc + x[idx + (j,)]
            out[idx + (j,)] = acc
            if exclusive:
                acc = acc + x[idx + (j,)]
    return np.moveaxis(out, -1, axis)


cs = rnd(2, 3, 4)
for ex in (0, 1):
    for rv in (0, 1):
        case("cumsum_axis_input_e%d_r%d" % (ex, rv), "CumSum", [cs, i64(-2)],
             [cumsum(cs, 1, ex, rv)], {"exclusive": ex, "reverse": rv}, opset=14)
ci32 = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
case("cumsum_int32_axis_int32", "CumSum", [ci32, np.int32(0)], [cumsum(ci32, 0)], opset=14)


# --------------------------------------------------------------- quantisation
def saturate(v, dt):
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    return np.clip(v, lo, hi).astype(dt)


def quantize(x, scale, zp, dt, axis=1):
    """y = saturate(round_half_even(x / scale) + zp), scale per axis when 1-D."""
    x = x.astype(F32)
    shape = [1] * x.ndim
    if np.asarray(scale).size > 1:
        shape[axis] = -1
    s = np.asarray(scale, F32).reshape(shape if np.asarray(scale).size > 1 else ())
    z = np.asarray(zp, np.int64).reshape(shape if np.asarray(zp).size > 1 else ())
    return saturate(np.rint(x / s).astype(np.int64) + z, dt)


halves = f32([0.5, 1.5, 2.5, -0.5, -1.5, 3.5, 1000, -1000, 254.5, 0.0])
case("quantize_half_even_uint8", "QuantizeLinear", [halves, f32(1.0), np.uint8(0)],
     [quantize(halves, 1.0, 0, np.uint8)], opset=13)
case("quantize_half_even_int8", "QuantizeLinear", [halves * 0.5, f32(0.5), np.int8(-3)],
     [quantize(halves * 0.5, 0.5, -3, np.int8)], opset=13)
case("quantize_no_zero_point", "QuantizeLinear", [halves, f32(2.0)],
     [quantize(halves, 2.0, 0, np.uint8)], opset=13)
qx = rnd(2, 3, 2, 2) * 40
qs = f32([0.5, 0.25, 1.0])
qz = np.asarray([-5, 0, 7], np.int8)
case("quantize_per_axis_int8", "QuantizeLinear", [qx, qs, qz],
     [quantize(qx, qs, qz, np.int8, 1)], opset=13)
qs0 = f32([0.3, 0.7])
qz0 = np.asarray([128, 100], np.uint8)
case("quantize_per_axis0_uint8", "QuantizeLinear", [qx, qs0, qz0],
     [quantize(qx, qs0, qz0, np.uint8, 0)], {"axis": 0}, opset=13)
case("quantize_bad_scale", "QuantizeLinear", [qx, f32([1, 2]), np.asarray([1, 2], np.uint8)],
     [qx.astype(np.uint8)], opset=13, error="scale")


def dequantize(x, scale, zp, axis=1):
    shape = [1] * x.ndim
    if np.asarray(scale).size > 1:
        shape[axis] = -1
    s = np.asarray(scale, F32).reshape(shape if np.asarray(scale).size > 1 else ())
    z = np.asarray(zp, np.int64).reshape(shape if np.asarray(zp).size > 1 else ())
    return ((x.astype(np.int64) - z).astype(F32) * s).astype(F32)


dq = np.asarray(rng.integers(-128, 128, size=(2, 3, 4)), np.int8)
case("dequantize_int8", "DequantizeLinear", [dq, f32(0.125), np.int8(-7)],
     [dequantize(dq, 0.125, -7)], opset=13)
dz = np.asarray([1, -2, 3], np.int8)
case("dequantize_per_axis", "DequantizeLinear", [dq, f32([0.5, 2, 0.1]), dz],
     [dequantize(dq, [0.5, 2, 0.1], dz, 1)], opset=13)
d32 = np.asarray([-100000, 0, 7, 2 ** 20], np.int32)
case("dequantize_int32", "DequantizeLinear", [d32, f32(0.5)], [dequantize(d32, 0.5, 0)],
     opset=13)


def dynamic_quantize(x):
    lo = min(F32(0), x.min())
    hi = max(F32(0), x.max())
    scale = F32((hi - lo) / F32(255))
    zp = np.rint(np.clip(F32(0) - lo / scale, 0, 255)).astype(np.uint8)
    y = saturate(np.rint(x / scale).astype(np.int64) + int(zp), np.uint8)
    return [y, np.asarray(scale, F32), np.asarray(zp, np.uint8)]


for nm, x in [("mixed", rnd(3, 5)), ("positive", np.abs(rnd(7)) + 1),
              ("negative", -np.abs(rnd(2, 2)) - 0.5)]:
    case("dynamic_quantize_" + nm, "DynamicQuantizeLinear", [x], dynamic_quantize(x), opset=11)


def matmul_int(a, b, azp, bzp):
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    azp = np.asarray(azp, np.int64)
    bzp = np.asarray(bzp, np.int64)
    if azp.ndim == 1 and azp.size > 1:
        azp = azp.reshape(-1, 1)
    return np.matmul(a - azp, b - bzp)


ma = np.asarray(rng.integers(0, 256, size=(3, 5)), np.uint8)
mb = np.asarray(rng.integers(0, 256, size=(5, 4)), np.uint8)
case("matmulinteger_scalar_zp", "MatMulInteger", [ma, mb, np.uint8(12), np.uint8(200)],
     [matmul_int(ma, mb, 12, 200).astype(np.int32)], opset=10)
sa = np.asarray(rng.integers(-128, 128, size=(2, 3, 5)), np.int8)
sb = np.asarray(rng.integers(-128, 128, size=(5, 4)), np.int8)
azp = np.asarray([1, -3, 5], np.int8)
bzp = np.asarray([0, 2, -2, 9], np.int8)
case("matmulinteger_per_row_col", "MatMulInteger", [sa, sb, azp, bzp],
     [matmul_int(sa, sb, azp, bzp).astype(np.int32)], opset=10)
case("matmulinteger_no_zp", "MatMulInteger", [sa, sb], [matmul_int(sa, sb, 0, 0).astype(np.int32)],
     opset=10)


def requant(acc, mult, yzp, dt):
    return saturate(np.rint(acc.astype(np.float64) * mult).astype(np.int64) + int(yzp), dt)


qa = np.asarray(rng.integers(-128, 128, size=(2, 6)), np.int8)
qb = np.asarray(rng.integers(-128, 128, size=(6, 3)), np.int8)
acc = matmul_int(qa, qb, -4, 3)
mult = (F32(0.02) * F32(0.03) / F32(0.05)).astype(F32)
case("qlinearmatmul_int8", "QLinearMatMul",
     [qa, f32(0.02), np.int8(-4), qb, f32(0.03), np.int8(3), f32(0.05), np.int8(10)],
     [requant(acc, float(mult), 10, np.int8)], opset=10)


def conv_int(x, w, xzp, wzp, pads, strides, group=1):
    """Direct convolution of (x - xzp) and (w - wzp[m]), padding 0 after the
    zero point is taken off. 2-D only."""
    x = x.astype(np.int64) - int(xzp)
    w = w.astype(np.int64)
    wz = np.asarray(wzp, np.int64).reshape(-1)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for b in range(n):
        for o in range(m):
            gi = o // mg
            wo = w[o] - (wz[o] if wz.size > 1 else wz[0])
            for i in range(oh):
                for j in range(ow):
                    win = xp[b, gi * cg:(gi + 1) * cg, i * strides[0]:i * strides[0] + kh,
                             j * strides[1]:j * strides[1] + kw]
                    y[b, o, i, j] = (win * wo).sum()
    return y


cx8 = np.asarray(rng.integers(0, 256, size=(1, 4, 5, 5)), np.uint8)
cw8 = np.asarray(rng.integers(0, 256, size=(6, 2, 3, 2)), np.uint8)
cwz = np.asarray([3, 250, 128, 0, 7, 9], np.uint8)
case("convinteger_group_pads_strides", "ConvInteger", [cx8, cw8, np.uint8(17), cwz],
     [conv_int(cx8, cw8, 17, cwz, [1, 0, 2, 1], [2, 1], 2).astype(np.int32)],
     {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1]}, opset=10)
case("convinteger_same_upper", "ConvInteger", [cx8[:, :2], cw8[:2], np.uint8(5)],
     [conv_int(cx8[:, :2], cw8[:2], 5, 0, [1, 0, 1, 1], [1, 1]).astype(np.int32)],
     {"auto_pad": "SAME_UPPER"}, opset=10)
qx8 = np.asarray(rng.integers(-128, 128, size=(2, 2, 4, 4)), np.int8)
qw8 = np.asarray(rng.integers(-128, 128, size=(3, 2, 2, 2)), np.int8)
qwz = np.asarray([0, 2, -1], np.int8)
qws = f32([0.01, 0.02, 0.005])
qbias = np.asarray([100, -2000, 0], np.int32)
acc = conv_int(qx8, qw8, -3, qwz, [1, 1, 0, 0], [1, 1]) + qbias.reshape(1, 3, 1, 1)
mult = (F32(0.05) * qws / F32(0.2)).astype(F32).reshape(1, 3, 1, 1).astype(np.float64)
want = saturate(np.rint(acc.astype(np.float64) * mult).astype(np.int64) + 5, np.int8)
case("qlinearconv_per_channel_bias", "QLinearConv",
     [qx8, f32(0.05), np.int8(-3), qw8, qws, qwz, f32(0.2), np.int8(5), qbias], [want],
     {"pads": [1, 1, 0, 0]}, opset=10)


# ------------------------------------------------------------ ReverseSequence
def reverse_sequence(x, lens, batch_axis, time_axis):
    out = x.copy()
    for b, n in enumerate(lens):
        for t in range(n):
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            src[batch_axis] = dst[batch_axis] = b
            src[time_axis] = n - 1 - t
            dst[time_axis] = t
            out[tuple(dst)] = x[tuple(src)]
    return out


rs = rnd(4, 3, 2)
for nm, lens, ba, ta in [("time0", [4, 0, 2], 1, 0), ("batch0", [1, 3, 2, 3], 0, 1)]:
    case("reversesequence_" + nm, "ReverseSequence", [rs, i64(lens)],
         [reverse_sequence(rs, lens, ba, ta)], {"batch_axis": ba, "time_axis": ta}, opset=10)
case("reversesequence_len_too_long", "ReverseSequence", [rs, i64([5, 1, 1])], [rs],
     {"batch_axis": 1, "time_axis": 0}, opset=10, error="sequence_lens[0] = 5")


# --------------------------------------------------------------------- losses
def nll(lp, t, w=None, ii=None, red="mean"):
    n, c = lp.shape[:2]
    loss = np.zeros(t.shape, np.float64)
    wsum = 0.0
    for idx in np.ndindex(*t.shape):
        cls = int(t[idx])
        if ii is not None and cls == ii:
            continue
        wc = 1.0 if w is None else float(w[cls])
        loss[idx] = -float(lp[(idx[0], cls) + idx[1:]]) * wc
        wsum += wc
    if red == "none":
        return f32(loss)
    return f32(loss.sum() if red == "sum" else loss.sum() / wsum)


lx = rnd(3, 4, 2)
lt = i64([[0, 3], [2, 2], [1, 0]])
lw = f32([0.5, 1.0, 2.0, 0.25])
for nm, w, ii, red in [("mean_weight_ii", lw, 2, "mean"), ("sum", None, None, "sum"),
                       ("none_ii_negative", None, -1, "none")]:
    t = lt.copy()
    if ii == -1:
        t[1, 0] = -1
    attrs = {"reduction": red}
    if ii is not None:
        attrs["ignore_index"] = ii
    case("nllloss_" + nm, "NegativeLogLikelihoodLoss", [lx, t] + ([w] if w is not None else []),
         [nll(lx, t, w, ii, red)], attrs, opset=13)
    lse = np.log(np.exp(lx.astype(np.float64)).sum(1, keepdims=True))
    lp = f32(lx - lse)
    case("sce_" + nm, "SoftmaxCrossEntropyLoss", [lx, t] + ([w] if w is not None else []),
         [nll(lp, t, w, ii, red), lp], attrs, opset=13)
case("nllloss_target_out_of_range", "NegativeLogLikelihoodLoss", [lx, i64([[0, 4], [0, 0], [0, 0]])],
     [f32(0)], opset=13, error="target 4 is not a class in [0, 4)")


# -------------------------------------------------------------------- windows
def window(kind, n, periodic):
    a = {"Hann": (0.5, 0.5, 0.0), "Hamming": (25 / 46, 21 / 46, 0.0),
         "Blackman": (0.42, 0.5, 0.08)}[kind]
    L = n if periodic else n - 1
    i = np.arange(n, dtype=np.float64)
    ph = 2 * np.pi * i / L if L > 0 else 0 * i
    return f32(a[0] - a[1] * np.cos(ph) + a[2] * np.cos(2 * ph))


for kind in ("Hann", "Hamming", "Blackman"):
    for periodic in (0, 1):
        case("%swindow_%s" % (kind.lower(), "periodic" if periodic else "symmetric"),
             kind + "Window", [np.int64(7)], [window(kind, 7, periodic)], {"periodic": periodic})

for c in CASES:
    write_case(*c)
print(len(CASES))
