"""A float64 oracle that tells a miscompile from rounding noise.

`trnsim validate` compares the simulator with the reference interpreter in fp32;
graphs that amplify rounding (a variance near 0 under a LayerNorm, a difference of
near-equal values divided by something small) fail that comparison with no bug in
sight. triage() re-runs a failing model on inputs of its own and evaluates it in
numpy in float64: once exactly (the truth) and twice under a noise model -- every
op that an fp32 implementation may round differently perturbed by a few ulps, every
sum by an accumulation-order error -- which shows how far the graph lets plausible
rounding drift. The case is a real mismatch only when the simulator is several
times further from the truth than that.

evaluate() covers the ONNX ops the generator emits (opset 17 semantics) and
rounds MatMul/Gemm/Conv operands to bf16 when asked, as the compiler's autocast
and validate's reference do.
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import onnx
from onnx import numpy_helper

try:
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover - scipy is optional
    _erf = np.vectorize(math.erf, otypes=[np.float64])


class Unsupported(Exception):
    pass


def to_bf16(a: np.ndarray) -> np.ndarray:
    """a rounded to bfloat16 (nearest, ties to even), in a's dtype."""
    f = np.ascontiguousarray(a, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    r = u.astype(np.uint32).view(np.float32)
    r = np.where(np.isnan(f), f, r)
    return r.astype(a.dtype)


_TO_NP = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
          onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
          onnx.TensorProto.BOOL: np.bool_}


