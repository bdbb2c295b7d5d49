"""Seeded generator of random valid ONNX graphs over the ops the compiler lowers.

generate(seed) -> Case: the same seed always gives the same model, precision and
config. A graph has 1..~12 "main" nodes (elementwise unary/binary with numpy
broadcasting, MatMul/Gemm, reductions, Softmax/LayerNorm and the patterns the
compiler fuses, data movement, comparisons/Where/Cast, Conv/pooling) wired as chains
and diamonds (a later node reuses an earlier value), plus the guard nodes that keep
values in a safe range. Every value the graph computes and nothing reads is an
output, and sometimes a value that is read is one too.

Inputs are filled by `trnsim validate --random-inputs=SEED` (uniform [-1, 1), integer
inputs in [0, 10)), so ranges are kept in the graph: each value carries a rough bound
on its magnitude and, where known, a lower bound; ops with a restricted domain (Log,
Sqrt, Reciprocal, Div, Pow) get their operand moved into it (Abs + c), values that
grow are scaled down, and ops that jump (Floor, Sign, comparisons, Cast to int) only
see "exact" values -- computed by both the simulator and the reference with the same
single-rounding IEEE ops -- so a last-bit difference cannot flip them.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# Bumped whenever a seed stops giving the graph it gave (sidecars record it).
GEN_VERSION = 1
# Sizes with tails: 1, odd, just under/over a 128-partition tile, over a 512 chunk.
SIZES = [1, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
         200, 255, 256, 257, 384, 513, 600]
SMALL = [1, 2, 3, 4, 5, 6, 7, 8]
LONG = [1000, 2047, 4096, 4100, 6000, 8192]
# Upper bound on the elements of any one value (keeps a case well under a second).
MAX_NUMEL = 48 * 1024
# Magnitudes above this get scaled down before the next op.
MAG_LIMIT = 8.0
CONFIGS = ["tiny"] * 6 + ["trn2"] * 3 + ["trn1"]
# Config overrides that squeeze the buffers the compiler tiles for (so that small
# graphs take the chunked code paths).
VARIANTS = [["core.sbuf.partition_size=16KiB"], ["core.sbuf.partition_size=32KiB"],
            ["core.psum.partition_size=8KiB"], ["core.tensor.max_moving_free=256"],
            ["core.tensor.max_moving_free=128"],
            ["core.sbuf.partition_size=16KiB", "core.psum.partition_size=4KiB"]]

_DT = {"f": TensorProto.FLOAT, "b": TensorProto.BOOL, "i": TensorProto.INT64,
       "i32": TensorProto.INT32}


@dataclass
class Val:
    name: str
    shape: Tuple[int, ...]
    dtype: str = "f"  # f: fp32, b: bool, i: int64
    mag: float = 1.0  # rough bound on |x|
    lo: Optional[float] = None  # lower bound when known
    exact: bool = False  # bit-identical on the chip and in the reference
    const: bool = False  # computed from constants only (the compiler folds it)
    alias: bool = False  # a graph input under another name (canonicalize removes it)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


@dataclass
class Case:
    seed: int
    model: onnx.ModelProto
    precision: str
    config: str
    ops: List[str] = field(default_factory=list)  # the main ops, in order
    sets: List[str] = field(default_factory=list)  # config overrides (--set KEY=VALUE)
    gen_opts: str = ""  # `trnsim fuzz` options that shaped the case (for the sidecar)

    def validate_args(self) -> List[str]:
        a = ["-c", self.config]
        for kv in self.sets:
            a += ["--set", kv]
        return a + ["--precision", self.precision, "--no-fallback",
                    f"--random-inputs={self.seed}"]

    def describe(self) -> str:
        return (f"seed {self.seed}: {len(self.model.graph.node)} nodes "
                f"({' '.join(self.ops)}), {self.precision} on {self.config}"
                + "".join(f" {kv}" for kv in self.sets))


class GenError(Exception):
    """An op does not apply to the chosen operand; the builder tries another."""


def bcast(a, b):
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise GenError("shapes do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def numel(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


class Builder:
    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        # Now and then a big case: more tiles per op, longer simulations.
        self.cap = MAX_NUMEL * (4 if self.r.random() < 0.12 else 1)
        roll = self.r.random()
        self.precision = "fp8" if roll < 0.04 else "bf16" if roll < 0.3 else "fp32"
        self.config = self.r.choice(CONFIGS)
        self.sets = list(self.r.choice(VARIANTS)) if self.r.random() < 0.2 else []
        # Rows of conv/pooling windows must fit a squeezed SBUF (else: refused).
        self.max_window_row = 96 if any("sbuf" in kv for kv in self.sets) else 256
        self.nodes: List[onnx.NodeProto] = []
        self.inputs: List[Val] = []
        self.inits: List[onnx.TensorProto] = []
        self.vals: List[Val] = []  # computed values a later node may read
        self.read: set = set()  # names some node reads
        self.ops: List[str] = []
        self.count = 0

    # --- construction helpers ------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def input(self, shape, dtype="f") -> Val:
        v = Val(self.fresh("in"), tuple(shape), dtype, 10.0 if dtype == "i" else 1.0,
                0.0 if dtype != "f" else -1.0, True)
        self.inputs.append(v)
        return v

    def const(self, arr: np.ndarray, name_prefix="c") -> str:
        name = self.fresh(name_prefix)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const_val(self, arr: np.ndarray) -> Val:
        arr = np.asarray(arr)
        dt = {np.dtype(np.float32): "f", np.dtype(np.int64): "i", np.dtype(bool): "b"}[arr.dtype]
        mag = float(np.max(np.abs(arr.astype(np.float64)))) if arr.size else 0.0
        lo = float(np.min(arr.astype(np.float64))) if arr.size else 0.0
        return Val(self.const(arr), tuple(arr.shape), dt, max(mag, 1e-3), lo, True, const=True)

    def randf(self, shape, lo=-1.0, hi=1.0) -> np.ndarray:
        return self.np.uniform(lo, hi, size=shape).astype(np.float32)

    def node(self, op, ins, shape, dtype="f", mag=1.0, lo=None, exact=False, attrs=None,
             nout=1, shapes=None) -> List[Val]:
        """Adds one node; ins are Vals or initializer names (str) or '' (absent)."""
        names = []
        for v in ins:
            n = v.name if isinstance(v, Val) else v
            names.append(n)
            if n:
                self.read.add(n)
        # Strings name initializers; a node of constants only is folded at compile time.
        const = all(v.const if isinstance(v, Val) else True for v in ins if v != "")
        first = ins[0] if ins and isinstance(ins[0], Val) else None
        outs = []
        shapes = shapes or [shape] * nout
        for s in shapes:
            if numel(s) > self.cap or 0 in s:
                raise GenError("value too large or empty")
            alias = (first is not None and (first.alias or first in self.inputs) and
                     op in ("Identity", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze")
                     and tuple(s) == first.shape)
            outs.append(Val(self.fresh("v"), tuple(s), dtype, max(mag, 1e-3), lo, exact, const,
                            alias))
        self.nodes.append(helper.make_node(op, names, [o.name for o in outs],
                                           name=f"n{len(self.nodes)}_{op}", **(attrs or {})))
        if not const:
            self.vals.extend(outs)
        return outs

    def one(self, *a, **k) -> Val:
        return self.node(*a, **k)[0]

    # --- shapes ---------------------------------------------------------------
    def size(self, cap=10**9, pool=SIZES) -> int:
        c = [s for s in pool if s <= cap]
        return self.r.choice(c) if c else 1

    def shape(self, rank: int, cap=None) -> Tuple[int, ...]:
        cap = cap or self.cap // 4
        dims = []
        left = cap
        for k in range(rank):
            # Leading dims small-ish so the last two carry the tails.
            pool = SMALL if k < rank - 2 else SIZES
            if k == rank - 1 and self.r.random() < 0.06:
                pool = LONG  # rows longer than a chunk / split over partitions
            d = self.size(max(1, left), pool)
            dims.append(d)
            left = max(1, left // d)
        return tuple(dims)

    def bcast_shape(self, shape) -> Tuple[int, ...]:
        """A shape that broadcasts to `shape`: leading dims dropped, some dims 1."""
        s = list(shape)
        kind = self.r.random()
        if kind < 0.2:
            return ()
        if kind < 0.45 and s:  # a row over the last axis
            return (s[-1],) if self.r.random() < 0.5 else (1,) * (len(s) - 1) + (s[-1],)
        if kind < 0.65 and s:  # a column
            return tuple(s[:-1]) + (1,)
        drop = self.r.randint(0, max(0, len(s) - 1))
        s = s[drop:]
        return tuple(1 if self.r.random() < 0.4 else d for d in s)

    # --- guards ---------------------------------------------------------------
    def tame(self, v: Val, limit=MAG_LIMIT) -> Val:
        """v scaled into |x| <~ limit (by a power of two: exact) or squashed by Tanh."""
        if v.dtype != "f" or v.mag <= limit:
            return v
        if self.r.random() < 0.3:
            return self.one("Tanh", [v], v.shape, mag=1.0, lo=-1.0)
        k = 2.0 ** -math.ceil(math.log2(v.mag / limit))
        c = self.const(np.array(k, np.float32))
        return self.one("Mul", [v, c], v.shape, mag=v.mag * k,
                        lo=None if v.lo is None else v.lo * k, exact=v.exact)

    def floor_at(self, v: Val, floor: float) -> Val:
        """A value >= floor: v itself when known to be, else Abs(v) + floor."""
        if v.lo is not None and v.lo >= floor:
            return v
        a = self.one("Abs", [v], v.shape, mag=v.mag, lo=0.0, exact=v.exact)
        c = self.const(np.array(floor, np.float32))
        return self.one("Add", [a, c], v.shape, mag=v.mag + floor, lo=floor, exact=v.exact)

    def as_float(self, v: Val) -> Val:
        if v.dtype == "f":
            return v
        return self.one("Cast", [v], v.shape, mag=v.mag, lo=0.0, exact=True,
                        attrs={"to": TensorProto.FLOAT})

    # --- operand choice -------------------------------------------------------
    def pick(self, pred=lambda v: True, recent=0.6) -> Val:
        c = [v for v in self.vals if pred(v)]
        if not c:
            raise GenError("no operand")
        if self.r.random() < recent:
            return c[-1]
        return self.r.choice(c)

    def partner(self, a: Val, same_prob=0.35, allow_bigger=True) -> Val:
        """A second fp32 operand broadcast-compatible with a: an earlier value (a
        diamond), a new input, or a constant."""
        if self.r.random() < same_prob:
            same = [v for v in self.vals if v.dtype == "f" and v.name != a.name and
                    _bcast_ok(v.shape, a.shape) and numel(bcast(v.shape, a.shape)) <= self.cap]
            if same:
                return self.r.choice(same)
            if self.r.random() < 0.3:
                return a  # x op x
        if allow_bigger and self.r.random() < 0.1 and a.rank <= 3:
            # a broadcasts up to the partner
            s = [self.size(8, SMALL)] + [d if d != 1 else self.size(8, SMALL) for d in a.shape]
            if numel(s) <= self.cap:
                return self.input(s)
        s = self.bcast_shape(a.shape) if self.r.random() < 0.6 else a.shape
        if self.r.random() < 0.5:
            return self.input(s)
        return self.const_val(self.randf(s))

    # --- ops ------------------------------------------------------------------
    def op_unary(self, x: Val) -> Val:
        x = self.as_float(x)
        ops = ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Abs", "Erf",
               "Softplus", "Neg", "LeakyRelu", "Elu", "Selu", "Celu", "Clip", "HardSigmoid",
               "HardSwish", "Softsign", "Identity"]
        if x.exact:
            ops += ["Floor", "Ceil", "Round", "Sign", "ThresholdedRelu"]
        op = self.r.choice(ops)
        self.ops.append(op)
        m, s = x.mag, x.shape
        if op in ("Floor", "Ceil", "Round", "Sign", "ThresholdedRelu"):
            # Spread the values over several integers first (exact: a power of two).
            if op != "Sign" and m < 4:
                c = self.const(np.array(4.0, np.float32))
                x = self.one("Mul", [x, c], s, mag=m * 4, exact=True)
                m = x.mag
            attrs = {"alpha": 0.5} if op == "ThresholdedRelu" else {}
            return self.one(op, [x], s, mag=m + 1 if op != "Sign" else 1.0, exact=True,
                            attrs=attrs)
        if op == "Exp":
            x = self.tame(x, 3.0)
            return self.one(op, [x], s, mag=math.exp(x.mag), lo=0.0)
        if op == "Log":
            x = self.floor_at(x, self.r.choice([0.1, 0.5, 1.0]))
            return self.one(op, [x], s, mag=max(abs(math.log(x.lo)), math.log(x.mag) + 1))
        if op == "Sqrt":
            x = self.floor_at(x, 0.0 if x.exact else 0.01)
            return self.one(op, [x], s, mag=math.sqrt(x.mag) + 0.1, lo=0.0)
        if op == "Reciprocal":
            x = self.floor_at(x, 0.5)
            return self.one(op, [x], s, mag=1.0 / x.lo, lo=0.0)
        if op == "Identity":
            return self.one(op, [x], s, mag=m, lo=x.lo, exact=x.exact)
        if op in ("Relu", "Abs"):
            return self.one(op, [x], s, mag=m, lo=0.0, exact=x.exact)
        if op == "Neg":
            return self.one(op, [x], s, mag=m, exact=x.exact)
        if op == "Clip":
            lo_ = round(self.r.uniform(-1, 0), 2)
            hi_ = round(self.r.uniform(0, 1), 2)
            ins = [x, self.const(np.array(lo_, np.float32)) if self.r.random() < 0.8 else "",
                   self.const(np.array(hi_, np.float32)) if self.r.random() < 0.8 else ""]
            while ins[-1] == "":
                ins.pop()
            return self.one(op, ins, s, mag=m, exact=x.exact)
        if op == "Celu":
            return self.one(op, [x], s, mag=m + 2, attrs={"alpha": self.r.choice([0.5, 1.0, 2.0])})
        if op == "LeakyRelu":
            return self.one(op, [x], s, mag=m, attrs={"alpha": self.r.choice([0.01, 0.1, 0.3])})
        if op in ("Sigmoid", "HardSigmoid"):
            return self.one(op, [x], s, mag=1.0, lo=0.0)
        if op in ("Tanh", "Erf", "Softsign"):
            return self.one(op, [x], s, mag=1.0, lo=-1.0)
        if op == "Softplus":
            return self.one(op, [x], s, mag=m + 1, lo=0.0)
        return self.one(op, [x], s, mag=2 * m + 2)  # Elu, Selu, HardSwish

    def op_binary(self, a: Val) -> Val:
        a = self.as_float(a)
        ops = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum", "Mean", "PRelu"]
        op = self.r.choice(ops + ["Add", "Mul"])
        self.ops.append(op)
        b = self.partner(a, allow_bigger=op != "PRelu")
        if op == "PRelu" and bcast(b.shape, a.shape) != a.shape:
            b = self.const_val(self.randf(self.bcast_shape(a.shape), 0, 0.5))
        if op == "Pow":
            a = self.floor_at(self.tame(a, 4.0), 0.1)
            if self.r.random() < 0.6:
                e = self.r.choice([2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 1.0])
                b = self.const_val(np.array(e, np.float32))
            else:
                b = self.tame(b, 1.0)  # |exponent| <= 1
            m = max(a.mag, 1.0 / a.lo) ** max(1.0, b.mag)
            return self.one(op, [a, b], bcast(a.shape, b.shape), mag=m, lo=0.0)
        if op == "Div":
            b = self.floor_at(b, 0.5)
            if self.r.random() < 0.3:  # negative denominators too
                b = self.one("Neg", [b], b.shape, mag=b.mag, exact=b.exact)
            return self.one(op, [a, b], bcast(a.shape, b.shape), mag=a.mag * 2,
                            exact=a.exact and b.exact)
        ins = [a, b]
        if op in ("Sum", "Mean", "Max", "Min") and self.r.random() < 0.3:
            ins.append(self.partner(a, same_prob=0.6, allow_bigger=False))
        if self.r.random() < 0.3:
            ins[0], ins[1] = ins[1], ins[0]
        if op == "PRelu":
            ins = [a, b]
        shape = a.shape
        for v in ins:
            shape = bcast(shape, v.shape)
        ms = [v.mag for v in ins]
        mag = {"Mul": math.prod(ms), "Max": max(ms), "Min": max(ms), "Mean": max(ms),
               "PRelu": a.mag}.get(op, sum(ms))
        exact = all(v.exact for v in ins) and op in ("Add", "Sub", "Mul", "Max", "Min")
        return self.one(op, ins, shape, mag=mag, exact=exact)

    def op_matmul(self, a: Val) -> Val:
        if a.rank == 0:
            raise GenError("scalar")
        a = self.tame(self.as_float(a), 4.0)
        if a.rank == 1:
            a = self.one("Unsqueeze", [a, self.const(np.array([0], np.int64))], (1,) + a.shape,
                         mag=a.mag, lo=a.lo, exact=a.exact)
        K = a.shape[-1]
        if K > 1024 or numel(a.shape[:-2]) > 256:
            # (a batched MatMul lowers one matmul per batch: thousands compile slowly)
            raise GenError("K or the batch too large")
        lead = numel(a.shape[:-1])
        N = self.size(max(1, min(1024, self.cap // max(1, lead), self.cap // K)))
        if a.rank == 2 and self.r.random() < 0.35:
            return self._gemm(a, N)
        self.ops.append("MatMul")
        batch = a.shape[:-2]
        kind = self.r.random()
        if kind < 0.5 or not batch:
            bshape = (K, N)
            if batch and self.r.random() < 0.3:
                bshape = (1,) * len(batch) + (K, N)
        else:
            bshape = tuple(batch) + (K, N)
        if a.rank == 2 and self.r.random() < 0.15:  # a shared A against batched B
            bshape = (self.size(4, SMALL), K, N)
        # Constant weights are scaled by 1/sqrt(K) (as a real layer would be).
        if self.r.random() < 0.55:
            b = self.const_val(self.randf(bshape, -1, 1) / np.float32(math.sqrt(K)))
            bmag = b.mag * math.sqrt(K)
        else:
            b = self.input(bshape) if self.r.random() < 0.7 else self._value_of(bshape)
            bmag = b.mag
        out = bcast(a.shape[:-2], bshape[:-2]) + (a.shape[-2], N)
        y = self.one("MatMul", [a, b], out, mag=a.mag * bmag * math.sqrt(K) / 1.5)
        if self.r.random() < 0.4:  # a bias: fuse_epilogue's case
            y = self.one("Add", [y, self.const_val(self.randf((N,)))], out, mag=y.mag + 1)
        return y

    def _value_of(self, shape) -> Val:
        same = [v for v in self.vals if v.dtype == "f" and v.shape == tuple(shape)]
        return self.r.choice(same) if same else self.input(shape)

    def _gemm(self, a: Val, N: int) -> Val:
        self.ops.append("Gemm")
        K = a.shape[1]
        trans_b = self.r.random() < 0.5
        attrs = {"transB": 1} if trans_b else {}
        if trans_b or self.r.random() < 0.6:  # canonicalize transposes a constant B
            arr = self.randf((N, K) if trans_b else (K, N)) / np.float32(math.sqrt(K))
            b = self.const_val(arr)
            bmag = b.mag * math.sqrt(K)
        else:
            b = self.input((K, N))
            bmag = 1.0
        ins = [a, b]
        if self.r.random() < 0.7:
            cs = self.r.choice([(N,), (1, N), (a.shape[0], N), (a.shape[0], 1), ()])
            ins.append(self.const_val(self.randf(cs)) if self.r.random() < 0.6 else self.input(cs))
        if self.r.random() < 0.2:
            attrs["alpha"] = 1.0
            attrs["beta"] = 1.0
        return self.one("Gemm", ins, (a.shape[0], N), mag=a.mag * bmag * math.sqrt(K) / 1.5 + 1,
                        attrs=attrs)

    def op_reduce(self, x: Val) -> Val:
        x = self.as_float(x)
        op = self.r.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                            "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                            "ReduceLogSumExp", "ReduceMean", "ReduceSum", "ReduceMax"])
        r = x.rank
        if r == 0:
            raise GenError("scalar")
        axes = sorted(self.r.sample(range(r), self.r.randint(1, r)))
        if self.r.random() < 0.1:
            axes = []  # all of them
        red = list(range(r)) if not axes else axes
        n = numel([x.shape[k] for k in red])
        if op == "ReduceProd" and n > 12:
            op = "ReduceMax"
        self.ops.append(op)
        keep = self.r.random() < 0.5
        out = tuple((1 if k in red else d) for k, d in enumerate(x.shape) if keep or k not in red)
        # Axes as negative numbers sometimes.
        ax = [a - r if self.r.random() < 0.3 else a for a in axes]
        attrs = {"keepdims": int(keep)}
        ins = [x]
        if op == "ReduceSum":
            if ax:
                ins.append(self.const(np.array(ax, np.int64)))
        elif ax:
            attrs["axes"] = ax
        m = x.mag
        if op == "ReduceProd":
            # |x| in [0.5, 1.5]: a product of up to 12 stays in range.
            x = self.one("Sigmoid", [x], x.shape, mag=1.0, lo=0.0)
            c = self.const(np.array(0.5, np.float32))
            ins[0] = self.one("Add", [x, c], x.shape, mag=1.5, lo=0.5)
            mag = 1.5 ** n
        elif op == "ReduceLogSum":
            ins[0] = self.floor_at(x, 0.1)
            mag = math.log(n * (m + 0.1)) + 3
        elif op == "ReduceLogSumExp":
            ins[0] = self.tame(x, 8.0)
            mag = ins[0].mag + math.log(n) + 1
        elif op in ("ReduceSumSquare",):
            ins[0] = self.tame(x, 2.0)
            mag = n * ins[0].mag ** 2
        elif op in ("ReduceL1",):
            mag = n * m
        elif op in ("ReduceSum",):
            mag = math.sqrt(n) * m * 2
        elif op in ("ReduceL2",):
            mag = math.sqrt(n) * m
        else:
            mag = m
        exact = x.exact and op in ("ReduceMax", "ReduceMin")
        return self.one(op, ins, out, mag=mag, exact=exact, attrs=attrs,
                        lo=0.0 if op in ("ReduceL1", "ReduceL2", "ReduceSumSquare") else None)

    def op_softmax(self, x: Val) -> Val:
        x = self.tame(self.as_float(x), 16.0)
        if x.rank == 0:
            raise GenError("scalar")
        op = self.r.choice(["Softmax", "Softmax", "LogSoftmax"])
        self.ops.append(op)
        axis = self.r.randrange(-x.rank, x.rank)
        if self.r.random() < 0.5:
            axis = -1
        n = x.shape[axis]
        mag = 1.0 if op == "Softmax" else 2 * x.mag + math.log(n) + 1
        return self.one(op, [x], x.shape, mag=mag, lo=0.0 if op == "Softmax" else None,
                        attrs={"axis": axis})

    def op_norm(self, x: Val) -> Val:
        x = self.tame(self.as_float(x), 8.0)
        if x.rank == 0:
            raise GenError("scalar")
        kind = self.r.choice(["LayerNormalization", "LayerNormalization", "RMSNorm",
                              "LayerNormPattern", "Gelu", "GeluTanh", "Silu", "HardSwishPattern"])
        self.ops.append(kind)
        s = x.shape
        if kind == "LayerNormalization":
            axis = self.r.randrange(-x.rank, x.rank) if self.r.random() < 0.4 else -1
            norm = s[axis:]
            ins = [x, self._param(norm, 0.5, 1.5)]
            if self.r.random() < 0.7:
                ins.append(self._param(norm, -0.5, 0.5))
            eps = self.r.choice([1e-5, 1e-3, 0.1])
            return self.one(kind, ins, s, mag=4.0, attrs={"axis": axis, "epsilon": eps})
        if kind == "RMSNorm":  # x / Sqrt(ReduceMean(x*x) + eps) [* w]
            sq = (self.one("Mul", [x, x], s, mag=x.mag ** 2) if self.r.random() < 0.6 else
                  self.one("Pow", [x, self.const(np.array(2.0, np.float32))], s, mag=x.mag ** 2))
            ms = self.one("ReduceMean", [sq], s[:-1] + (1,), mag=sq.mag,
                          attrs={"axes": [-1], "keepdims": 1})
            e = self.one("Add", [ms, self.const(np.array(self.r.choice([1e-6, 1e-5, 1e-3]),
                                                         np.float32))], ms.shape, mag=ms.mag)
            rt = self.one("Sqrt", [e], e.shape, mag=x.mag)
            if self.r.random() < 0.5:
                y = self.one("Div", [x, rt], s, mag=4.0)
            else:
                one = self.const(np.array(1.0, np.float32))
                y = self.one("Mul", [x, self.one("Div", [one, rt], rt.shape, mag=1e3)], s, mag=4.0)
            if self.r.random() < 0.6:
                y = self.one("Mul", [y, self._param((s[-1],), 0.5, 1.5)], s, mag=6.0)
            return y
        if kind == "LayerNormPattern":
            mean = self.one("ReduceMean", [x], s[:-1] + (1,), mag=x.mag,
                            attrs={"axes": [-1], "keepdims": 1})
            d = self.one("Sub", [x, mean], s, mag=2 * x.mag)
            sq = self.one("Pow", [d, self.const(np.array(2.0, np.float32))], s, mag=4 * x.mag ** 2)
            var = self.one("ReduceMean", [sq], mean.shape, mag=sq.mag,
                           attrs={"axes": [-1], "keepdims": 1})
            e = self.one("Add", [var, self.const(np.array(1e-5, np.float32))], var.shape,
                         mag=var.mag)
            y = self.one("Div", [d, self.one("Sqrt", [e], e.shape, mag=x.mag)], s, mag=4.0)
            if self.r.random() < 0.6:
                y = self.one("Mul", [y, self._param((s[-1],), 0.5, 1.5)], s, mag=6.0)
                y = self.one("Add", [y, self._param((s[-1],), -0.5, 0.5)], s, mag=7.0)
            return y
        if kind == "Gelu":  # x * 0.5 * (1 + erf(x / sqrt2))
            h = self.one("Div", [x, self.const(np.array(math.sqrt(2.0), np.float32))], s,
                         mag=x.mag)
            e = self.one("Erf", [h], s, mag=1.0)
            p = self.one("Add", [e, self.const(np.array(1.0, np.float32))], s, mag=2.0)
            y = self.one("Mul", [x, p], s, mag=2 * x.mag)
            return self.one("Mul", [y, self.const(np.array(0.5, np.float32))], s, mag=x.mag)
        if kind == "GeluTanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            x3 = self.one("Pow", [x, self.const(np.array(3.0, np.float32))], s, mag=x.mag ** 3)
            t = self.one("Mul", [x3, self.const(np.array(0.044715, np.float32))], s, mag=x.mag ** 3)
            u = self.one("Add", [x, t], s, mag=x.mag ** 3)
            v = self.one("Mul", [u, self.const(np.array(math.sqrt(2 / math.pi), np.float32))], s,
                         mag=x.mag ** 3)
            th = self.one("Tanh", [v], s, mag=1.0)
            p = self.one("Add", [th, self.const(np.array(1.0, np.float32))], s, mag=2.0)
            y = self.one("Mul", [x, p], s, mag=2 * x.mag)
            return self.one("Mul", [y, self.const(np.array(0.5, np.float32))], s, mag=x.mag)
        if kind == "Silu":
            sg = self.one("Sigmoid", [x], s, mag=1.0)
            return self.one("Mul", [x, sg], s, mag=x.mag)
        # HardSwish as torch writes it: x * Clip(x + 3, 0, 6) / 6
        p = self.one("Add", [x, self.const(np.array(3.0, np.float32))], s, mag=x.mag + 3)
        c = self.one("Clip", [p, self.const(np.array(0.0, np.float32)),
                              self.const(np.array(6.0, np.float32))], s, mag=6.0)
        y = self.one("Mul", [x, c], s, mag=6 * x.mag)
        return self.one("Div", [y, self.const(np.array(6.0, np.float32))], s, mag=x.mag)

    def _param(self, shape, lo, hi) -> Val:
        if self.r.random() < 0.75:
            return self.const_val(self.randf(shape, lo, hi))
        return self.input(shape)

    def op_movement(self, x: Val) -> Val:
        op = self.r.choice(["Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat",
                            "Split", "Slice", "Pad", "Expand", "Tile", "Gather", "Transpose",
                            "Concat", "Slice", "Reshape"])
        if x.rank == 0 and op not in ("Reshape", "Unsqueeze", "Expand"):
            op = "Unsqueeze"
        self.ops.append(op)
        s, r = x.shape, x.rank
        keep = dict(mag=x.mag, lo=x.lo, exact=x.exact, dtype=x.dtype)
        if op == "Reshape":
            new = self._factor(x.numel)
            spec = list(new)
            if spec and self.r.random() < 0.3:
                spec[self.r.randrange(len(spec))] = -1
            if self.r.random() < 0.2:
                for k in range(min(len(spec), r)):
                    if spec[k] == s[k] and spec[k] != -1:
                        spec[k] = 0  # copy the input's dim
                        break
            return self.one(op, [x, self.const(np.array(spec, np.int64))], new, **keep)
        if op == "Transpose":
            perm = list(range(r))
            self.r.shuffle(perm)
            attrs = {"perm": perm}
            if self.r.random() < 0.15:  # no perm: the dims reversed
                attrs, perm = {}, list(range(r))[::-1]
            return self.one(op, [x], tuple(s[p] for p in perm), attrs=attrs, **keep)
        if op == "Flatten":
            axis = self.r.randint(0, r)
            return self.one(op, [x], (numel(s[:axis]), numel(s[axis:])), attrs={"axis": axis},
                            **keep)
        if op == "Squeeze":
            ones = [k for k, d in enumerate(s) if d == 1]
            if not ones:
                x2 = self.one("Unsqueeze", [x, self.const(np.array([r], np.int64))], s + (1,),
                              **keep)
                return self.one(op, [x2, self.const(np.array([-1], np.int64))], s, **keep)
            ax = sorted(self.r.sample(ones, self.r.randint(1, len(ones))))
            ins = [x] + ([self.const(np.array(ax, np.int64))] if self.r.random() < 0.8 else [])
            if len(ins) == 1:
                ax = ones
            return self.one(op, ins, tuple(d for k, d in enumerate(s) if k not in ax), **keep)
        if op == "Unsqueeze":
            if r >= 4:
                raise GenError("rank")
            k = self.r.randint(0, r)
            new = s[:k] + (1,) + s[k:]
            return self.one(op, [x, self.const(np.array([k], np.int64))], new, **keep)
        if op == "Concat":
            axis = self.r.randrange(r)
            parts = [x]
            for _ in range(self.r.randint(1, 2)):
                if self.r.random() < 0.3:
                    parts.append(x)  # concat with itself
                    continue
                same = [v for v in self.vals if v.dtype == x.dtype and v.rank == r and
                        all(v.shape[k] == s[k] for k in range(r) if k != axis)]
                if same and self.r.random() < 0.5:
                    parts.append(self.r.choice(same))
                elif x.dtype == "f":
                    o = list(s)
                    o[axis] = self.size(max(1, self.cap // max(1, numel(s))), SIZES[:20])
                    parts.append(self.input(o) if self.r.random() < 0.6 else
                                 self.const_val(self.randf(o)))
                else:
                    parts.append(x)
            if self.r.random() < 0.5:
                self.r.shuffle(parts)
            out = list(s)
            out[axis] = sum(p.shape[axis] for p in parts)
            ax = axis - r if self.r.random() < 0.3 else axis
            return self.one(op, parts, tuple(out), attrs={"axis": ax},
                            mag=max(p.mag for p in parts), dtype=x.dtype,
                            exact=all(p.exact for p in parts))
        if op == "Split":
            axis = self.r.randrange(r)
            n = s[axis]
            if n < 2:
                raise GenError("split of 1")
            k = self.r.randint(2, min(3, n))
            cuts = sorted(self.r.sample(range(1, n), k - 1))
            sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
            shapes = [s[:axis] + (z,) + s[axis + 1:] for z in sizes]
            ins = [x, self.const(np.array(sizes, np.int64))]
            if len(set(sizes)) == 1 and self.r.random() < 0.5:
                ins = [x]
            outs = self.node(op, ins, None, attrs={"axis": axis}, nout=len(shapes),
                             shapes=shapes, **keep)
            return self.r.choice(outs)
        if op == "Slice":
            axes = sorted(self.r.sample(range(r), self.r.randint(1, r)))
            starts, ends, steps, out = [], [], [], list(s)
            for a in axes:
                d = s[a]
                step = self.r.choice([1, 1, 1, 2, 3, -1]) if d > 1 else 1
                if step == -1 and d > 64:
                    step = 1  # reversed indices cost one DMA each
                if step > 0:
                    b = self.r.randint(0, d - 1)
                    e = self.r.randint(b + 1, d)
                    cnt = (e - b + step - 1) // step
                    if self.r.random() < 0.2:
                        e = d + 5 if e == d else e - d  # past the end / negative
                    if self.r.random() < 0.2:
                        b = b - d  # negative start
                else:
                    e = self.r.randint(-1, d - 2)
                    b = self.r.randint(e + 1, d - 1)
                    cnt = b - e
                    if e == -1:
                        e = -d - 1
                starts.append(b)
                ends.append(e)
                steps.append(step)
                out[a] = cnt
            ins = [x, self.const(np.array(starts, np.int64)), self.const(np.array(ends, np.int64))]
            if axes != list(range(r)) or any(st != 1 for st in steps) or self.r.random() < 0.5:
                ax = [a - r if self.r.random() < 0.3 else a for a in axes]
                ins.append(self.const(np.array(ax, np.int64)))
                if any(st != 1 for st in steps) or self.r.random() < 0.5:
                    ins.append(self.const(np.array(steps, np.int64)))
            return self.one(op, ins, tuple(out), **keep)
        if op == "Pad":
            mode = self.r.choice(["constant", "constant", "edge", "reflect"])
            pads = []
            for d in s:
                hi = min(3, d - 1) if mode == "reflect" else 3  # reflect: pads < dim
                pads.append(self.r.randint(0, hi) if self.r.random() < 0.6 else 0)
            pads += [self.r.randint(0, min(3, d - 1) if mode == "reflect" else 3) for d in s]
            out = tuple(d + pads[k] + pads[k + r] for k, d in enumerate(s))
            ins = [x, self.const(np.array(pads, np.int64))]
            mag = x.mag
            if mode == "constant" and self.r.random() < 0.6:
                val = round(self.r.uniform(-1, 1), 2)
                ins.append(self.const(np.array(val, np.float32 if x.dtype == "f" else np.int64)
                                      if x.dtype != "b" else np.array(True)))
            return self.one(op, ins, out, attrs={"mode": mode}, mag=max(mag, 1.0), dtype=x.dtype,
                            exact=x.exact)
        if op == "Expand":
            al = (1,) * (self.r.randint(0, max(0, 3 - r))) + s
            tgt = [self.size(max(1, self.cap // max(1, x.numel)), SMALL) if d == 1 else d
                   for d in al]
            spec = list(tgt)
            if self.r.random() < 0.3:  # ones in the shape argument keep the input's dim
                spec = [1 if (k >= len(al) - r and al[k] == tgt[k]) else t
                        for k, t in enumerate(tgt)]
            return self.one(op, [x, self.const(np.array(spec, np.int64))], tuple(tgt), **keep)
        if op == "Tile":
            reps = [self.r.choice([1, 1, 2, 3]) for _ in s]
            out = tuple(d * k for d, k in zip(s, reps))
            return self.one(op, [x, self.const(np.array(reps, np.int64))], out, **keep)
        # Gather with constant indices on some axis.
        axis = self.r.randrange(r)
        d = s[axis]
        ishape = self.r.choice([(), (self.r.randint(1, 6),), (2, self.r.randint(1, 3))])
        idx = self.np.integers(-d, d, size=ishape).astype(np.int64)
        if self.r.random() < 0.5:
            idx = np.abs(idx) % d
        out = s[:axis] + tuple(ishape) + s[axis + 1:]
        if len(out) > 4:
            raise GenError("rank")
        return self.one(op, [x, self.const(idx)], out, attrs={"axis": axis}, **keep)

    def _factor(self, n: int) -> Tuple[int, ...]:
        """A random shape of rank 1..4 with n elements."""
        primes, m, p = [], n, 2
        while p * p <= m:
            while m % p == 0:
                primes.append(p)
                m //= p
            p += 1
        if m > 1:
            primes.append(m)
        rank = self.r.randint(1, 4)
        dims = [1] * rank
        for q in primes:
            dims[self.r.randrange(rank)] *= q
        return tuple(dims)

    def op_gather_runtime(self, x: Val) -> Val:
        """Embedding lookup: Gather of int64 input indices (in [0, 10)) on axis 0."""
        self.ops.append("GatherIdx")
        if x.rank == 2 and x.shape[0] >= 10 and x.dtype == "f":
            table = x
        else:
            table = self.const_val(self.randf((self.r.choice([10, 16, 33, 130]),
                                               self.size(600))))
        ishape = self.r.choice([(self.r.randint(1, 200),), (2, self.r.randint(1, 70))])
        idx = self.input(ishape, "i")
        # Clipped to the table: the device looks up only indices proven in range (it
        # cannot check them at run time; unproven ones go to the host).
        rows = table.shape[0]
        idx = self.one("Clip", [idx, self.const(np.array(-rows, np.int64)),
                                self.const(np.array(rows - 1, np.int64))], tuple(ishape),
                       dtype="i", mag=idx.mag, lo=idx.lo, exact=True)
        return self.one("Gather", [table, idx], tuple(ishape) + table.shape[1:], mag=table.mag,
                        exact=table.exact, attrs={"axis": 0})

    def op_logic(self, x: Val) -> Val:
        """Comparisons, logic, Where and Cast on exact values."""
        if x.dtype == "f" and not x.exact:
            raise GenError("inexact operand")
        kind = self.r.choice(["cmp", "where", "cast", "not"])
        self.ops.append(kind)
        if x.dtype == "b":
            c = x
        else:
            x = self.as_float(x)
            op = self.r.choice(["Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"])
            if op == "Equal":  # of rounded values, so that some are equal
                x = self.one("Round", [self._scaled(x, 2.0)], x.shape, mag=x.mag * 2 + 1,
                             exact=True)
                b = self.const_val(np.array(self.r.choice([0.0, 1.0, -1.0]), np.float32))
            else:
                b = self.partner(x, same_prob=0.5)
                if not b.exact:
                    b = self.const_val(np.array(0.25, np.float32))
            c = self.one(op, [x, b], bcast(x.shape, b.shape), dtype="b", mag=1.0, lo=0.0,
                         exact=True)
        if kind == "not":
            return self.one("Not", [c], c.shape, dtype="b", mag=1.0, lo=0.0, exact=True)
        if kind == "cmp" and self.r.random() < 0.5:
            other = [v for v in self.vals if v.dtype == "b" and _bcast_ok(v.shape, c.shape)]
            o = self.r.choice(other)
            op = self.r.choice(["And", "Or", "Xor"])
            return self.one(op, [c, o], bcast(c.shape, o.shape), dtype="b", mag=1.0, lo=0.0,
                            exact=True)
        if kind == "where":
            a, b = self._branch(c.shape), self._branch(c.shape)
            out = bcast(bcast(c.shape, a.shape), b.shape)
            if numel(out) > self.cap:
                raise GenError("large")
            return self.one("Where", [c, a, b], out, mag=max(a.mag, b.mag),
                            exact=a.exact and b.exact)
        if kind == "cast":
            if x.dtype == "f" and self.r.random() < 0.5:
                dt = self.r.choice(["i", "i32"])
                to = _DT[dt]
                i = self.one("Cast", [self._scaled(x, 4.0)], x.shape, dtype=dt, mag=x.mag * 4,
                             exact=True, attrs={"to": to})
                return self.one("Cast", [i], x.shape, mag=x.mag * 4, exact=True,
                                attrs={"to": TensorProto.FLOAT})
            return self.one("Cast", [c], c.shape, mag=1.0, lo=0.0, exact=True,
                            attrs={"to": TensorProto.FLOAT})
        return c

    def _branch(self, shape) -> Val:
        """An fp32 operand of Where broadcast-compatible with the condition."""
        same = [v for v in self.vals if v.dtype == "f" and _bcast_ok(v.shape, shape) and
                numel(bcast(v.shape, shape)) <= self.cap]
        if same and self.r.random() < 0.6:
            return self.r.choice(same)
        s = self.bcast_shape(shape)
        return self.input(s) if self.r.random() < 0.5 else self.const_val(self.randf(s))

    def _scaled(self, x: Val, k: float) -> Val:
        return self.one("Mul", [x, self.const(np.array(k, np.float32))], x.shape, mag=x.mag * k,
                        exact=x.exact)

    def op_conv(self, x: Val) -> Val:
        x = self.tame(self.as_float(x), 4.0)
        if x.rank not in (3, 4) or x.shape[1] > 256 or x.shape[-1] > self.max_window_row:
            raise GenError("not an image")  # (wider rows of windows are refused)
        op = self.r.choice(["Conv", "Conv", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                            "GlobalMaxPool"])
        self.ops.append(op)
        N, C = x.shape[:2]
        sp = x.shape[2:]
        nd = len(sp)
        if op.startswith("Global"):
            return self.one(op, [x], (N, C) + (1,) * nd, mag=x.mag,
                            exact=op == "GlobalMaxPool" and x.exact)
        k = [self.r.choice([1, 2, 3]) if d >= 3 else 1 for d in sp]
        st = [self.r.choice([1, 1, 2]) for _ in sp]
        dil = [self.r.choice([1, 1, 2]) if op == "Conv" and d >= 5 else 1 for d in sp]
        pads = [self.r.randint(0, kk - 1) if kk > 1 else 0 for kk in k] * 2
        attrs = {"kernel_shape": k, "strides": st, "pads": pads}
        eff = [(kk - 1) * dd + 1 for kk, dd in zip(k, dil)]
        out_sp = [(d + pads[i] + pads[i + nd] - eff[i]) // st[i] + 1 for i, d in enumerate(sp)]
        if min(out_sp) < 1:
            raise GenError("window larger than the input")
        if op != "Conv":
            if op == "AveragePool" and self.r.random() < 0.5:
                attrs["count_include_pad"] = 1
            return self.one(op, [x], (N, C) + tuple(out_sp), attrs=attrs, mag=x.mag,
                            exact=op == "MaxPool" and x.exact)
        attrs["dilations"] = dil
        g = 1
        roll = self.r.random()
        if roll < 0.25:
            g = C  # depthwise
        elif roll < 0.4:
            divs = [d for d in range(2, C + 1) if C % d == 0]
            g = self.r.choice(divs) if divs else 1
        if g > 1:
            co = g * self.r.choice([1, 2])
        else:
            co = self.size(max(1, min(256, self.cap // max(1, N * numel(out_sp)))), SIZES[:22])
        if g > 1:
            attrs["group"] = g
        fan = (C // g) * numel(k)
        w = self.const_val(self.randf((co, C // g) + tuple(k)) / np.float32(math.sqrt(fan)))
        ins = [x, w]
        if self.r.random() < 0.6:
            ins.append(self.const_val(self.randf((co,), -0.5, 0.5)))
        y = self.one(op, ins, (N, co) + tuple(out_sp), attrs=attrs, mag=x.mag * 2 + 0.5)
        if self.r.random() < 0.4:
            y = self.one("Relu", [y], y.shape, mag=y.mag, lo=0.0)
        return y


def _bcast_ok(a, b) -> bool:
    try:
        bcast(a, b)
        return True
    except GenError:
        return False


# Weights of the op families; conv only applies to rank-3/4 values.
_FAMILIES = [("unary", 20), ("binary", 24), ("matmul", 14), ("reduce", 10), ("softmax", 6),
             ("norm", 8), ("movement", 16), ("logic", 5), ("gather", 2), ("conv", 6)]


def _first_input(b: Builder) -> Val:
    roll = b.r.random()
    if roll < 0.15:  # an image
        nd = b.r.choice([1, 2, 2])
        sp = [b.r.choice([1, 3, 5, 7, 8, 12, 16]) for _ in range(nd)]
        return b.input([b.r.choice([1, 2]), b.r.choice([1, 3, 4, 8, 16, 32])] + sp)
    rank = b.r.choice([1, 2, 2, 2, 3, 3, 4])
    return b.input(b.shape(rank))


def generate(seed: int, max_nodes: int = 12, check: bool = True, exclude=()) -> Case:
    """The case of `seed`: a checker-valid opset-17 model, a precision and a config.
    `exclude` names main ops (as in Case.ops, e.g. "Pad", "LayerNormPattern") never
    to emit, e.g. to look past a known bug."""
    exclude = set(exclude)
    b = Builder(seed)
    b.vals.append(_first_input(b))
    if b.r.random() < 0.25:
        b.vals.append(_first_input(b))
    want = b.r.randint(1, max_nodes)
    fams, weights = zip(*_FAMILIES)
    main = 0
    tries = 0
    while main < want and tries < 40 * max_nodes:
        tries += 1
        fam = b.r.choices(fams, weights)[0]
        mark = (len(b.nodes), len(b.inputs), len(b.inits), len(b.vals), len(b.ops), set(b.read))
        try:
            x = b.pick(lambda v: fam == "logic" or v.dtype == "f" or b.r.random() < 0.3)
            if fam == "conv":
                imgs = [v for v in b.vals if v.rank in (3, 4) and v.dtype == "f"]
                if not imgs:
                    raise GenError("no image")
                x = imgs[-1] if b.r.random() < 0.7 else b.r.choice(imgs)
            y = getattr(b, "op_" + ("gather_runtime" if fam == "gather" else fam))(x)
            if exclude & set(b.ops[mark[4]:]):
                raise GenError("excluded op")
            if y.dtype == "f" and y.mag > 64:
                b.tame(y)
            main += 1
        except GenError:
            # Roll back whatever the failed attempt added.
            del b.nodes[mark[0]:], b.inputs[mark[1]:], b.inits[mark[2]:], b.vals[mark[3]:]
            del b.ops[mark[4]:]
            b.read = mark[5]
    return _finish(b, check)


def _finish(b: Builder, check: bool) -> Case:
    r = b.r
    input_names = {v.name for v in b.inputs}
    computed = [v for v in b.vals if v.name not in input_names and
                not any(i.name == v.name for i in b.inits)]
    if not computed:  # every attempt failed: one Relu
        computed = [b.one("Relu", [b.inputs[0]], b.inputs[0].shape)]
    computed = [v for v in computed if not v.alias]
    if not computed:
        computed = [b.one("Relu", [b.vals[0]], b.vals[0].shape)]
    outs = [v for v in computed if v.name not in b.read]
    extra = [v for v in computed if v.name in b.read]
    if extra and r.random() < 0.2:
        outs.append(r.choice(extra))  # an output that a later node also reads
    # Values with no elements or a scalar output are fine in ONNX; keep rank >= 0.
    used_inputs = [v for v in b.inputs if v.name in b.read]
    if not used_inputs:
        used_inputs = b.inputs[:1]
    inits = [t for t in b.inits if t.name in b.read]
    g = helper.make_graph(
        b.nodes, f"fuzz{b.seed}",
        [helper.make_tensor_value_info(v.name, _DT[v.dtype], list(v.shape)) for v in used_inputs],
        [helper.make_tensor_value_info(v.name, _DT[v.dtype], list(v.shape)) for v in outs],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="trnsim.fuzz")
    m.ir_version = 8
    if check:
        check_model(m)
    return Case(b.seed, m, b.precision, b.config, b.ops, b.sets)


def check_model(m: onnx.ModelProto) -> onnx.ModelProto:
    """Raises unless m passes the full checker and strict shape inference (whose
    shapes must agree with the declared ones); returns the inferred model."""
    onnx.checker.check_model(m, full_check=True)
    return onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
