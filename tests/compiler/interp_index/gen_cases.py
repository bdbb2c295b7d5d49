"""Cases for the resampling and index ops of the reference interpreter
(tests/compiler/test_interp_index.cpp): Resize/Upsample, TopK, Einsum, GridSample,
RoiAlign, LRN, Shrink, EyeLike, Det, BitShift.

Usage: gen_cases.py OUT_DIR spec|torch

Writes one folder per case in the ONNX test-data layout (model.onnx,
test_data_set_0/input_K.pb, output_K.pb). `spec` cases compute the expected outputs
in numpy from the ONNX operator descriptions; `torch` cases take them from eager
PyTorch / torchvision (F.grid_sample, torchvision.ops.roi_align, F.interpolate,
torch.einsum, torch.topk), including one exported PyTorch model. Never through
trnsim or onnx.reference. A case with an `expect_error` file must be refused with
an error containing its text (and naming the node).
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OUT, KIND = sys.argv[1], sys.argv[2]
F32 = np.float32
rng = np.random.default_rng(11)
COUNT = [0]


def rnd(*shape):
    return rng.uniform(-3, 3, size=shape).astype(F32)


def _onnx_type(dt):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt)) if hasattr(
        helper, "np_dtype_to_tensor_dtype") else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)]


def write_data(d, feeds, outs):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    for k, (nm, a) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), nm).SerializeToString())
    for k, (nm, a) in enumerate(outs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), nm).SerializeToString())
    COUNT[0] += 1


def case(name, op, inputs, outputs, attrs=None, opset=17, error=None):
    """One single-node model named n_<name>; `inputs` may hold None (omitted)."""
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    in_names, g_in, feeds = [], [], []
    for k, a in enumerate(inputs):
        if a is None:
            in_names.append("")
            continue
        a = np.asarray(a)
        nm = "in%d" % k
        in_names.append(nm)
        g_in.append(helper.make_tensor_value_info(nm, _onnx_type(a.dtype), list(a.shape)))
        feeds.append((nm, a))
    out_names = ["out%d" % k for k in range(len(outputs))]
    g_out = [helper.make_tensor_value_info(nm, _onnx_type(np.asarray(o).dtype), None)
             for nm, o in zip(out_names, outputs)]
    node = helper.make_node(op, in_names, out_names, name="n_" + name, **(attrs or {}))
    model = helper.make_model(helper.make_graph([node], name, g_in, g_out),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.save(model, os.path.join(d, "model.onnx"))
    if error:
        with open(os.path.join(d, "expect_error"), "w") as f:
            f.write(error)
    write_data(d, feeds, list(zip(out_names, outputs)))


# ------------------------------------------------------------------ Resize (spec)
def resize_axis_matrix(n_in, n_out, scale, mode, ctm, nearest_mode, a, exclude, roi):
    """Weights [n_out, n_in] of one axis and the rows outside a tf_crop_and_resize
    crop, from the Resize description: x_original per coordinate_transformation_mode,
    then the nearest 1 (nearest) / 2 (linear) / 4 (cubic) input positions, edge
    values repeating past the ends."""
    w = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    length = scale * n_in  # length_resized as a real number
    for x in range(n_out):
        if ctm == "half_pixel":
            xo = (x + 0.5) / scale - 0.5
        elif ctm == "pytorch_half_pixel":
            xo = (x + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        elif ctm == "align_corners":
            xo = 0.0 if length == 1 else x * (n_in - 1) / (length - 1)
        elif ctm == "asymmetric":
            xo = x / scale
        elif ctm == "tf_half_pixel_for_nn":
            xo = (x + 0.5) / scale
        elif ctm == "tf_crop_and_resize":
            s, e = roi
            xo = (s * (n_in - 1) + x * (e - s) * (n_in - 1) / (length - 1) if n_out > 1
                  else 0.5 * (s + e) * (n_in - 1))
            if xo < 0 or xo > n_in - 1:
                outside[x] = True
                continue
        if mode == "nearest":
            lo = np.floor(xo)
            frac = xo - lo
            if frac == 0:
                i = lo
            elif nearest_mode == "round_prefer_floor":
                i = lo if frac <= 0.5 else lo + 1
            elif nearest_mode == "round_prefer_ceil":
                i = lo if frac < 0.5 else lo + 1
            elif nearest_mode == "floor":
                i = lo
            else:
                i = lo + 1
            w[x, int(min(max(i, 0), n_in - 1))] = 1
            continue
        taps = 2 if mode == "linear" else 4
        # The `taps` integer positions nearest to xo (lower first on ties).
        cand = sorted(range(int(np.floor(xo)) - 3, int(np.floor(xo)) + 5),
                      key=lambda i: (abs(xo - i), i))[:taps]
        cand = sorted(cand)
        if mode == "linear":
            kern = [max(0.0, 1 - abs(xo - i)) for i in cand]
        else:
            def cub(t):
                t = abs(t)
                if t <= 1:
                    return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
                if t < 2:
                    return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
                return 0.0
            kern = [cub(xo - i) for i in cand]
        if exclude:
            kern = [0.0 if (i < 0 or i >= n_in) else k for i, k in zip(cand, kern)]
            s = sum(kern)
            kern = [k / s for k in kern]
        for i, k in zip(cand, kern):
            w[x, min(max(i, 0), n_in - 1)] += k
    return w, outside


def resize_ref(x, out_shape, scales, mode="nearest", ctm="half_pixel",
               nearest_mode="round_prefer_floor", a=-0.75, exclude=0, roi=None, extrap=0.0):
    y = x.astype(np.float64)
    r = x.ndim
    # Innermost axis first, so a crop's outside rows hold the extrapolation value
    # whatever the inner axes gave.
    for d in reversed(range(r)):
        s = scales[d] if scales is not None else out_shape[d] / x.shape[d]
        w, outside = resize_axis_matrix(x.shape[d], out_shape[d], s, mode, ctm, nearest_mode, a,
                                        exclude, (roi[d], roi[d + r]) if roi is not None else None)
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, d, 0), axes=(1, 0)), 0, d)
        idx = [slice(None)] * r
        idx[d] = outside
        y[tuple(idx)] = extrap
    return y.astype(x.dtype) if x.dtype != F32 else y.astype(F32)


def resize_case(name, x, scales=None, sizes=None, roi=None, opset=13, **attrs):
    sc = np.asarray(scales, F32) if scales is not None else None
    out_shape = ([int(np.floor(float(s) * n)) for s, n in zip(sc, x.shape)] if sc is not None
                 else list(sizes))
    kw = dict(mode=attrs.get("mode", "nearest"),
              ctm=attrs.get("coordinate_transformation_mode", "half_pixel"),
              nearest_mode=attrs.get("nearest_mode", "round_prefer_floor"),
              a=attrs.get("cubic_coeff_a", -0.75), exclude=attrs.get("exclude_outside", 0),
              roi=roi, extrap=attrs.get("extrapolation_value", 0.0))
    want = resize_ref(x, out_shape, [float(s) for s in sc] if sc is not None else None, **kw)
    ins = [x, np.asarray(roi, F32) if roi is not None else None, sc,
           np.asarray(sizes, np.int64) if sizes is not None else None]
    while ins[-1] is None:
        ins.pop()
    case(name, "Resize", ins, [want], attrs, opset)


def spec_cases():
    x4 = rnd(1, 2, 3, 4)
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        # asymmetric x2: every other x_original is exactly k + 0.5 (a tie).
        resize_case("resize_nearest_tie_" + nm, x4, scales=[1, 1, 2, 2],
                    coordinate_transformation_mode="asymmetric", nearest_mode=nm)
        resize_case("resize_nearest_half_pixel_down_" + nm, rnd(1, 1, 7, 9), sizes=[1, 1, 3, 4],
                    nearest_mode=nm)
    resize_case("resize_nearest_tf_half_pixel_for_nn", x4, scales=[1, 1, 1.5, 0.75],
                coordinate_transformation_mode="tf_half_pixel_for_nn")
    resize_case("resize_nearest_align_corners_up", x4, sizes=[1, 2, 5, 7],
                coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil")
    resize_case("resize_linear_3d_spatial", rnd(1, 1, 4, 5, 6), sizes=[1, 1, 3, 7, 4],
                mode="linear")
    resize_case("resize_linear_channels_too", rnd(2, 3, 4, 4), sizes=[2, 5, 3, 6], mode="linear",
                coordinate_transformation_mode="align_corners")
    resize_case("resize_linear_1d", rnd(5), sizes=[8], mode="linear",
                coordinate_transformation_mode="pytorch_half_pixel")
    resize_case("resize_linear_to_one", rnd(1, 1, 4, 5), sizes=[1, 1, 1, 3], mode="linear",
                coordinate_transformation_mode="pytorch_half_pixel")
    resize_case("resize_linear_exclude_outside", rnd(1, 1, 3, 5), scales=[1, 1, 2.5, 1.6],
                mode="linear", exclude_outside=1)
    resize_case("resize_cubic_exclude_align", rnd(1, 1, 5, 4), sizes=[1, 1, 9, 3], mode="cubic",
                coordinate_transformation_mode="align_corners", exclude_outside=1,
                cubic_coeff_a=-0.5)
    resize_case("resize_cubic_asym_down", rnd(1, 2, 8, 6), scales=[1, 1, 0.6, 0.5], mode="cubic",
                coordinate_transformation_mode="asymmetric")
    resize_case("resize_cubic_pytorch_half_pixel", rnd(1, 1, 4, 4), sizes=[1, 1, 7, 1],
                mode="cubic", coordinate_transformation_mode="pytorch_half_pixel")
    roi = [0, 0.2, 0.1, -0.3, 1, 0.9, 0.8, 1.2]
    for mode in ["nearest", "linear", "cubic"]:
        resize_case("resize_crop_" + mode, rnd(1, 3, 5, 6), sizes=[1, 4, 4, 5], roi=roi,
                    mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
                    extrapolation_value=7.0)
    resize_case("resize_crop_single_row", rnd(1, 1, 5, 6), sizes=[1, 1, 1, 4],
                roi=[0, 0, 0.4, 0.1, 1, 1, 0.6, 0.7], mode="linear",
                coordinate_transformation_mode="tf_crop_and_resize")
    resize_case("resize_uint8_nearest", rng.integers(0, 255, (1, 1, 3, 3)).astype(np.uint8),
                scales=[1, 1, 2, 1.5])
    resize_case("resize_int32_nearest_down", rng.integers(-9, 9, (2, 6)).astype(np.int32),
                sizes=[2, 4], coordinate_transformation_mode="asymmetric", nearest_mode="ceil")
    # Opset 11: roi is a required (here empty) input.
    x = rnd(1, 1, 3, 4)
    want = resize_ref(x, [1, 1, 6, 2], None, mode="linear", ctm="half_pixel")
    case("resize_opset11_sizes", "Resize",
         [x, np.zeros(0, F32), np.zeros(0, F32), np.asarray([1, 1, 6, 2], np.int64)], [want],
         {"mode": "linear"}, opset=11)
    # Opset 10 Resize and Upsample: asymmetric coordinates, nearest rounds down.
    for op, opset in [("Resize", 10), ("Upsample", 9)]:
        for mode in ["nearest", "linear"]:
            sc = np.asarray([1, 1, 2.5, 1.5], F32)
            want = resize_ref(x, [1, 1, 7, 6], [float(s) for s in sc], mode=mode,
                              ctm="asymmetric", nearest_mode="floor")
            case("%s%d_%s" % (op.lower(), opset, mode), op, [x, sc], [want], {"mode": mode},
                 opset)
    want = resize_ref(x, [1, 1, 6, 12], [1, 1, 2, 3], ctm="asymmetric", nearest_mode="floor")
    case("upsample7_attr_scales", "Upsample", [x], [want],
         {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 3.0]}, 7)
    # Refusals name the node and the problem.
    sc = np.asarray([1, 1, 2, 2], F32)
    case("resize_bad_mode", "Resize", [x, None, sc], [np.zeros((1, 1, 6, 8), F32)],
         {"mode": "area"}, error="Resize mode 'area' is not supported")
    case("resize_bad_ctm", "Resize", [x, None, sc], [np.zeros((1, 1, 6, 8), F32)],
         {"coordinate_transformation_mode": "half_pixel_symmetric"},
         error="coordinate_transformation_mode 'half_pixel_symmetric' is not supported")
    case("resize_cubic_on_ints", "Resize",
         [np.zeros((1, 1, 2, 2), np.int32), None, sc], [np.zeros((1, 1, 4, 4), np.int32)],
         {"mode": "cubic"}, error="floating point input only")
    case("resize_scales_rank", "Resize", [x, None, np.asarray([2, 2], F32)],
         [np.zeros((1, 1, 6, 8), F32)], error="scales has 2 entries")
    case("resize_crop_without_roi", "Resize", [x, None, None, np.asarray([1, 1, 2, 2], np.int64)],
         [np.zeros((1, 1, 2, 2), F32)], {"coordinate_transformation_mode": "tf_crop_and_resize"},
         error="needs roi")

    case("resize_inf_scale", "Resize", [x, None, np.asarray([1, 1, np.inf, 2], F32)],
         [np.zeros((1, 1, 6, 8), F32)], error="scales entry inf must be positive and finite")

    # ------------------------------------------------------------------ far-out samples
    gx = np.asarray([[[[1, 2], [3, 4]]]], F32)
    grid = np.asarray([[[[1e20, 0], [-1e20, -1e20], [0.25, 3e19]]]], F32)
    case("gridsample_far_zeros", "GridSample", [gx, grid], [np.asarray([[[[0, 0, 0]]]], F32)],
         {}, 16)
    # Border: x clamps to the last column (y = 0 is half way: rows 0 and 1); the
    # first corner; x = 0.25 -> 0.75 (3/4 of the way from 3 to 4) in the last row.
    case("gridsample_far_border", "GridSample", [gx, grid],
         [np.asarray([[[[3, 1, 3.75]]]], F32)],
         {"padding_mode": "border"}, 16)
    case("roialign_nan_roi", "RoiAlign",
         [rnd(1, 1, 4, 4), np.asarray([[0, 0, np.nan, 2]], F32), np.zeros(1, np.int64)],
         [np.zeros((1, 1, 1, 1), F32)], {}, 16, error="roi 0 has a non-finite coordinate")

    # ------------------------------------------------------------------ TopK
    tx = np.asarray([[3, 1, 3, 2, 1, 3], [0, -1, 0, -1, 5, 0]], F32)
    for largest in [1, 0]:
        for k in [0, 1, 3, 6]:
            key = -tx if largest else tx
            order = np.argsort(key, axis=1, kind="stable")[:, :k]  # ties: lower index first
            case("topk_ties_l%d_k%d" % (largest, k), "TopK", [tx, np.asarray([k], np.int64)],
                 [np.take_along_axis(tx, order, 1), order.astype(np.int64)],
                 {"axis": 1, "largest": largest}, 11)
    ti = rng.integers(-5, 5, (4, 3, 2)).astype(np.int64)
    order = np.argsort(-ti, axis=0, kind="stable")[:2]
    case("topk_int64_axis0", "TopK", [ti, np.asarray([2], np.int64)],
         [np.take_along_axis(ti, order, 0), order.astype(np.int64)], {"axis": -3}, 11)
    order = np.argsort(-tx, axis=1, kind="stable")[:, :2]
    case("topk_opset1_attr_k", "TopK", [tx], [np.take_along_axis(tx, order, 1), order], {"k": 2},
         1)
    case("topk_k_too_big", "TopK", [tx, np.asarray([7], np.int64)],
         [np.zeros((2, 7), F32), np.zeros((2, 7), np.int64)], {"axis": 1},
         error="k 7 is outside 0..6")

    # ------------------------------------------------------------------ Einsum
    for nm, eq, shapes in [
        ("matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
        ("implicit_transpose", "ba", [(3, 4)]),
        ("implicit_matmul", "ij,jk", [(2, 3), (3, 4)]),
        ("trace", "ii", [(4, 4)]),
        ("diagonal", "ii->i", [(4, 4)]),
        ("diag_sum_other", "iij->j", [(3, 3, 5)]),
        ("outer", "i,j->ij", [(3,), (4,)]),
        ("total_sum", "ijk->", [(2, 3, 4)]),
        ("batch_ellipsis_bcast", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
        ("ellipsis_middle", "i...j->ji...", [(2, 3, 4, 5)]),
        ("three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
        ("spaces_upper", " Ab , bC -> CA ", [(3, 4), (4, 2)]),
    ]:
        ins = [rnd(*s) for s in shapes]
        want = np.einsum(eq.replace(" ", ""), *[i.astype(np.float64) for i in ins]).astype(F32)
        case("einsum_" + nm, "Einsum", ins, [np.asarray(want)], {"equation": eq}, 12)
    ia, ib = (rng.integers(-4, 4, (2, 3)).astype(np.int32),
              rng.integers(-4, 4, (3, 2)).astype(np.int32))
    case("einsum_int32", "Einsum", [ia, ib], [np.einsum("ij,jk->ik", ia, ib).astype(np.int32)],
         {"equation": "ij,jk->ik"}, 12)
    case("einsum_size_mismatch", "Einsum", [rnd(2, 3), rnd(4, 2)], [np.zeros((2, 2), F32)],
         {"equation": "ij,jk->ik"}, 12, error="subscript 'j' has sizes 3 and 4")
    case("einsum_drops_ellipsis", "Einsum", [rnd(3, 2, 4)], [np.zeros((2, 4), F32)],
         {"equation": "...ij->ij"}, 12, error="the output must keep the ellipsis")
    case("einsum_bad_output", "Einsum", [rnd(2, 3)], [np.zeros((2,), F32)],
         {"equation": "ij->z"}, 12, error="output subscript 'z' is in no input")

    # ------------------------------------------------------------------ misc
    lx = rnd(2, 5, 3, 2)
    for size in [3, 4]:
        sq = np.zeros_like(lx, dtype=np.float64)
        for c in range(5):
            lo, hi = max(0, c - (size - 1) // 2), min(4, c + int(np.ceil((size - 1) / 2)))
            sq[:, c] = (lx[:, lo:hi + 1].astype(np.float64) ** 2).sum(1)
        want = lx / (2.0 + 0.001 / size * sq) ** 0.6
        case("lrn_size%d" % size, "LRN", [lx], [want.astype(F32)],
             {"size": size, "alpha": 0.001, "beta": 0.6, "bias": 2.0}, 13)
    sx = np.linspace(-2, 2, 9).astype(F32)
    case("shrink_int", "Shrink", [np.arange(-4, 5).astype(np.int32)],
         [np.asarray([-3, -2, -1, 0, 0, 0, 1, 2, 3], np.int32)], {"lambd": 1.5, "bias": 1.0}, 9)
    case("shrink_float", "Shrink", [sx],
         [np.where(sx < -1, sx + 0.5, np.where(sx > 1, sx - 0.5, 0)).astype(F32)],
         {"lambd": 1.0, "bias": 0.5}, 9)
    for k in [-2, 0, 3, 9]:
        case("eyelike_k%d" % k, "EyeLike", [np.zeros((3, 5), np.int32)],
             [np.eye(3, 5, k, dtype=F32)], {"k": k, "dtype": onnx.TensorProto.FLOAT}, 9)
    dm = rnd(3, 2, 4, 4)
    dm[0, 1] = [[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [5, 5, 5, 5]]  # singular
    case("det_batched", "Det", [dm], [np.linalg.det(dm.astype(np.float64)).astype(F32)], {}, 11)
    case("det_nonsquare", "Det", [rnd(2, 3)], [np.zeros((), F32)], {}, 11,
         error="must end in square matrices")
    # MaxPool's Indices: flat offsets in the whole input (row- or column-major
    # spatial part), the first maximum in window order on ties; MaxUnpool undoes it.
    def maxpool_ref(x, k, st, pads, order):
        n, c = x.shape[:2]
        sp = x.shape[2:]
        r = len(sp)
        outs = [(sp[d] + pads[d] + pads[d + r] - k[d]) // st[d] + 1 for d in range(r)]
        y = np.zeros((n, c) + tuple(outs), x.dtype)
        ind = np.zeros(y.shape, np.int64)
        for b in range(n):
            for ch in range(c):
                for o in np.ndindex(*outs):
                    best, arg = None, None
                    for kk in np.ndindex(*k):
                        pos = [o[d] * st[d] - pads[d] + kk[d] for d in range(r)]
                        if any(p < 0 or p >= sp[d] for d, p in enumerate(pos)):
                            continue
                        v = x[(b, ch) + tuple(pos)]
                        if best is None or v > best:
                            best = v
                            strides = (np.cumprod((1,) + sp[::-1])[:-1][::-1] if order == 0
                                       else np.cumprod((1,) + sp)[:-1])
                            arg = (b * c + ch) * int(np.prod(sp)) + int(np.dot(pos, strides))
                    y[(b, ch) + o], ind[(b, ch) + o] = best, arg
        return y, ind
    mp = rng.integers(0, 4, (2, 2, 5, 6)).astype(F32)  # many ties
    for order in [0, 1]:
        y, ind = maxpool_ref(mp, (3, 2), (2, 2), (1, 0, 1, 1), order)
        case("maxpool_indices_order%d" % order, "MaxPool", [mp], [y, ind],
             {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
              "storage_order": order}, 12)
    mp3 = rnd(1, 2, 4, 3, 5)
    y, ind = maxpool_ref(mp3, (2, 2, 3), (2, 1, 2), (0, 0, 1, 0, 0, 1), 0)
    case("maxpool_indices_3d", "MaxPool", [mp3], [y, ind],
         {"kernel_shape": [2, 2, 3], "strides": [2, 1, 2], "pads": [0, 0, 1, 0, 0, 1]}, 12)
    ux = rnd(1, 2, 2, 3)
    y, ind = maxpool_ref(rnd(1, 2, 4, 6), (2, 2), (2, 2), (0, 0, 0, 0), 0)
    want = np.zeros(2 * 4 * 6, F32)
    want[ind.reshape(-1)] = ux.reshape(-1)
    case("maxunpool_2d", "MaxUnpool", [ux, ind], [want.reshape(1, 2, 4, 6)],
         {"kernel_shape": [2, 2], "strides": [2, 2]}, 11)
    padded = np.zeros((1, 2, 5, 7), F32)
    padded[:, :, :4, :6] = want.reshape(1, 2, 4, 6)
    case("maxunpool_output_shape", "MaxUnpool", [ux, ind, np.asarray([1, 2, 5, 7], np.int64)],
         [padded], {"kernel_shape": [2, 2], "strides": [2, 2]}, 11)
    bad = ind.copy()
    bad[0, 1, 0, 2] = 48
    case("maxunpool_bad_index", "MaxUnpool", [ux, bad], [want.reshape(1, 2, 4, 6)],
         {"kernel_shape": [2, 2], "strides": [2, 2]}, 11, error="index 48 (element 8 of the indices)")
    a = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    s = np.asarray([0, 1, 7, 3], np.uint8)
    case("bitshift_left_bcast", "BitShift", [a, s],
         [((a.astype(np.uint64) << s) % 256).astype(np.uint8)], {"direction": "LEFT"}, 11)
    case("bitshift_right_uint32", "BitShift",
         [np.asarray([[1 << 31, 12345]], np.uint32), np.asarray([31, 40], np.uint32)],
         [np.asarray([[1, 0]], np.uint32)], {"direction": "RIGHT"}, 11)


# ------------------------------------------------------------------ torch cases
def torch_cases():
    import torch
    import torch.nn.functional as F
    import torchvision
    torch.manual_seed(3)
    x = torch.randn(2, 3, 5, 6)
    for mode in ["bilinear", "nearest", "bicubic"]:
        for pad in ["zeros", "border", "reflection"]:
            for align in [0, 1]:
                # Grid points up to 1.6 outside [-1, 1] reach every padding rule.
                g = torch.rand(2, 4, 7, 2) * 3.2 - 1.6
                if mode == "nearest":
                    # Keep clear of rounding ties, where float and double may differ.
                    for k, size in [(0, 6), (1, 5)]:
                        c = g[..., k]
                        ic = (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2
                        g[..., k] += 0.01 * (torch.abs(ic - ic.floor() - 0.5) < 0.01)
                y = F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=bool(align))
                case("gridsample_%s_%s_align%d" % (mode, pad, align), "GridSample",
                     [x.numpy(), g.numpy()], [y.numpy()],
                     {"mode": mode, "padding_mode": pad, "align_corners": align}, 16)
    feat = torch.randn(2, 3, 12, 10)
    boxes = torch.tensor([[0, 1.0, 1.5, 7.3, 9.0], [1, 0.2, 0.0, 15.0, 22.0],
                          [0, 4.0, 4.0, 4.5, 4.2], [1, -3.0, -2.0, 5.0, 6.0]])
    for aligned in [False, True]:
        for ratio in [0, 2]:
            y = torchvision.ops.roi_align(feat, boxes, (3, 4), spatial_scale=0.5,
                                          sampling_ratio=ratio, aligned=aligned)
            case("roialign_aligned%d_ratio%d" % (aligned, ratio), "RoiAlign",
                 [feat.numpy(), boxes[:, 1:].numpy(), boxes[:, 0].long().numpy()], [y.numpy()],
                 {"output_height": 3, "output_width": 4, "spatial_scale": 0.5,
                  "sampling_ratio": ratio,
                  "coordinate_transformation_mode": "half_pixel" if aligned
                  else "output_half_pixel"}, 16)
    # Opset 10 RoiAlign: no attribute, the output_half_pixel grid.
    y = torchvision.ops.roi_align(feat, boxes, (2, 2), sampling_ratio=0, aligned=False)
    case("roialign_opset10", "RoiAlign",
         [feat.numpy(), boxes[:, 1:].numpy(), boxes[:, 0].long().numpy()], [y.numpy()],
         {"output_height": 2, "output_width": 2}, 10)
    xi = torch.randn(1, 2, 5, 7)
    for nm, kw, attrs, sizes in [
        ("bilinear", dict(mode="bilinear", align_corners=False),
         {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, (8, 3)),
        ("bilinear_align", dict(mode="bilinear", align_corners=True),
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, (9, 4)),
        ("bicubic", dict(mode="bicubic", align_corners=False),
         {"mode": "cubic", "coordinate_transformation_mode": "half_pixel"}, (11, 5)),
        ("nearest", dict(mode="nearest"),
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, (12, 4)),
    ]:
        y = F.interpolate(xi, size=sizes, **kw)
        case("interpolate_" + nm, "Resize",
             [xi.numpy(), None, None, np.asarray([1, 2] + list(sizes), np.int64)], [y.numpy()],
             attrs, 13)
    x3 = torch.randn(1, 1, 3, 4, 5)
    y = F.interpolate(x3, size=(5, 3, 8), mode="trilinear", align_corners=False)
    case("interpolate_trilinear", "Resize",
         [x3.numpy(), None, None, np.asarray([1, 1, 5, 3, 8], np.int64)], [y.numpy()],
         {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, 13)

    # NaN ranks above every number (distinct values, so the order is defined).
    tn = torch.tensor([[0.5, float("nan"), -2.0, 3.0, float("nan"), 1.0],
                       [4.0, -1.0, 2.0, float("nan"), 0.0, -3.0]])
    for largest in [1, 0]:
        v, i = torch.topk(tn, 4, dim=1, largest=bool(largest))
        case("topk_nan_l%d" % largest, "TopK", [tn.numpy(), np.asarray([4], np.int64)],
             [v.numpy(), i.numpy()], {"axis": 1, "largest": largest}, 11)
    vi = torch.randn(3, 7)
    v, i = torch.topk(vi, 3, dim=0)
    case("topk_torch_axis0", "TopK", [vi.numpy(), np.asarray([3], np.int64)],
         [v.numpy(), i.numpy()], {"axis": 0}, 11)

    # A tiny PyTorch model exported as torch.onnx.export writes it.
    class Net(torch.nn.Module):
        def forward(self, a, b):
            up = F.interpolate(a, scale_factor=2.0, mode="bilinear", align_corners=False)
            mix = torch.einsum("nchw,cd->ndhw", up, b)
            vals, idx = torch.topk(mix.flatten(1), 5, dim=1)
            return vals, idx
    a, b = torch.randn(2, 3, 4, 5), torch.randn(3, 4)
    d = os.path.join(OUT, "torch_export_interp_einsum_topk")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(Net(), (a, b), os.path.join(d, "model.onnx"), opset_version=13,
                      input_names=["a", "b"], output_names=["vals", "idx"])
    vals, idx = Net()(a, b)
    write_data(d, [("a", a.numpy()), ("b", b.numpy())],
               [("vals", vals.numpy()), ("idx", idx.numpy())])


if KIND == "spec":
    spec_cases()
else:
    torch_cases()
print(COUNT[0])