def _attrs(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _axis(a: int, r: int) -> int:
    return a + r if a < 0 else a


# Ops whose result the chip may round differently from the reference (not a single
# IEEE operation, or rewritten by the compiler, e.g. x / c as x * (1/c)); the noise
# model perturbs their outputs by a few fp32 ulps.
_INEXACT = {"Sigmoid", "Tanh", "Exp", "Log", "Erf", "Softplus", "Softsign", "Reciprocal", "Div",
            "Pow", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Sum", "Mean", "Sqrt",
            "LeakyRelu", "PRelu", "ThresholdedRelu", "Softmax", "LogSoftmax",
            "LayerNormalization", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd",
            "AveragePool", "GlobalAveragePool", "ReduceMean", "Gemm"}
EPS32 = 2.0 ** -23


class _Eval:
    def __init__(self, ft, emulate: Optional[str], noise: Optional[np.random.Generator] = None):
        self.ft = ft  # float type of the evaluation
        self.emulate = emulate
        self.noise = noise  # the rounding-noise model, when set

    def _u1(self, shape):
        return self.noise.uniform(-1.0, 1.0, size=shape)

    def jitter(self, v):
        """v with each element off by up to 4 fp32 ulps (noise model only)."""
        if self.noise is None or v.dtype.kind != "f":
            return v
        return v * (1 + 4 * EPS32 * self._u1(v.shape))

    def nsum(self, x, axis, keepdims):
        """A sum; under the noise model plus an error like fp32 accumulation's in some
        order: up to eps * sqrt(n) / 2 * sum |x| (generous for random signs, about 3x
        the typical sequential error for terms of one sign)."""
        s = np.sum(x, axis=axis, keepdims=keepdims)
        if self.noise is None:
            return s
        n = x.size // max(1, np.asarray(s).size)
        scale = 0.5 * EPS32 * math.sqrt(max(n, 1)) * np.sum(np.abs(x), axis=axis, keepdims=keepdims)
        return s + scale * self._u1(np.shape(s))

    def dot_noise(self, y, absdot):
        if self.noise is None:
            return y
        k = self._k
        return y + 0.5 * EPS32 * math.sqrt(max(k, 1)) * absdot * self._u1(y.shape)

    def f(self, x):
        return np.asarray(x, dtype=self.ft) if np.asarray(x).dtype.kind == "f" else np.asarray(x)

    def mm_operand(self, x):
        return to_bf16(x) if self.emulate == "bf16" else x

    def run(self, model: onnx.ModelProto, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        env = {}
        for t in model.graph.initializer:
            env[t.name] = self.f(numpy_helper.to_array(t))
        for k, v in inputs.items():
            env[k] = self.f(v)
        for node in model.graph.node:
            ins = [env[i] if i else None for i in node.input]
            fn = getattr(self, "op_" + node.op_type, None)
            if fn is None:
                raise Unsupported(node.op_type)
            outs = fn(ins, _attrs(node), len(node.output))
            if not isinstance(outs, list):
                outs = [outs]
            for name, v in zip(node.output, outs):
                v = np.asarray(v)
                if v.dtype.kind == "f":
                    v = v.astype(self.ft)
                    if node.op_type in _INEXACT:
                        v = self.jitter(v)
                env[name] = v
        return {o.name: env[o.name] for o in model.graph.output}

    # --- elementwise ---------------------------------------------------------
    def _u(fn):  # noqa: N805 -- a decorator for one-input ops
        return lambda self, i, a, n: fn(self, i[0], a)

    op_Relu = _u(lambda s, x, a: np.maximum(x, 0))
    op_Sigmoid = _u(lambda s, x, a: 1 / (1 + np.exp(-x)))
    op_Tanh = _u(lambda s, x, a: np.tanh(x))
    op_Exp = _u(lambda s, x, a: np.exp(x))
    op_Log = _u(lambda s, x, a: np.log(x))
    op_Sqrt = _u(lambda s, x, a: np.sqrt(x))
    op_Reciprocal = _u(lambda s, x, a: 1 / x)
    op_Abs = _u(lambda s, x, a: np.abs(x))
    op_Neg = _u(lambda s, x, a: -x)
    op_Erf = _u(lambda s, x, a: _erf(x.astype(np.float64)).astype(x.dtype))
    op_Softplus = _u(lambda s, x, a: np.logaddexp(0, x))
    op_Softsign = _u(lambda s, x, a: x / (1 + np.abs(x)))
    op_Identity = _u(lambda s, x, a: x)
    op_Floor = _u(lambda s, x, a: np.floor(x))
    op_Ceil = _u(lambda s, x, a: np.ceil(x))
    op_Round = _u(lambda s, x, a: np.round(x))
    op_Sign = _u(lambda s, x, a: np.sign(x))
    op_Not = _u(lambda s, x, a: np.logical_not(x))
    op_LeakyRelu = _u(lambda s, x, a: np.where(x < 0, a.get("alpha", 0.01) * x, x))
    op_ThresholdedRelu = _u(lambda s, x, a: np.where(x > a.get("alpha", 1.0), x, 0))
    op_HardSigmoid = _u(lambda s, x, a: np.clip(a.get("alpha", 0.2) * x + a.get("beta", 0.5),
                                                0, 1))
    op_HardSwish = _u(lambda s, x, a: x * np.clip(x / 6 + 0.5, 0, 1))

    def op_Elu(self, i, a, n):
        x, al = i[0], a.get("alpha", 1.0)
        return np.where(x > 0, x, al * np.expm1(np.minimum(x, 0)))

    def op_Selu(self, i, a, n):
        x = i[0]
        al, g = a.get("alpha", 1.67326319217681884765625), a.get("gamma", 1.05070102214813232421875)
        return np.where(x > 0, g * x, g * al * np.expm1(np.minimum(x, 0)))

    def op_Celu(self, i, a, n):
        x, al = i[0], a.get("alpha", 1.0)
        return np.maximum(x, 0) + np.minimum(0, al * np.expm1(np.minimum(x, 0) / al))

    def op_Clip(self, i, a, n):
        x = i[0]
        if len(i) > 1 and i[1] is not None:
            x = np.maximum(x, i[1])
        if len(i) > 2 and i[2] is not None:
            x = np.minimum(x, i[2])
        return x

    def op_PRelu(self, i, a, n):
        return np.where(i[0] < 0, i[1] * i[0], i[0])

    def _b(fn):  # noqa: N805 -- two-input ops
        return lambda self, i, a, n: fn(i[0], i[1])

    op_Add = _b(lambda x, y: x + y)
    op_Sub = _b(lambda x, y: x - y)
    op_Mul = _b(lambda x, y: x * y)
    op_Div = _b(lambda x, y: x / y)
    op_Pow = _b(lambda x, y: np.power(x, y))
    op_Equal = _b(lambda x, y: x == y)
    op_Less = _b(lambda x, y: x < y)
    op_Greater = _b(lambda x, y: x > y)
    op_LessOrEqual = _b(lambda x, y: x <= y)
    op_GreaterOrEqual = _b(lambda x, y: x >= y)
    op_And = _b(np.logical_and)
    op_Or = _b(np.logical_or)
    op_Xor = _b(np.logical_xor)

    def _fold(self, i, fn):
        r = i[0]
        for x in i[1:]:
            r = fn(r, x)
        return r

    def op_Sum(self, i, a, n):
        return self._fold(i, np.add)

    def op_Mean(self, i, a, n):
        return self._fold(i, np.add) / len(i)

    def op_Max(self, i, a, n):
        return self._fold(i, np.maximum)

    def op_Min(self, i, a, n):
        return self._fold(i, np.minimum)

    def op_Where(self, i, a, n):
        return np.where(i[0], i[1], i[2])

    def op_Cast(self, i, a, n):
        to = _TO_NP.get(a["to"])
        if to is None:
            raise Unsupported(f"Cast to {a['to']}")
        x = i[0]
        if np.issubdtype(to, np.integer) and x.dtype.kind == "f":
            x = np.trunc(x)
        return x.astype(self.ft if to in (np.float32, np.float64) else to)

    # --- matmul ----------------------------------------------------------------
    def op_MatMul(self, i, a, n):
        A, B = self.mm_operand(i[0]), self.mm_operand(i[1])
        y = np.matmul(A, B)
        if self.noise is not None:
            self._k = A.shape[-1]
            y = self.dot_noise(y, np.matmul(np.abs(A), np.abs(B)))
        return y

    def op_Gemm(self, i, a, n):
        A, B = self.mm_operand(i[0]), self.mm_operand(i[1])
        if a.get("transA", 0):
            A = A.T
        if a.get("transB", 0):
            B = B.T
        y = A @ B
        if self.noise is not None:
            self._k = A.shape[-1]
            y = self.dot_noise(y, np.abs(A) @ np.abs(B))
        y = a.get("alpha", 1.0) * y
        if len(i) > 2 and i[2] is not None:
            y = y + a.get("beta", 1.0) * i[2]
        return y

    # --- reductions and row-wise ops -------------------------------------------
    def _reduce(self, i, a, fn):
        x = i[0]
        axes = a.get("axes")
        if len(i) > 1 and i[1] is not None:
            axes = [int(v) for v in i[1]]
        axes = tuple(range(x.ndim)) if not axes else tuple(_axis(v, x.ndim) for v in axes)
        return fn(x, axes, bool(a.get("keepdims", 1)))

    def op_ReduceSum(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: self.nsum(x, ax, k))

    def op_ReduceMean(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: self.nsum(x, ax, k) /
                            (x.size // max(1, np.sum(x, axis=ax, keepdims=k).size)))

    def op_ReduceMax(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: np.max(x, axis=ax, keepdims=k))

    def op_ReduceMin(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: np.min(x, axis=ax, keepdims=k))

    def op_ReduceProd(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: np.prod(x, axis=ax, keepdims=k))

    def op_ReduceL1(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: self.nsum(np.abs(x), ax, k))

    def op_ReduceL2(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: np.sqrt(self.nsum(x * x, ax, k)))

    def op_ReduceSumSquare(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: self.nsum(x * x, ax, k))

    def op_ReduceLogSum(self, i, a, n):
        return self._reduce(i, a, lambda x, ax, k: np.log(self.nsum(x, ax, k)))

    def op_ReduceLogSumExp(self, i, a, n):
        def lse(x, ax, k):
            m = np.max(x, axis=ax, keepdims=True)
            r = np.log(self.nsum(self.jitter(np.exp(x - m)), ax, True)) + m
            return r if k else np.squeeze(r, axis=ax)
        return self._reduce(i, a, lse)

    def op_Softmax(self, i, a, n):
        x = i[0]
        ax = _axis(a.get("axis", -1), x.ndim)
        e = self.jitter(np.exp(x - np.max(x, axis=ax, keepdims=True)))
        return e / self.nsum(e, ax, True)

    def op_LogSoftmax(self, i, a, n):
        x = i[0]
        ax = _axis(a.get("axis", -1), x.ndim)
        d = x - np.max(x, axis=ax, keepdims=True)
        return d - np.log(self.nsum(self.jitter(np.exp(d)), ax, True))

    def op_LayerNormalization(self, i, a, n):
        x = i[0]
        ax = tuple(range(_axis(a.get("axis", -1), x.ndim), x.ndim))
        cnt = int(np.prod([x.shape[k] for k in ax]))
        mean = self.nsum(x, ax, True) / cnt
        d = x - mean
        var = self.nsum(d * d, ax, True) / cnt
        y = d / np.sqrt(var + a.get("epsilon", 1e-5)) * i[1]
        if len(i) > 2 and i[2] is not None:
            y = y + i[2]
        return y

    # --- data movement ---------------------------------------------------------
    def op_Reshape(self, i, a, n):
        x, spec = i[0], [int(v) for v in i[1]]
        spec = [x.shape[k] if v == 0 and not a.get("allowzero", 0) else v
                for k, v in enumerate(spec)]
        return x.reshape(spec)

    def op_Flatten(self, i, a, n):
        x = i[0]
        ax = _axis(a.get("axis", 1), x.ndim)
        return x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)

    def op_Transpose(self, i, a, n):
        return np.transpose(i[0], a.get("perm"))

    def op_Squeeze(self, i, a, n):
        x = i[0]
        if len(i) > 1 and i[1] is not None:
            return np.squeeze(x, axis=tuple(_axis(int(v), x.ndim) for v in i[1]))
        return np.squeeze(x)

    def op_Unsqueeze(self, i, a, n):
        x = i[0]
        r = x.ndim + len(i[1])
        for ax in sorted(_axis(int(v), r) for v in i[1]):
            x = np.expand_dims(x, ax)
        return x

    def op_Concat(self, i, a, n):
        return np.concatenate(i, axis=a["axis"])

    def op_Split(self, i, a, n):
        x = i[0]
        ax = _axis(a.get("axis", 0), x.ndim)
        if len(i) > 1 and i[1] is not None:
            cuts = np.cumsum([int(v) for v in i[1]])[:-1]
        else:
            cuts = [x.shape[ax] // n * k for k in range(1, n)]
        return list(np.split(x, cuts, axis=ax))

    def op_Slice(self, i, a, n):
        x = i[0]
        starts, ends = [int(v) for v in i[1]], [int(v) for v in i[2]]
        axes = ([int(v) for v in i[3]] if len(i) > 3 and i[3] is not None
                else list(range(len(starts))))
        steps = [int(v) for v in i[4]] if len(i) > 4 and i[4] is not None else [1] * len(starts)
        for s, e, ax, st in zip(starts, ends, axes, steps):
            ax = _axis(ax, x.ndim)
            d = x.shape[ax]
            s = s + d if s < 0 else s
            e = e + d if e < 0 else e
            if st > 0:
                s, e = min(max(s, 0), d), min(max(e, 0), d)
            else:
                s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
            x = np.take(x, np.arange(s, e, st, dtype=np.int64), axis=ax)
        return x

    def op_Pad(self, i, a, n):
        x, pads = i[0], [int(v) for v in i[1]]
        r = x.ndim
        width = [(pads[k], pads[k + r]) for k in range(r)]
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode == "constant":
            v = i[2].item() if len(i) > 2 and i[2] is not None else 0
            return np.pad(x, width, mode="constant", constant_values=v)
        return np.pad(x, width, mode=mode)

    def op_Expand(self, i, a, n):
        shape = np.broadcast_shapes(i[0].shape, tuple(int(v) for v in i[1]))
        return np.broadcast_to(i[0], shape).copy()

    def op_Tile(self, i, a, n):
        return np.tile(i[0], [int(v) for v in i[1]])

    def op_Gather(self, i, a, n):
        x, idx = i[0], np.asarray(i[1]).astype(np.int64)
        ax = _axis(a.get("axis", 0), x.ndim)
        idx = np.where(idx < 0, idx + x.shape[ax], idx)
        return np.take(x, idx, axis=ax)

    # --- convolution and pooling -----------------------------------------------
    def _window(self, x, a, kernel, pad_value):
        """x padded, the output spatial size and, per kernel tap, the strided view."""
        nd = x.ndim - 2
        st = a.get("strides", [1] * nd)
        dil = a.get("dilations", [1] * nd)
        pads = a.get("pads", [0] * (2 * nd))
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or a.get("ceil_mode", 0):
            raise Unsupported("auto_pad/ceil_mode")
        xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[k], pads[k + nd]) for k in range(nd)],
                    constant_values=pad_value)
        out = [(xp.shape[2 + k] - ((kernel[k] - 1) * dil[k] + 1)) // st[k] + 1 for k in range(nd)]
        taps = []
        for tap in np.ndindex(*kernel):
            sl = tuple(slice(tap[k] * dil[k], tap[k] * dil[k] + st[k] * (out[k] - 1) + 1, st[k])
                       for k in range(nd))
            taps.append((tap, xp[(slice(None), slice(None)) + sl]))
        return taps, out, pads

    def op_Conv(self, i, a, n):
        x, w = self.mm_operand(i[0]), self.mm_operand(i[1])
        g = a.get("group", 1)
        N, C = x.shape[:2]
        co, cig = w.shape[:2]
        kernel = list(w.shape[2:])
        taps, out, _ = self._window(x, a, kernel, 0)
        cog = co // g
        y = np.zeros((N, g, cog) + tuple(out), dtype=x.dtype)
        wg = w.reshape((g, cog, cig) + tuple(kernel))
        ay = np.zeros_like(y) if self.noise is not None else None
        for tap, v in taps:
            vg = v.reshape((N, g, cig) + tuple(out))
            wt = wg[(slice(None),) * 3 + tap]
            y += np.einsum("ngc...,goc->ngo...", vg, wt)
            if ay is not None:
                ay += np.einsum("ngc...,goc->ngo...", np.abs(vg), np.abs(wt))
        if ay is not None:
            self._k = cig * len(taps)
            y = self.dot_noise(y, ay)
        y = y.reshape((N, co) + tuple(out))
        if len(i) > 2 and i[2] is not None:
            y = y + i[2].reshape((1, co) + (1,) * len(out))
        return y

    def op_MaxPool(self, i, a, n):
        if n > 1:
            raise Unsupported("MaxPool indices")
        taps, _, _ = self._window(i[0], a, a["kernel_shape"], -np.inf)
        return np.max(np.stack([v for _, v in taps]), axis=0)

    def op_AveragePool(self, i, a, n):
        x = i[0]
        taps, _, _ = self._window(x, a, a["kernel_shape"], 0)
        s = self.nsum(np.stack([v for _, v in taps]), 0, False)
        if a.get("count_include_pad", 0):  # (no ceil_mode: every window lies in the pads)
            return s / np.prod(a["kernel_shape"])
        # Input elements per window: the same windows over ones padded with zeros.
        ones = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
        cnt, _, _ = self._window(ones, a, a["kernel_shape"], 0)
        return s / np.sum(np.stack([v for _, v in cnt]), axis=0)

    def op_GlobalAveragePool(self, i, a, n):
        x = i[0]
        ax = tuple(range(2, x.ndim))
        return self.nsum(x, ax, True) / int(np.prod(x.shape[2:]))

    def op_GlobalMaxPool(self, i, a, n):
        x = i[0]
        return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)


def evaluate(model: onnx.ModelProto, inputs: Dict[str, np.ndarray], dtype=np.float64,
             emulate: Optional[str] = None, noise_seed: Optional[int] = None
             ) -> Dict[str, np.ndarray]:
    """The graph outputs of model on inputs, floats computed in dtype; with
    noise_seed, under the rounding-noise model (a plausible fp32 implementation's
    errors, drawn at random)."""
    rng = None if noise_seed is None else np.random.default_rng(noise_seed)
    with np.errstate(all="ignore"):
        return _Eval(dtype, emulate, rng).run(model, inputs)


def make_inputs(model: onnx.ModelProto, seed: int) -> Dict[str, np.ndarray]:
    """Inputs like validate's --random-inputs (fp32 in [-1, 1), integers in [0, 10),
    bools 0/1), from numpy's generator."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        tt = i.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        t = _TO_NP.get(tt.elem_type)
        if t is None:
            raise Unsupported(f"input type {tt.elem_type}")
        if t == np.bool_:
            out[i.name] = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif np.issubdtype(t, np.integer):
            out[i.name] = rng.integers(0, 10, size=shape).astype(t)
        else:
            out[i.name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
    return out


def _norm_err(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> float:
    """max |got - want| / (atol + rtol |want|) over elements where want is finite;
    inf where got is not finite there, or where want is not finite and got differs."""
    got = np.asarray(got, np.float64).reshape(-1)
    want = np.asarray(want, np.float64).reshape(-1)
    if got.shape != want.shape:
        return math.inf
    fin = np.isfinite(want)
    z = 0.0
    if np.any(~fin):
        w, g = want[~fin], got[~fin]
        same = (np.isnan(w) & np.isnan(g)) | (w == g)
        if not np.all(same):
            z = math.inf
    if np.any(fin):
        g, w = got[fin], want[fin]
        if not np.all(np.isfinite(g)):
            return math.inf
        z = max(z, float(np.max(np.abs(g - w) / (atol + rtol * np.abs(w)))))
    return z


def judge(sim: Dict[str, np.ndarray], truth: Dict[str, np.ndarray],
          noisy: Sequence[Dict[str, np.ndarray]], rtol: float, atol: float) -> Tuple[bool, str]:
    """(real, why): real when some output's simulated error (normalised by the
    tolerance) exceeds 1 and 4x the largest of the noise-model runs'."""
    real, why = False, []
    for name, t in truth.items():
        zs = _norm_err(sim[name], t, rtol, atol)
        zn = max(_norm_err(nz[name], t, rtol, atol) for nz in noisy)
        bad = zs > 1 and (zs > 4 * zn or (math.isinf(zs) and not math.isinf(zn)))
        real |= bad
        why.append(f"{name}: simulator {zs:.3g}, rounding noise {zn:.3g} x tolerance")
    return real, "; ".join(why)


