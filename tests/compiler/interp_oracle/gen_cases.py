"""Spec cases for the reference interpreter (tests/compiler/test_interp_oracle.cpp).

Usage: gen_cases.py OUT_DIR

Writes one folder per case in the ONNX test-data layout (model.onnx,
test_data_set_0/input_K.pb, output_K.pb). Every expected output is computed here
in numpy from the ONNX operator spec (never by onnx.reference or by trnsim), with
the corner cases the spec defines: negative axes, broadcasting, empty tensors,
integer division and modulo signs, Round half to even, NaN/inf, clamping Slice
bounds, Pad modes, Clip with min > max. A case whose model must be refused gets an
`expect_error` file holding a text the error must contain instead of outputs.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OUT = sys.argv[1]
CASES = []
F32 = np.float32


def _np_to_onnx(dt):
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)]


def case(name, op, inputs, outputs, attrs=None, opset=17, input_names=None, error=None,
         n_outputs=None):
    """One single-node model. `inputs`: list of arrays (None = omitted optional input);
    `outputs`: list of expected arrays (or dtypes/shapes only when `error`)."""
    CASES.append((name, op, inputs, outputs, attrs or {}, opset, input_names, error, n_outputs))


def write_case(name, op, inputs, outputs, attrs, opset, input_names, error, n_outputs):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    in_names, g_inputs, feeds = [], [], []
    for k, a in enumerate(inputs):
        if a is None:
            in_names.append("")
            continue
        nm = (input_names[k] if input_names else None) or "in%d" % k
        in_names.append(nm)
        a = np.asarray(a)
        g_inputs.append(helper.make_tensor_value_info(nm, _np_to_onnx(a.dtype), list(a.shape)))
        feeds.append((nm, a))
    out_names = ["out%d" % k for k in range(n_outputs or len(outputs))]
    g_outputs = []
    for k, nm in enumerate(out_names):
        o = np.asarray(outputs[k]) if k < len(outputs) else np.zeros(0, F32)
        g_outputs.append(helper.make_tensor_value_info(nm, _np_to_onnx(o.dtype), None))
    node = helper.make_node(op, in_names, out_names, name="n_" + name, **attrs)
    graph = helper.make_graph([node], name, g_inputs, g_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (nm, a) in enumerate(feeds):
        t = numpy_helper.from_array(a, nm)
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())
    if error:  # the outputs are placeholders: the run must not get that far
        with open(os.path.join(d, "expect_error"), "w") as f:
            f.write(error)
    for k, o in enumerate(outputs):
        t = numpy_helper.from_array(np.asarray(o), out_names[k])
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())


rng = np.random.default_rng(7)


def rnd(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(F32)


def f32(x):
    return np.asarray(x, dtype=F32)


def i64(x):
    return np.asarray(x, dtype=np.int64)


SPECIAL = f32([-np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, np.inf, np.nan])

# ---------------------------------------------------------------- unary float
x = rnd(2, 3, 4)
pos = rnd(2, 3, 4, lo=0.1, hi=3.0)
unit = rnd(2, 3, 4, lo=-0.95, hi=0.95)
erf = np.vectorize(math.erf)
for op, fn, a in [
    ("Sigmoid", lambda v: 1 / (1 + np.exp(-v.astype(np.float64))), x),
    ("Tanh", np.tanh, x), ("Erf", erf, x), ("Exp", np.exp, x), ("Log", np.log, pos),
    ("Sqrt", np.sqrt, pos), ("Reciprocal", lambda v: 1 / v, pos),
    ("Softplus", lambda v: np.log(1 + np.exp(v.astype(np.float64))), x),
    ("Softsign", lambda v: v / (1 + np.abs(v)), x),
    ("HardSwish", lambda v: v * np.maximum(0, np.minimum(1, v / 6 + 0.5)), x * 3),
    ("Sin", np.sin, x), ("Cos", np.cos, x), ("Tan", np.tan, unit), ("Asin", np.arcsin, unit),
    ("Acos", np.arccos, unit), ("Atan", np.arctan, x), ("Sinh", np.sinh, x), ("Cosh", np.cosh, x),
    ("Asinh", np.arcsinh, x), ("Acosh", np.arccosh, pos + 1), ("Atanh", np.arctanh, unit),
    ("Floor", np.floor, SPECIAL), ("Ceil", np.ceil, SPECIAL),
    ("Round", np.round, SPECIAL),  # numpy rounds half to even, as the spec says
    ("Relu", lambda v: np.maximum(v, 0), x), ("Neg", np.negative, SPECIAL),
    ("Abs", np.abs, SPECIAL), ("Sign", np.sign, SPECIAL), ("Identity", lambda v: v, SPECIAL),
]:
    case("unary_" + op.lower(), op, [a], [f32(fn(a))])
case("round_halves", "Round", [f32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 8388609.0])],
     [f32([0, 2, 2, -0, -2, -2, 2, 8388609.0])])
case("hardsigmoid", "HardSigmoid", [x], [f32(np.clip(0.3 * x + 0.4, 0, 1))],
     {"alpha": 0.3, "beta": 0.4})
case("elu", "Elu", [x], [f32(np.where(x < 0, 0.7 * (np.exp(x) - 1), x))], {"alpha": 0.7})
case("celu", "Celu", [x],
     [f32(np.maximum(0, x) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1)))], {"alpha": 2.0})
case("selu", "Selu", [x], [f32(np.where(x > 0, 1.1 * x, 1.1 * (1.6 * np.exp(x) - 1.6)))],
     {"alpha": 1.6, "gamma": 1.1})
case("leakyrelu", "LeakyRelu", [x], [f32(np.where(x < 0, 0.2 * x, x))], {"alpha": 0.2})
case("thresholdedrelu", "ThresholdedRelu", [x], [f32(np.where(x > 1.0, x, 0))], {"alpha": 1.0})

# Clip: y = min(max(x, lo), hi); lo > hi gives hi everywhere (numpy, torch).
case("clip", "Clip", [x, f32(-1.0), f32(2.0)], [f32(np.minimum(np.maximum(x, -1), 2))])
case("clip_min_above_max", "Clip", [SPECIAL, f32(2.0), f32(1.0)],
     [f32(np.minimum(np.maximum(SPECIAL, 2), 1))])
case("clip_only_max", "Clip", [x, None, f32(0.5)], [f32(np.minimum(x, 0.5))])
ci = i64([-7, -2, 0, 3, 9])
case("clip_int_min_above_max", "Clip", [ci, i64(4), i64(1)],
     [np.minimum(np.maximum(ci, 4), 1)])
case("clip_int", "Clip", [ci, i64(-2), i64(4)], [np.clip(ci, -2, 4)])
case("clip_opset6_min_above_max", "Clip", [x], [f32(np.minimum(np.maximum(x, 1.0), -1.0))],
     {"min": 1.0, "max": -1.0}, opset=6)

# ---------------------------------------------------------------- integer unary
ii = i64([-5, -1, 0, 2, 7])
case("relu_int", "Relu", [ii.astype(np.int32)], [np.maximum(ii, 0).astype(np.int32)], opset=14)
case("neg_int", "Neg", [ii], [-ii])
case("abs_int", "Abs", [ii], [np.abs(ii)])
case("sign_int", "Sign", [ii], [np.sign(ii)])
case("not", "Not", [np.array([True, False, True])], [np.array([False, True, False])])
case("isnan", "IsNaN", [SPECIAL], [np.isnan(SPECIAL)])
case("isinf", "IsInf", [SPECIAL], [np.isinf(SPECIAL)])
case("isinf_neg_only", "IsInf", [SPECIAL], [np.isneginf(SPECIAL)], {"detect_positive": 0})
case("isinf_pos_only", "IsInf", [SPECIAL], [np.isposinf(SPECIAL)], {"detect_negative": 0})

# ---------------------------------------------------------------- binary, broadcasting
a = rnd(2, 3, 4)
b = rnd(3, 1)
for op, fn in [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
               ("Div", np.divide)]:
    case("bin_" + op.lower() + "_bcast", op, [a, b], [f32(fn(a, b))])
    case("bin_" + op.lower() + "_scalar", op, [f32(2.5), a], [f32(fn(F32(2.5), a))])
case("add_empty", "Add", [np.zeros((0, 3), F32), rnd(1, 3)], [np.zeros((0, 3), F32)])
ia = i64([7, -7, 7, -7, 0, 6, -6])
ib = i64([2, 2, -2, -2, 3, 4, 4])
# Integer Div truncates toward zero (C semantics, as onnxruntime and the spec's
# reference); Mod with fmod=0 takes the divisor's sign, fmod=1 the dividend's.
case("div_int_trunc", "Div", [ia, ib], [np.trunc(ia / ib).astype(np.int64)])
case("div_int32_trunc", "Div", [ia.astype(np.int32), ib.astype(np.int32)],
     [np.trunc(ia / ib).astype(np.int32)])
case("mod_int", "Mod", [ia, ib], [np.mod(ia, ib)])
case("mod_int_fmod", "Mod", [ia, ib], [np.fmod(ia, ib)], {"fmod": 1})
fa = f32([5.5, -5.5, 5.5, -5.5, 0.0, 3.0])
fb = f32([2.0, 2.0, -2.0, -2.0, 1.5, 3.0])
case("mod_float_fmod", "Mod", [fa, fb], [np.fmod(fa, fb)], {"fmod": 1})
case("mod_int_bcast", "Mod", [i64([[-9, 9], [4, -4]]), i64([5])], [np.mod(i64([[-9, 9], [4, -4]]), 5)])
pa = f32([-2.0, -2.0, -8.0, 2.0, 0.0, 4.0, -0.5])
pb = f32([3.0, 0.5, 1.0 / 3.0, -1.0, 0.0, 0.5, 2.0])
with np.errstate(invalid="ignore"):
    case("pow_negative_base", "Pow", [pa, pb], [f32(np.power(pa.astype(np.float64), pb))])
case("pow_int", "Pow", [i64([2, -3, 5, 0]), i64([10, 3, 0, 2])],
     [np.power(i64([2, -3, 5, 0]), i64([10, 3, 0, 2]))])
case("pow_float_int_exp", "Pow", [f32([-2, 3, 0.5]), i64([3, 2, -1])],
     [f32([-8, 9, 2])])
case("prelu_bcast", "PRelu", [rnd(2, 3, 2, 2), f32([[[0.1]], [[0.2]], [[-0.3]]])],
     None)  # filled below
pr_x = CASES[-1][2][0]
pr_s = CASES[-1][2][1]
CASES[-1] = CASES[-1][:3] + ([f32(np.where(pr_x < 0, pr_x * pr_s, pr_x))],) + CASES[-1][4:]
m1, m2, m3 = rnd(3, 1), rnd(1, 4), rnd(4)
m1[0, 0] = np.nan
case("max_variadic_nan", "Max", [m1, m2, m3], [f32(np.maximum(np.maximum(m1, m2), m3))])
case("min_variadic_nan", "Min", [m1, m2, m3], [f32(np.minimum(np.minimum(m1, m2), m3))])
case("sum_variadic", "Sum", [m1, m2, m3], [f32(m1.astype(np.float64) + m2 + m3)])
case("mean_variadic", "Mean", [m2, m3], [f32((m2.astype(np.float64) + m3) / 2)])
case("max_int", "Max", [i64([1, -5, 3]), i64([[0], [4]])], [np.maximum(i64([1, -5, 3]), i64([[0], [4]]))])
case("min_single", "Min", [m3], [m3])
c1, c2 = f32([1, 2, np.nan, 4, -0.0]), f32([[1], [0.0]])
for op, fn in [("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
               ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)]:
    case("cmp_" + op.lower(), op, [c1, c2], [fn(c1, c2)])
    case("cmp_int_" + op.lower(), op, [i64([1, 5, -3]), i64([5])], [fn(i64([1, 5, -3]), 5)])
ba_, bb_ = np.array([[True, False, True, False]]), np.array([[True], [False]])
case("and_bcast", "And", [ba_, bb_], [np.logical_and(ba_, bb_)])
case("or_bcast", "Or", [ba_, bb_], [np.logical_or(ba_, bb_)])
case("xor_bcast", "Xor", [ba_, bb_], [np.logical_xor(ba_, bb_)])
wc = np.array([[True, False, True]])
wx, wy = rnd(2, 1), rnd(3)
case("where_bcast", "Where", [wc, wx, wy], [np.where(wc, wx, wy)])
case("where_int", "Where", [np.array([True, False]), i64([1, 2]), i64([[7], [8]])],
     [np.where(np.array([True, False]), i64([1, 2]), i64([[7], [8]]))])

# ---------------------------------------------------------------- Cast
cf = f32([-2.7, -0.5, 0.0, 0.5, 2.7, 100.9])
case("cast_float_to_int64", "Cast", [cf], [np.trunc(cf).astype(np.int64)], {"to": 7})
case("cast_float_to_int32", "Cast", [cf], [np.trunc(cf).astype(np.int32)], {"to": 6})
case("cast_float_to_bool", "Cast", [f32([0.0, -0.0, 0.5, -3, np.nan])],
     [np.array([False, False, True, True, True])], {"to": 9})
case("cast_int_to_int8_wraps", "Cast", [i64([127, 128, 200, -129, 255, 256])],
     [i64([127, 128, 200, -129, 255, 256]).astype(np.int8)], {"to": 3})
case("cast_int_to_uint8_wraps", "Cast", [i64([-1, 256, 300, 7])],
     [i64([-1, 256, 300, 7]).astype(np.uint8)], {"to": 2})
case("cast_int_to_float", "Cast", [i64([16777217, -3])], [f32([16777216.0, -3.0])], {"to": 1})
case("cast_bool_to_float", "Cast", [np.array([True, False])], [f32([1, 0])], {"to": 1})

# ---------------------------------------------------------------- reductions
r = rnd(2, 3, 4)
r[0, 0, 0] = -np.inf
for op, fn in [
    ("ReduceSum", lambda v, ax, kd: np.sum(v.astype(np.float64), axis=ax, keepdims=kd)),
    ("ReduceMean", lambda v, ax, kd: np.mean(v.astype(np.float64), axis=ax, keepdims=kd)),
    ("ReduceMax", lambda v, ax, kd: np.max(v, axis=ax, keepdims=kd)),
    ("ReduceMin", lambda v, ax, kd: np.min(v, axis=ax, keepdims=kd)),
    ("ReduceProd", lambda v, ax, kd: np.prod(v.astype(np.float64), axis=ax, keepdims=kd)),
    ("ReduceL1", lambda v, ax, kd: np.sum(np.abs(v.astype(np.float64)), axis=ax, keepdims=kd)),
    ("ReduceL2",
     lambda v, ax, kd: np.sqrt(np.sum(v.astype(np.float64) ** 2, axis=ax, keepdims=kd))),
    ("ReduceSumSquare", lambda v, ax, kd: np.sum(v.astype(np.float64) ** 2, axis=ax, keepdims=kd)),
    ("ReduceLogSum",
     lambda v, ax, kd: np.log(np.sum(v.astype(np.float64), axis=ax, keepdims=kd))),
    ("ReduceLogSumExp",
     lambda v, ax, kd: np.log(np.sum(np.exp(v.astype(np.float64)), axis=ax, keepdims=kd))),
]:
    src = np.abs(r) + 0.1 if op == "ReduceLogSum" else (r if op != "ReduceProd" else x)
    src = np.where(np.isinf(src), 1.0, src).astype(F32) if op in ("ReduceL1", "ReduceL2",
                                                                   "ReduceSumSquare",
                                                                   "ReduceProd", "ReduceLogSum",
                                                                   "ReduceSum", "ReduceMean") else src
    with np.errstate(divide="ignore", invalid="ignore"):
        if op == "ReduceSum":  # opset 13: axes is an input
            case("reduce_sum_neg_axes", op, [src, i64([-1, 0])], [f32(fn(src, (2, 0), True))])
            case("reduce_sum_no_keepdims", op, [src, i64([1])], [f32(fn(src, (1,), False))],
                 {"keepdims": 0})
            case("reduce_sum_all", op, [src], [f32(fn(src, None, True))])
            case("reduce_sum_noop_empty_axes", op, [src, np.zeros(0, np.int64)], [src],
                 {"noop_with_empty_axes": 1})
            case("reduce_sum_empty_axes_reduces_all", op, [src, np.zeros(0, np.int64)],
                 [f32(fn(src, None, True))])
            case("reduce_sum_int", op, [i64([[1, -2, 3], [4, 5, -6]]), i64([1])],
                 [i64([[2], [3]])])
            case("reduce_sum_empty_tensor", op, [np.zeros((2, 0), F32), i64([1])],
                 [np.zeros((2, 1), F32)])
        else:
            lname = op.lower().replace("reduce", "reduce_")
            case(lname + "_neg_axes", op, [src], [f32(fn(src, (2, 0), True))], {"axes": [-1, 0]})
            case(lname + "_no_keepdims", op, [src], [f32(fn(src, (1,), False))],
                 {"axes": [-2], "keepdims": 0})
            case(lname + "_all", op, [src], [f32(fn(src, None, False))], {"keepdims": 0})
lse = f32([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, 1.0]])
case("reduce_logsumexp_infinite_rows", "ReduceLogSumExp", [lse],
     [f32([[-np.inf], [np.inf], [np.log(1 + np.e)]])], {"axes": [1]})
# Opset 17 leaves Max/Min over an empty set undefined (numpy raises): refused.
case("reduce_max_empty_tensor", "ReduceMax", [np.zeros((2, 0), F32)],
     [f32([[-np.inf], [-np.inf]])], {"axes": [1]}, error="cannot reduce an empty dim")
case("reduce_min_empty_tensor", "ReduceMin", [np.zeros((2, 0), F32)],
     [f32([[np.inf], [np.inf]])], {"axes": [1]}, error="cannot reduce an empty dim")
case("argmax_empty_axis", "ArgMax", [np.zeros((2, 0), F32)], [i64([[0], [0]])], {"axis": 1},
     error="over an empty dim")
case("reduce_prod_empty_tensor", "ReduceProd", [np.zeros((2, 0), F32)],
     [f32([[1.0], [1.0]])], {"axes": [1]})
case("reduce_max_int", "ReduceMax", [i64([[1, -2, 3], [-4, -5, -6]])], [i64([[3], [-4]])],
     {"axes": [1]})
case("reduce_max_nan", "ReduceMax", [f32([[1, np.nan, 3], [np.nan, 0, 0]])],
     [f32([np.nan, np.nan])], {"axes": [1], "keepdims": 0})
am = f32([[1, 5, 5, 2], [7, 7, 0, 7], [-1, -3, -3, -2]])
case("argmax_first", "ArgMax", [am], [np.argmax(am, axis=1).reshape(3, 1)], {"axis": -1})
case("argmax_last", "ArgMax", [am], [i64([[2], [3], [0]])],
     {"axis": 1, "select_last_index": 1})
case("argmin_no_keepdims", "ArgMin", [am], [np.argmin(am, axis=0)], {"axis": 0, "keepdims": 0})
case("argmin_last", "ArgMin", [am], [i64([[0], [2], [2]])],
     {"axis": 1, "select_last_index": 1})
case("argmax_int", "ArgMax", [i64([[3, 9, 9]])], [i64([[1]])], {"axis": 1})
cs = rnd(2, 4)
case("cumsum", "CumSum", [cs, i64(1)], [f32(np.cumsum(cs, axis=1))])
case("cumsum_neg_axis_reverse_exclusive", "CumSum", [cs, i64(-1)],
     [f32(np.concatenate([np.flip(np.cumsum(np.flip(cs, 1), 1), 1)[:, 1:],
                          np.zeros((2, 1), F32)], 1))], {"reverse": 1, "exclusive": 1})
case("cumsum_int_exclusive", "CumSum", [i64([[1, 2, 3], [4, 5, 6]]), i64(0)],
     [i64([[0, 0, 0], [1, 2, 3]])], {"exclusive": 1})

# ---------------------------------------------------------------- shape ops
t = rnd(2, 3, 4)
case("reshape_neg_one_zero", "Reshape", [t, i64([0, -1])], [t.reshape(2, 12)])
case("flatten_neg_axis", "Flatten", [t], [t.reshape(6, 4)], {"axis": -1})
case("flatten_axis0", "Flatten", [t], [t.reshape(1, 24)], {"axis": 0})
case("squeeze_neg", "Squeeze", [rnd(1, 3, 1), i64([-1])], [None])
CASES[-1] = CASES[-1][:3] + ([CASES[-1][2][0].reshape(1, 3)],) + CASES[-1][4:]
case("unsqueeze_neg", "Unsqueeze", [t, i64([-1, 0])], [t.reshape(1, 2, 3, 4, 1)])
case("transpose_default", "Transpose", [t], [np.transpose(t)])
case("transpose_perm", "Transpose", [t], [np.transpose(t, (1, 2, 0))], {"perm": [1, 2, 0]})
case("concat_neg_axis_empty", "Concat", [t, np.zeros((2, 3, 0), F32), t[:, :, :1]],
     [np.concatenate([t, t[:, :, :1]], axis=-1)], {"axis": -1})
case("concat_int", "Concat", [i64([[1, 2]]), i64([[3, 4], [5, 6]])],
     [i64([[1, 2], [3, 4], [5, 6]])], {"axis": 0})
case("split_uneven", "Split", [t, i64([1, 3])], [t[:, :, :1], t[:, :, 1:]], {"axis": -1})
case("split_equal", "Split", [t], [t[:, :1], t[:, 1:2], t[:, 2:]], {"axis": 1}, n_outputs=3)
s = np.arange(10, dtype=F32)
s2 = np.arange(20, dtype=F32).reshape(4, 5)
for nm, starts, ends, axes, steps, want in [
    ("slice_neg_step", [-1], [-11], [0], [-1], s[::-1]),
    ("slice_neg_step_2", [8], [1], [0], [-3], s[8:1:-3]),
    ("slice_huge_bounds", [-1000], [1000], [0], [1], s),
    ("slice_huge_step", [1], [10], [0], [1 << 62], s[1:10:1 << 62]),
    ("slice_int64_max_step", [1], [10], [0], [(1 << 63) - 1], s[1:10:(1 << 63) - 1]),
    ("slice_int64_min_step", [-1], [-20], [0], [-(1 << 63)], s[-1:-20:-(1 << 63)]),
    ("slice_int64_max_end", [2], [9223372036854775807], [0], [1], s[2:]),
    ("slice_neg_huge_end", [5], [-9223372036854775807], [0], [-1], s[5::-1]),
    ("slice_empty", [5], [2], [0], [1], s[5:2]),
    ("slice_start_past_end", [12], [20], [0], [1], s[12:20]),
]:
    case(nm, "Slice", [s, i64(starts), i64(ends), i64(axes), i64(steps)], [want])
case("slice_neg_axes", "Slice", [s2, i64([-1, 1]), i64([-4, 3]), i64([1, -2]), i64([-1, 1])],
     [s2[1:3, -1:-4:-1]])
case("slice_huge_steps_2d", "Slice",
     [s2, i64([-1, 0]), i64([-100, 5]), i64([0, 1]), i64([-(1 << 62), 1 << 62])],
     [s2[-1::-(1 << 62), 0:5:1 << 62]])
case("slice_no_axes", "Slice", [s2, i64([1, 1]), i64([3, 100])], [s2[1:3, 1:]])
gd = rnd(3, 4)
case("gather_neg_indices", "Gather", [gd, i64([[-1, 0], [2, -3]])], [gd[[[-1, 0], [2, -3]]]])
case("gather_axis1", "Gather", [gd, i64([3, -4, 1])], [gd[:, [3, -4, 1]]], {"axis": -1})
case("gather_scalar_index", "Gather", [gd, i64(-2)], [gd[-2]])
case("gather_int_data", "Gather", [i64([[1, 2], [3, 4]]), i64([1])], [i64([[3, 4]])])
case("gather_out_of_range", "Gather", [gd, i64([0, 3])], [gd[:1]],
     error="index 3 is out of range")
case("gather_out_of_range_neg", "Gather", [gd, i64([-4])], [gd[:1]],
     error="index -4 is out of range")
ge_d = rnd(3, 3)
ge_i = i64([[1, -1, 0], [0, 2, -3]])
case("gatherelements_neg", "GatherElements", [ge_d, ge_i],
     [np.take_along_axis(ge_d, np.where(ge_i < 0, ge_i + 3, ge_i), axis=0)])
case("gatherelements_axis1", "GatherElements", [ge_d, i64([[2, 0], [1, 1], [-1, 0]])],
     [np.take_along_axis(ge_d, i64([[2, 0], [1, 1], [2, 0]]), axis=1)], {"axis": -1})
case("gatherelements_out_of_range", "GatherElements", [ge_d, i64([[3, 0, 0]])], [ge_d[:1]],
     error="out of range")
ex = rnd(3, 1)
case("expand_bidirectional", "Expand", [ex, i64([2, 1, 4])], [np.broadcast_to(ex, (2, 3, 4))])
case("expand_smaller_shape", "Expand", [ex, i64([4])], [np.broadcast_to(ex, (3, 4))])
case("tile", "Tile", [t[:, :2, :2], i64([2, 1, 3])], [np.tile(t[:, :2, :2], (2, 1, 3))])
case("tile_int", "Tile", [i64([[1, 2]]), i64([2, 2])], [np.tile(i64([[1, 2]]), (2, 2))])
pd = np.arange(12, dtype=F32).reshape(3, 4)
case("pad_constant", "Pad", [pd, i64([1, 2, 0, 1]), f32(-5.0)],
     [np.pad(pd, ((1, 0), (2, 1)), constant_values=-5.0)])
case("pad_negative_crops", "Pad", [pd, i64([-1, 1, 0, -2])],
     [np.pad(pd, ((0, 0), (1, 0)))[1:, :-2]])
case("pad_reflect", "Pad", [pd, i64([2, 3, 2, 3])], [np.pad(pd, ((2, 2), (3, 3)), "reflect")],
     {"mode": "reflect"})
case("pad_edge", "Pad", [pd, i64([2, 5, 1, 0])], [np.pad(pd, ((2, 1), (5, 0)), "edge")],
     {"mode": "edge"})
case("pad_int", "Pad", [i64([[1, 2]]), i64([0, 1, 1, 0]), i64(9)],
     [np.pad(i64([[1, 2]]), ((0, 1), (1, 0)), constant_values=9)])
dsx = np.arange(16, dtype=F32).reshape(1, 4, 2, 2)


def d2s(v, b, mode):
    n, c, h, w = v.shape
    if mode == "DCR":
        t_ = v.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t_ = v.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t_.reshape(n, c // (b * b), h * b, w * b)


case("depthtospace_dcr", "DepthToSpace", [dsx], [d2s(dsx, 2, "DCR")], {"blocksize": 2})
case("depthtospace_crd", "DepthToSpace", [dsx], [d2s(dsx, 2, "CRD")],
     {"blocksize": 2, "mode": "CRD"})
s2d = np.arange(32, dtype=F32).reshape(1, 2, 4, 4)
case("spacetodepth", "SpaceToDepth", [s2d],
     [s2d.reshape(1, 2, 2, 2, 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 2)],
     {"blocksize": 2})
tr = rnd(2, 3, 5)
for k in (-4, -1, 0, 2, 7):
    case("trilu_upper_k%s" % str(k).replace("-", "m"), "Trilu", [tr, i64(k)], [np.triu(tr, k)])
    case("trilu_lower_k%s" % str(k).replace("-", "m"), "Trilu", [tr, i64(k)], [np.tril(tr, k)],
         {"upper": 0})
case("shape", "Shape", [t], [i64([2, 3, 4])])
case("shape_start_end_neg", "Shape", [t], [i64([3])], {"start": -2, "end": -1}, opset=15)
case("shape_clamped", "Shape", [t], [i64([2, 3, 4])], {"start": -10, "end": 10}, opset=15)
case("size", "Size", [t], [i64(24)])
case("constantofshape_int", "ConstantOfShape", [i64([2, 3])], [np.full((2, 3), 7, np.int64)],
     {"value": numpy_helper.from_array(i64([7]))})
case("constantofshape_default", "ConstantOfShape", [i64([3])], [np.zeros(3, F32)])
case("range_float_neg_delta", "Range", [f32(1.0), f32(-2.0), f32(-0.7)],
     [np.arange(1.0, -2.0, -0.7, dtype=F32)])
case("range_int", "Range", [i64(10), i64(1), i64(-3)], [np.arange(10, 1, -3, dtype=np.int64)])
case("range_empty", "Range", [i64(1), i64(5), i64(-1)], [np.zeros(0, np.int64)])

# ---------------------------------------------------------------- nn
ma, mb = rnd(2, 1, 3, 4), rnd(3, 4, 5)
case("matmul_batch_bcast", "MatMul", [ma, mb], [f32(np.matmul(ma.astype(np.float64), mb))])
v1 = rnd(4)
case("matmul_vec_left", "MatMul", [v1, mb], [f32(np.matmul(v1.astype(np.float64), mb))])
case("matmul_vec_right", "MatMul", [ma, v1], [f32(np.matmul(ma.astype(np.float64), v1))])
case("matmul_int", "MatMul", [i64([[1, -2], [3, 4]]), i64([[5], [6]])], [i64([[-7], [39]])])
ga, gb, gc = rnd(4, 3), rnd(5, 4), rnd(5)
case("gemm_trans_bcast", "Gemm", [ga, gb, gc],
     [f32(0.5 * (ga.T.astype(np.float64) @ gb.T) + 2.0 * gc)],
     {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0})
case("gemm_no_c", "Gemm", [ga.T.copy(), gb.T.copy()], [f32(ga.T.astype(np.float64) @ gb.T)])


def conv_ref(xv, wv, bv, strides, pads, dil, group):
    n, c, h, w_ = xv.shape
    m, cg, kh, kw = wv.shape
    xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        for mo in range(g * mg, (g + 1) * mg):
            for i in range(oh):
                for j in range(ow):
                    patch = xp[:, g * cg:(g + 1) * cg,
                               i * strides[0]:i * strides[0] + dil[0] * (kh - 1) + 1:dil[0],
                               j * strides[1]:j * strides[1] + dil[1] * (kw - 1) + 1:dil[1]]
                    y[:, mo, i, j] = np.sum(patch * wv[mo], axis=(1, 2, 3))
    if bv is not None:
        y += bv.reshape(1, -1, 1, 1)
    return f32(y)


cx, cw, cb = rnd(1, 4, 6, 5), rnd(6, 2, 3, 2), rnd(6)
case("conv_group_pad_stride_dil", "Conv", [cx, cw, cb],
     [conv_ref(cx, cw, cb, (2, 1), (1, 0, 2, 1), (1, 2), 2)],
     {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]})
case("conv_autopad_same_upper", "Conv", [cx, rnd(3, 4, 3, 3)], [None],
     {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
w_su = CASES[-1][2][1]
# SAME_UPPER: output ceil(in/stride); total pad = (out-1)*s + k - in, extra at the end:
# H 6 -> 3 (pads 0, 1), W 5 -> 3 (pads 1, 1).
CASES[-1] = CASES[-1][:3] + ([conv_ref(cx, w_su, None, (2, 2), (0, 1, 1, 1), (1, 1), 1)],) + \
    CASES[-1][4:]


def convt_ref(xv, wv, strides, pads, out_pad):
    n, c, h, w_ = xv.shape
    _, m, kh, kw = wv.shape
    fh = (h - 1) * strides[0] + kh
    fw = (w_ - 1) * strides[1] + kw
    full = np.zeros((n, m, fh + out_pad[0], fw + out_pad[1]))
    for i in range(h):
        for j in range(w_):
            full[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw] += \
                np.einsum("nc,cmab->nmab", xv[:, :, i, j].astype(np.float64), wv)
    return f32(full[:, :, pads[0]:full.shape[2] - pads[2], pads[1]:full.shape[3] - pads[3]])


tx, tw = rnd(1, 2, 3, 3), rnd(2, 3, 3, 2)
case("convtranspose_stride_pad_outpad", "ConvTranspose", [tx, tw],
     [convt_ref(tx, tw, (2, 2), (1, 0, 0, 1), (1, 1))],
     {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 1]})
px = rnd(1, 2, 5, 6)


def pool_ref(xv, k, s, pads, kind, include_pad=False, ceil=False, dil=(1, 1)):
    n, c, h, w_ = xv.shape
    def osz(i, d):
        span = dil[d] * (k[d] - 1) + 1
        num = i + pads[d] + pads[d + 2] - span
        o = (-(-num // s[d]) if ceil else num // s[d]) + 1
        if ceil and (o - 1) * s[d] >= i + pads[d]:
            o -= 1
        return o
    oh, ow = osz(h, 0), osz(w_, 1)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            vals, cnt = [], 0
            for a in range(k[0]):
                for b_ in range(k[1]):
                    r_ = i * s[0] - pads[0] + a * dil[0]
                    q = j * s[1] - pads[1] + b_ * dil[1]
                    inside = 0 <= r_ < h and 0 <= q < w_
                    in_pad = -pads[0] <= r_ < h + pads[2] and -pads[1] <= q < w_ + pads[3]
                    if inside:
                        vals.append(xv[:, :, r_, q].astype(np.float64))
                    if inside or (include_pad and in_pad):
                        cnt += 1
            st = np.stack(vals)
            y[:, :, i, j] = st.max(0) if kind == "max" else st.sum(0) / cnt
    return f32(y)


case("maxpool_pads_strides_dil", "MaxPool", [px],
     [pool_ref(px, (2, 3), (2, 1), (1, 1, 0, 1), "max", dil=(2, 1))],
     {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 1, 0, 1], "dilations": [2, 1]})
case("maxpool_ceil", "MaxPool", [px], [pool_ref(px, (2, 2), (2, 2), (0, 0, 0, 0), "max",
                                                ceil=True)],
     {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
case("avgpool_exclude_pad", "AveragePool", [px],
     [pool_ref(px, (3, 3), (2, 2), (1, 1, 1, 1), "avg")],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
case("avgpool_include_pad", "AveragePool", [px],
     [pool_ref(px, (3, 3), (2, 2), (1, 1, 1, 1), "avg", include_pad=True)],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1})
case("avgpool_ceil_include_pad", "AveragePool", [px],
     [pool_ref(px, (2, 2), (2, 2), (1, 1, 1, 1), "avg", include_pad=True, ceil=True)],
     {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1,
      "ceil_mode": 1})
case("globalavgpool", "GlobalAveragePool", [px], [f32(px.astype(np.float64).mean((2, 3),
                                                                                 keepdims=True))])
case("globalmaxpool", "GlobalMaxPool", [px], [px.max((2, 3), keepdims=True)])
bx = rnd(2, 3, 2, 2)
bs, bb, bm, bv = rnd(3), rnd(3), rnd(3), rnd(3, lo=0.1, hi=2.0)
case("batchnorm", "BatchNormalization", [bx, bs, bb, bm, bv],
     [f32((bx - bm.reshape(1, 3, 1, 1)) / np.sqrt(bv.reshape(1, 3, 1, 1).astype(np.float64) + 1e-3)
          * bs.reshape(1, 3, 1, 1) + bb.reshape(1, 3, 1, 1))], {"epsilon": 1e-3})
ix = rnd(2, 3, 4)
imean = ix.astype(np.float64).mean(2, keepdims=True)
ivar = ix.astype(np.float64).var(2, keepdims=True)
case("instancenorm", "InstanceNormalization", [ix, bs, bb],
     [f32((ix - imean) / np.sqrt(ivar + 1e-5) * bs.reshape(1, 3, 1) + bb.reshape(1, 3, 1))])
lx = rnd(2, 3, 4)
lw, lb = rnd(3, 4), rnd(4)
lm = lx.astype(np.float64).mean((1, 2), keepdims=True)
lv = lx.astype(np.float64).var((1, 2), keepdims=True)
case("layernorm_neg_axis", "LayerNormalization", [lx, lw, lb],
     [f32((lx - lm) / np.sqrt(lv + 1e-5) * lw + lb)], {"axis": -2})
sx = rnd(2, 3, 4)
sx[1, 2, :] = -np.inf
sx[1, 2, 0] = 0.0
for op, axis in [("Softmax", -1), ("Softmax", 1), ("LogSoftmax", -1), ("LogSoftmax", 0)]:
    e = np.exp(sx.astype(np.float64) - sx.max(axis, keepdims=True))
    want = e / e.sum(axis, keepdims=True)
    if op == "LogSoftmax":
        want = sx - sx.max(axis, keepdims=True) - np.log(e.sum(axis, keepdims=True))
    case("%s_axis%s" % (op.lower(), str(axis).replace("-", "m")), op, [sx], [f32(want)],
         {"axis": axis})
hm = f32([[1, 3, 3, 0], [-1, -1, -2, -5]])
case("hardmax_ties_first", "Hardmax", [hm], [f32([[0, 1, 0, 0], [1, 0, 0, 0]])], {"axis": -1})
case("softmax_opset11_flattens", "Softmax", [sx[0:1]], [None], {"axis": 1}, opset=11)
flat = sx[0:1].reshape(1, 12).astype(np.float64)
e = np.exp(flat - flat.max(1, keepdims=True))
CASES[-1] = CASES[-1][:3] + ([f32((e / e.sum(1, keepdims=True)).reshape(1, 3, 4))],) + \
    CASES[-1][4:]

for c in CASES:
    write_case(*c)
print(len(CASES))
