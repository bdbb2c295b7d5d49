"""Host numerics of a traced kernel, in numpy, written from the ISA's semantics
(docs/isa.md): engines read fp32, compute, and round to the destination dtype. Every
tile and output starts as NaN, so a read of memory the kernel never wrote shows up
as NaN in its results."""

import math

import numpy as np

from trnsim.kernels._lang import DTYPES, HbmView, TileView


# ---------------------------------------------------------------- dtypes

def _round_bf16(x):
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, r)


def _round_fp8(x, mbits, emin, maxval, saturate):
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
        e = np.maximum(e, emin)
        q = np.exp2(e - mbits)
        r = np.round(x / q) * q  # np.round: half to even
    big = np.abs(r) > maxval
    with np.errstate(invalid="ignore"):
        if saturate:
            r = np.where(big | np.isinf(x), np.sign(x) * maxval, r)
        else:
            r = np.where(big, np.sign(x) * np.inf, r)
    r = np.where(a == 0, x, r)
    return np.where(np.isnan(x), np.nan, r)


def round_to(x, dtype):
    """Values of x (fp32) as `dtype` holds them, widened back (float64 array)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "fp32":
        r = x
    elif dtype == "bf16":
        r = _round_bf16(x)
    elif dtype == "fp16":
        with np.errstate(over="ignore"):
            r = x.astype(np.float16)
    elif dtype == "fp8e4m3":
        r = _round_fp8(x, 3, -6, 448.0, True)
    elif dtype == "fp8e5m2":
        r = _round_fp8(x, 2, -14, 57344.0, False)
    elif dtype in ("int32", "uint8"):
        lo, hi = (-2.0 ** 31, 2.0 ** 31 - 1) if dtype == "int32" else (0.0, 255.0)
        with np.errstate(invalid="ignore"):
            r = np.clip(np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0)), lo, hi)
    else:
        raise ValueError(dtype)
    return np.asarray(r, dtype=np.float64)


# ---------------------------------------------------------------- memory

def _index(offset, dims):
    idx = np.full([n for _, n in dims] or [], offset, dtype=np.int64)
    for k, (st, n) in enumerate(dims):
        shape = [1] * len(dims)
        shape[k] = n
        idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return idx


class Memory:
    def __init__(self, trace):
        self.tiles = {id(t): np.full((t.shape[0], t.free_elems), np.nan) for t in trace.tiles}
        self.hbm = {}

    def read(self, v):
        """fp32 values of a view, shaped as the view."""
        if isinstance(v, HbmView):
            data = self.hbm[v.tensor.name]
            out = data[_index(v.offset, v.dims)]
        else:
            data = self.tiles[id(v.tile)]
            idx = _index(v.offset, v.dims)
            out = data[v.p0:v.p0 + v.np][:, idx.reshape(-1)]
            out = out.reshape(v.shape)
        return np.asarray(out, dtype=np.float32)

    def write(self, v, values):
        values = round_to(np.broadcast_to(np.asarray(values, np.float32), v.shape), v.dtype)
        if isinstance(v, HbmView):
            self.hbm[v.tensor.name][_index(v.offset, v.dims)] = values
        else:
            idx = _index(v.offset, v.dims).reshape(-1)
            self.tiles[id(v.tile)][v.p0:v.p0 + v.np, idx] = values.reshape(v.np, -1)


# ---------------------------------------------------------------- ops

def _alu(op, a, b):
    a, b = np.float32(a) if np.isscalar(a) else a, np.float32(b) if np.isscalar(b) else b
    with np.errstate(all="ignore"):
        if op == "bypass":
            return a + np.zeros_like(b)
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / b
        if op == "max":
            return np.maximum(a, b)
        if op == "min":
            return np.minimum(a, b)
        if op == "pow":
            return np.power(a, b)
        cmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}[op]
        return cmp(a, b).astype(np.float32)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x < 0, np.exp(np.minimum(x, 0)) / (1 + np.exp(np.minimum(x, 0))),
                        1 / (1 + np.exp(-np.maximum(x, 0))))


def _act(func, x):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        if func == "identity":
            return x
        if func == "relu":
            return np.where(x < 0, 0.0, x)
        if func == "gelu":
            return 0.5 * x * (1 + _erf(x / math.sqrt(2)))
        if func == "gelu_tanh":
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        if func == "sigmoid":
            return _sigmoid(x)
        if func == "tanh":
            return np.tanh(x)
        if func == "exp":
            return np.exp(x)
        if func == "log":
            return np.log(x)
        if func == "silu":
            return x * _sigmoid(x)
        if func == "sqrt":
            return np.sqrt(x)
        if func == "rsqrt":
            return 1 / np.sqrt(x)
        if func == "reciprocal":
            return 1 / x
        if func == "square":
            return x * x
        if func == "abs":
            return np.abs(x)
        if func == "erf":
            return _erf(x)
        if func == "softplus":
            return np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(x)))
    raise ValueError(func)


def _arg(mem, a, shape):
    """An immediate or a per-partition [P,1] view, broadcastable to `shape`."""
    if isinstance(a, TileView):
        return mem.read(a).reshape([shape[0]] + [1] * (len(shape) - 1))
    return np.float32(a)


def _reduce(op, x, axes):
    f = {"add": np.sum, "max": np.max, "min": np.min}[op]
    return f(x.astype(np.float64 if op == "add" else np.float32), axis=tuple(axes), keepdims=True)


def run_op(mem, op):
    o, a = op.operands, op.attrs
    c = op.opcode
    if c == "dma_copy":
        mem.write(o["dst"], mem.read(o["src"]).reshape(o["dst"].shape))
    elif c == "matmul":
        st = mem.read(o["stationary"]).reshape(o["stationary"].np, -1).astype(np.float64)
        mv = mem.read(o["moving"]).reshape(o["moving"].np, -1).astype(np.float64)
        r = (st.T @ mv).astype(np.float32)
        d = o["dst"]
        if a.get("accumulate"):
            r = mem.read(d).reshape(r.shape) + r
        mem.write(d, r.reshape(d.shape))
    elif c == "transpose":
        s = mem.read(o["src"]).reshape(o["src"].np, -1)
        mem.write(o["dst"], s.T.reshape(o["dst"].shape))
    elif c == "tensor_tensor":
        mem.write(o["dst"], _alu(a["op"], mem.read(o["in0"]), mem.read(o["in1"])))
    elif c == "tensor_scalar":
        s = mem.read(o["src"])
        a0, a1 = _arg(mem, a["arg0"], s.shape), _arg(mem, a.get("arg1", 0.0), s.shape)
        t = _alu(a["op0"], a0, s) if a.get("reverse0") else _alu(a["op0"], s, a0)
        op1 = a.get("op1", "bypass")
        r = _alu(op1, a1, t) if a.get("reverse1") else _alu(op1, t, a1)
        mem.write(o["dst"], r)
        if "accum" in a:
            axes = list(range(1, r.ndim))
            mem.write(a["accum"], _reduce(a.get("accum_op", "add"), r, axes).reshape(
                a["accum"].shape))
    elif c == "activation":
        s = mem.read(o["src"])
        sc, bi = _arg(mem, a.get("scale", 1.0), s.shape), _arg(mem, a.get("bias", 0.0), s.shape)
        with np.errstate(all="ignore"):
            x = (s * sc + bi).astype(np.float32)
        r = _act(a["func"], x).astype(np.float32)
        mem.write(o["dst"], r)
        if "accum" in a:
            mem.write(a["accum"], r.astype(np.float64).reshape(r.shape[0], -1).sum(
                axis=1).reshape(a["accum"].shape))
    elif c == "tensor_copy":
        mem.write(o["dst"], mem.read(o["src"]))
    elif c == "memset":
        mem.write(o["dst"], np.float32(a["value"]))
    elif c == "tensor_reduce":
        s = mem.read(o["src"])
        dims = op.text_dims["src"][0]
        # Axes of the src pattern (size-1 axes dropped) -> axes of the view.
        sizes = [n for _, n in o["src"].dims]
        keep = [i + 1 for i, n in enumerate(sizes) if n > 1]
        assert len(keep) == len(dims)
        axes = [keep[j] for j in a["axes"]]
        mem.write(o["dst"], _reduce(a["op"], s, axes).reshape(o["dst"].shape))
    elif c == "partition_reduce":
        s = mem.read(o["src"]).reshape(o["src"].np, -1)
        r = _reduce(a["op"], s, [0])
        mem.write(o["dst"], np.broadcast_to(r, (o["dst"].np, r.shape[1])).reshape(
            o["dst"].shape))
    elif c == "partition_broadcast":
        s = mem.read(o["src"]).reshape(1, -1)
        mem.write(o["dst"], np.broadcast_to(s, (o["dst"].np, s.shape[1])).reshape(
            o["dst"].shape))
    elif c in ("iota", "affine_select"):
        d = o["dst"]
        v = np.float32(a["base"]) + np.float32(a["pstep"]) * np.arange(
            d.np, dtype=np.float32).reshape([d.np] + [1] * len(d.dims))
        for k, (st, n) in enumerate(d.dims):
            shape = [1] * (len(d.dims) + 1)
            shape[k + 1] = n
            v = v + np.float32(a["steps"][k]) * np.arange(n, dtype=np.float32).reshape(shape)
        v = np.broadcast_to(v, d.shape)
        if c == "iota":
            mem.write(d, v)
        else:
            keep = _alu(a["cmp"], v, np.float32(0)) != 0
            mem.write(d, np.where(keep, mem.read(o["src"]), np.float32(a["fill"])))
    elif c == "select":
        p = mem.read(o["pred"])
        mem.write(o["dst"], np.where(p != 0, mem.read(o["on_true"]), mem.read(o["on_false"])))
    elif c == "bn_stats":
        s = mem.read(o["src"]).reshape(o["src"].np, -1).astype(np.float64)
        mean = s.mean(axis=1)
        m2 = ((s - mean[:, None]) ** 2).sum(axis=1)
        mem.write(o["dst"], np.stack([np.full_like(mean, s.shape[1]), mean, m2], axis=1))
    elif c == "bn_aggr":
        s = mem.read(o["src"]).reshape(o["src"].np, -1, 3).astype(np.float64)
        cnt, mean, m2 = s[..., 0], s[..., 1], s[..., 2]
        total = cnt.sum(axis=1)
        mu = (cnt * mean).sum(axis=1) / total
        var = (m2 + cnt * (mean - mu[:, None]) ** 2).sum(axis=1) / total
        mem.write(o["dst"], np.stack([mu, var], axis=1))
    else:
        raise NotImplementedError(c)


def simulate(trace, inputs):
    """Runs the trace on {input name: float array}; returns {output name: array} in the
    dtypes `trnsim run --output-dir` writes (bf16/fp8 as float32)."""
    mem = Memory(trace)
    for t in trace.tensors:
        if t.role == "input":
            mem.hbm[t.name] = round_to(np.asarray(inputs[t.name], np.float32).reshape(-1),
                                       t.dtype)
        else:
            mem.hbm[t.name] = np.full(int(np.prod(t.shape)), np.nan)
    for op in trace.ops:
        run_op(mem, op)
    outs = {}
    for t in trace.tensors:
        if t.role == "output":
            v = mem.hbm[t.name].reshape(t.shape)
            np_dt = DTYPES[t.dtype][1]
            if np_dt in (np.int32, np.uint8):
                v = np.nan_to_num(v, nan=0.0)
            outs[t.name] = v.astype(np_dt)
    return outs