def triage(binary: str, model: onnx.ModelProto, args: Sequence[str], timeout: float,
           seed: int, run_validate) -> Tuple[str, str]:
    """('mismatch' | 'noise' | 'pass' | 'unknown', detail) for a model that failed
    validate: re-validated on numpy inputs of `seed`, then judged against the oracle."""
    prec = "bf16"
    for k, x in enumerate(args):
        if x == "--precision" and k + 1 < len(args):
            prec = args[k + 1]
        elif x.startswith("--precision="):
            prec = x.split("=", 1)[1]
    if prec not in ("fp32", "bf16"):
        return "unknown", f"no oracle for {prec}"
    try:
        inputs = make_inputs(model, seed)
        em = prec if prec == "bf16" else None
        truth = evaluate(model, inputs, np.float64, em)
        noisy = [evaluate(model, inputs, np.float64, em, noise_seed=k) for k in (1, 2)]
    except (Unsupported, ValueError, IndexError, KeyError) as e:
        return "unknown", f"oracle: {type(e).__name__}: {e}"
    with tempfile.TemporaryDirectory(prefix="trnsim-oracle-") as d:
        mp = os.path.join(d, "model.onnx")
        onnx.save(model, mp)
        a: List[str] = [x for x in args if not x.startswith("--random-inputs")]
        for name, v in inputs.items():
            p = os.path.join(d, f"in_{len(a)}.npy")
            # (a 0-d .npy is refused for a scalar input: the program declares [1])
            np.save(p, v.reshape(1) if v.ndim == 0 else v)
            a += ["--input", f"{name}={p}"]
        od = os.path.join(d, "out")
        o = run_validate(binary, mp, a + ["--output-dir", od], timeout)
        if o.cls == "pass":
            return "pass", "passes on the oracle's inputs"
        if o.cls != "mismatch":
            return "unknown", f"{o.cls} on the oracle's inputs"
        sim = {}
        for name in truth:
            p = os.path.join(od, name + ".npy")
            if not os.path.exists(p):
                return "unknown", f"no output file for {name}"
            sim[name] = np.load(p)
    rtol, atol = (1e-4, 1e-5) if prec == "fp32" else (1e-2, 1e-2)
    real, why = judge(sim, truth, noisy, rtol, atol)
    return ("mismatch" if real else "noise"), why
