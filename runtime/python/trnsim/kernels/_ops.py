"""The language's operations. Each checks its operands against the ISA's rules and
the platform's limits (errors name the user's line), allocates its result tile when
`out` is not given, and appends one op to the trace."""

import builtins

from trnsim.kernels._lang import (
    FLOAT_DTYPES, HbmTensor, HbmView, Op, Tile, TileView, as_view, current, dtype_name, fail,
    auto_pool, new_pool, new_tile, user_frame)

ALU_OPS = ("bypass", "add", "sub", "mul", "div", "max", "min", "pow", "eq", "ne", "lt", "le",
           "gt", "ge")
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE_OPS = ("add", "max", "min")
ACT_FUNCS = ("identity", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "exp", "log", "silu",
             "sqrt", "rsqrt", "reciprocal", "square", "abs", "erf", "softplus")
# Engines each opcode may run on (docs/isa.md); "auto" lets the compiler choose.
ENGINES = {
    "tensor_tensor": ("vector", "gpsimd"), "tensor_scalar": ("vector", "gpsimd", "scalar"),
    "tensor_copy": ("vector", "scalar", "gpsimd"), "memset": ("vector", "scalar", "gpsimd"),
    "tensor_reduce": ("vector", "gpsimd"), "select": ("vector", "gpsimd"),
}


# ---------------------------------------------------------------- allocation

def pool(bufs=1, space="sbuf", name=None):
    """A pool of `bufs` rotating buffers in "sbuf" or "psum" (see Pool)."""
    return new_pool(current(), name, space, bufs)


def tile(shape, dtype, space="sbuf", name=None, pool=None):
    """A new tile. Without `pool` it goes to the automatic pool of this kernel line:
    as many buffers as its tiles need at once, plus one to overlap loop iterations
    when memory allows; the compiler places pools by liveness."""
    tr = current()
    if pool is None:
        pool = auto_pool(tr, name, space)
    elif pool.space != space and space != "sbuf":
        fail(f"space={space!r} but pool '{pool.name}' is in {pool.space}")
    return new_tile(tr, pool, shape, dtype, name)


def output(shape, dtype, name="out"):
    """A new HBM output tensor of the kernel (return it from the kernel)."""
    tr = current()
    try:
        shape = [int(s) for s in shape]
    except TypeError:
        fail(f"output shape {shape!r} is not a list of ints")
    if not shape or any(s < 1 for s in shape):
        fail(f"output shape {shape} needs at least one dimension, each >= 1")
    t = HbmTensor(tr.unique(name), shape, dtype_name(dtype), "output")
    tr.tensors.append(t)
    return t


def limits():
    """The Limits the kernel is traced against (partitions, PSUM bank, ...)."""
    return current().limits


def _result(shape, dtype, out, pool_, space="sbuf", name=None):
    """`out` as a view checked against the shape, else a new tile."""
    if out is not None:
        v = _tile_view(out, "out")
        if list(v.shape) != list(shape):
            fail(f"out has shape {list(v.shape)} but the result is {list(shape)}")
        return v
    tr = current()
    if pool_ is not None:
        if pool_.space != space:
            fail(f"the result belongs in {space.upper()} but pool '{pool_.name}' is in "
                 f"{pool_.space.upper()}")
        return new_tile(tr, pool_, shape, dtype, name).view
    return new_tile(tr, auto_pool(tr, name, space), shape, dtype, name).view


def _tile_view(x, what):
    if not isinstance(x, (Tile, TileView)):
        fail(f"{what} must be an SBUF or PSUM tile (or a view of one), not "
             f"{type(x).__name__}" + (" (HBM: load it first)" if isinstance(
                 x, (HbmTensor, HbmView)) else ""))
    v = x.view
    t = v.tile
    if t.taken_by is not None:
        f, line = t.taken_where
        fail(f"tile '{t.name}' (pool '{t.pool.name}', bufs={t.pool.bufs}, buffer {t.slot}) is "
             f"used after tile '{t.taken_by.name}' took the buffer at {f}:{line}; the pool "
             f"rotates through {t.pool.bufs} buffer(s): raise bufs, or use the new tile only "
             "after the last use of this one")
    return v


def _partition_start(v, what):
    """The ISA's partition-start rule for compute engines."""
    n, p0 = v.np, v.p0
    ok = (p0 == 0) if n > 64 else (p0 in (0, 64)) if n > 32 else (p0 in (0, 32, 64, 96))
    if not ok:
        fail(f"{what} covers partitions {p0}..{p0 + n - 1}: compute engines start a range of "
             f"{n} partitions at " + ("0" if n > 64 else "0 or 64" if n > 32 else "0, 32, 64 "
                                      "or 96") + " (a DMA may use any range)")


def _engine(opcode, engine, views):
    if engine is None or engine == "auto":
        return "auto"  # assign_engines picks one that can (gpsimd never takes PSUM)
    if engine not in ENGINES[opcode]:
        fail(f"{opcode} runs on {', '.join(ENGINES[opcode])}, not {engine!r}")
    if engine == "gpsimd":
        for v in views:
            if v.space == "psum":
                fail(f"the gpsimd engine cannot access PSUM (tile '{v.tile.name}'); use vector "
                     "or scalar, or copy the tile to SBUF")
    return engine + "!"


def _gpsimd_sbuf(views, opcode):
    for v in views:
        if v.space == "psum":
            fail(f"{opcode} runs on gpsimd, which cannot access PSUM (tile '{v.tile.name}'); "
                 "copy the tile to SBUF first")


def _same_shape(a, b, what_a, what_b):
    if list(a.shape) != list(b.shape):
        fail(f"shape mismatch: {what_a} is {list(a.shape)} but {what_b} is {list(b.shape)}")


def _broadcastable(src, dst):
    """numpy's rule for the free axes: src's axes (right-aligned) are 1 or dst's."""
    if len(src) > len(dst):
        return False
    return all(a in (1, b) for a, b in zip(reversed(src), reversed(dst)))


def _no_broadcast_dst(v):
    if v.has_broadcast():
        fail(f"the destination view of tile '{v.tile.name}' repeats elements (a broadcast "
             "view); write to a plain view")


def _scalar_arg(x, dst_shape, what):
    """An immediate (float) or a per-partition [P,1] view broadcast over the free axes."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    v = _tile_view(x, what)
    if v.free_elems != 1 or v.np != dst_shape[0]:
        fail(f"{what} is {list(v.shape)}; a per-partition scalar is [{dst_shape[0]}, 1] (one "
             "value per partition) or a Python number")
    return v


# ---------------------------------------------------------------- data movement

def load(src, out=None, dtype=None, pool=None, name=None):
    """HBM view -> SBUF tile (a DMA; a different tile dtype casts)."""
    tr = current()
    if not isinstance(src, (HbmTensor, HbmView)):
        fail(f"load reads an HBM tensor or view, not {type(src).__name__}")
    s = as_view(src)
    if len(s.shape) < 2:
        fail(f"load of a {len(s.shape)}-d view {list(s.shape)}: index with slices to keep a "
             "partition axis and a free axis (e.g. x[i:i+1, :]), or reshape it")
    d = _result(s.shape, dtype_name(dtype) if dtype else s.dtype, out, pool,
                name=name or "ld")
    if d.space != "sbuf":
        fail(f"load into PSUM tile '{d.tile.name}': DMA moves between HBM and SBUF only")
    _no_broadcast_dst(d)
    _same_shape(d, s, "the tile", f"the view of '{s.tensor.name}'")
    tr.add_op(Op("dma_copy", "dma", {"dst": d, "src": s}))
    return d


def store(dst, src):
    """SBUF tile -> HBM view (a DMA; a different tensor dtype casts)."""
    tr = current()
    if not isinstance(dst, (HbmTensor, HbmView)):
        fail(f"store writes an HBM tensor or view, not {type(dst).__name__}")
    d = as_view(dst)
    if d.tensor.role == "input":
        fail(f"store into input '{d.tensor.name}': write to an output (trnsim.kernels.output)")
    s = _tile_view(src, "the stored tile")
    if s.space != "sbuf":
        fail(f"store from PSUM tile '{s.tile.name}': DMA moves between HBM and SBUF only; copy "
             "it to an SBUF tile first (trnsim.kernels.copy)")
    if any(st == 0 and n > 1 for st, n in d.dims):
        fail(f"the destination view of '{d.tensor.name}' repeats elements (a broadcast view)")
    _same_shape(d, s, f"the view of '{d.tensor.name}'", "the tile")
    tr.add_op(Op("dma_copy", "dma", {"dst": d, "src": s}))


# ---------------------------------------------------------------- tensor engine

def matmul(lhsT, rhs, out=None, accumulate=False, pool=None, name=None):
    """out[M,N] (+)= lhsT[K,M]^T @ rhs[K,N] on the tensor engine. Both operands are
    SBUF tiles with the contraction K on the partitions (the stationary operand lhsT is
    given transposed); the result is an fp32 PSUM tile within one bank.
    `accumulate=True` adds to what `out` holds (its first matmul passes False)."""
    tr = current()
    lim = tr.limits
    st, mv = _tile_view(lhsT, "lhsT"), _tile_view(rhs, "rhs")
    for v, what in ((st, "lhsT"), (mv, "rhs")):
        if v.space != "sbuf":
            fail(f"matmul {what} is PSUM tile '{v.tile.name}'; the tensor engine reads SBUF")
        if v.dtype not in FLOAT_DTYPES:
            fail(f"matmul {what} is {v.dtype}; the tensor engine takes "
                 f"{', '.join(FLOAT_DTYPES)}")
        _partition_start(v, f"matmul {what}")
    if (st.dtype.startswith("fp8")) != (mv.dtype.startswith("fp8")):
        fail(f"matmul lhsT is {st.dtype} and rhs is {mv.dtype}; both fp8 or neither")
    if st.np != mv.np:
        fail(f"shape mismatch: lhsT {list(st.shape)} and rhs {list(mv.shape)} contract over "
             f"the partition axis, {st.np} vs {mv.np}")
    m, n = st.free_elems, mv.free_elems
    if m > lim.psum_partitions:
        fail(f"matmul M={m} (lhsT free elements) exceeds the {lim.psum_partitions} PSUM "
             "partitions")
    if n > lim.matmul_max_n:
        fail(f"matmul N={n} (rhs free elements) exceeds {lim.matmul_max_n}, the largest "
             "moving free size")
    if out is None and accumulate:
        fail("accumulate=True needs out= (the PSUM tile to add to)")
    d = _result([m, n], "fp32", out, pool, space="psum", name=name or "mm")
    if d.space != "psum":
        fail(f"matmul writes PSUM; out is SBUF tile '{d.tile.name}'")
    if d.dtype != "fp32":
        fail(f"matmul out is {d.dtype}; the tensor engine writes fp32 to PSUM")
    _no_broadcast_dst(d)
    if d.np != m or d.free_elems != n:
        fail(f"shape mismatch: out is {list(d.shape)} but lhsT^T @ rhs is [{m}, {n}]")
    _partition_start(d, "matmul out")
    _bank(d, lim)
    tr.add_op(Op("matmul", "tensor", {"dst": d, "stationary": st, "moving": mv},
                 {"accumulate": bool(accumulate)}))
    return d


def _bank(d, lim):
    b = 4  # fp32
    lo = d.offset + sum(min(0, s * (n - 1)) for s, n in d.dims)
    hi = d.offset + sum(max(0, s * (n - 1)) for s, n in d.dims) + 1
    bank = lim.psum_bank_bytes
    if (lo * b) // bank != (hi * b - 1) // bank:
        t = d.tile
        fail(f"PSUM tile '{t.name}' {list(t.shape)}: the matmul result spans bytes "
             f"{lo * b}..{hi * b} of each partition, more than one {bank}-byte PSUM bank "
             f"(at most {bank // b} fp32 elements{' in config ' + lim.config if lim.config else ''})")


def transpose(x, out=None, dtype=None, pool=None, name=None):
    """[P,F] SBUF tile -> its [F,P] transpose in PSUM (tensor engine)."""
    tr = current()
    s = _tile_view(x, "x")
    if s.space != "sbuf":
        fail(f"transpose reads SBUF; '{s.tile.name}' is in PSUM")
    f = s.free_elems
    lim = tr.limits
    if s.np > lim.partitions or f > lim.psum_partitions:
        fail(f"transpose of [{s.np}, {f}] needs both at most {lim.psum_partitions}")
    if s.dtype not in FLOAT_DTYPES:
        fail(f"transpose input is {s.dtype}; the tensor engine takes {', '.join(FLOAT_DTYPES)}")
    dt = dtype_name(dtype) if dtype else s.dtype
    d = _result([f, s.np], dt, out, pool, space="psum", name=name or "tp")
    if d.space != "psum":
        fail(f"transpose writes PSUM; out is SBUF tile '{d.tile.name}'")
    if d.dtype not in (s.dtype, "fp32"):
        fail(f"transpose out is {d.dtype}; it must be the input dtype ({s.dtype}) or fp32")
    _no_broadcast_dst(d)
    _partition_start(s, "transpose input")
    _partition_start(d, "transpose out")
    tr.add_op(Op("transpose", "tensor", {"dst": d, "src": s}))
    return d


# ---------------------------------------------------------------- element-wise

def _operand(x, what):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return _tile_view(x, what)


def _elementwise_out(shape, dtype, out, pool, name):
    d = _result(shape, dtype, out, pool, name=name)
    _no_broadcast_dst(d)
    _partition_start(d, "the result")
    return d


def tensor_tensor(a, b, op, out=None, dtype=None, engine=None, pool=None, name=None):
    """out = a op b element-wise (vector or gpsimd); b broadcasts over free axes."""
    tr = current()
    if op not in ALU_OPS:
        fail(f"op={op!r} is not one of {', '.join(ALU_OPS)}")
    va, vb = _tile_view(a, "in0"), _tile_view(b, "in1")
    if list(vb.shape) != list(va.shape):
        if vb.np != va.np or not _broadcastable(vb.shape[1:], va.shape[1:]):
            _same_shape(va, vb, "in0", "in1")
        vb = vb.broadcast_to(va.shape)
    d = _elementwise_out(va.shape, dtype_name(dtype) if dtype else va.dtype, out, pool,
                         name or op)
    _same_shape(d, va, "out", "in0")
    for v, w in ((va, "in0"), (vb, "in1")):
        _partition_start(v, w)
    eng = _engine("tensor_tensor", engine, (d, va, vb))
    tr.add_op(Op("tensor_tensor", eng, {"dst": d, "in0": va, "in1": vb}, {"op": op}))
    return d


def tensor_scalar(x, op0, arg0, op1=None, arg1=None, reverse0=False, reverse1=False, out=None,
                  dtype=None, engine=None, accum_out=None, accum_op="add", pool=None, name=None):
    """t = x op0 arg0 (arg0 op0 x if reverse0); out = t op1 arg1. Args are numbers or
    per-partition [P,1] tiles. `accum_out` ([P,1]) gets out reduced with accum_op."""
    tr = current()
    s = _tile_view(x, "x")
    for o in (op0, op1 or "bypass"):
        if o not in ALU_OPS:
            fail(f"op {o!r} is not one of {', '.join(ALU_OPS)}")
    a0 = _scalar_arg(arg0, s.shape, "arg0")
    a1 = _scalar_arg(0.0 if arg1 is None else arg1, s.shape, "arg1")
    d = _elementwise_out(s.shape, dtype_name(dtype) if dtype else s.dtype, out, pool,
                         name or op0)
    _same_shape(d, s, "out", "x")
    _partition_start(s, "x")
    operands = {"dst": d, "src": s}
    attrs = {"op0": op0, "arg0": a0}
    if op1 is not None and op1 != "bypass":
        attrs.update(op1=op1, arg1=a1)
    if reverse0:
        attrs["reverse0"] = True
    if reverse1:
        attrs["reverse1"] = True
    views = [d, s] + [a for a in (a0, a1) if isinstance(a, TileView)]
    if accum_out is not None:
        acc = _scalar_arg(accum_out, s.shape, "accum_out")
        if isinstance(acc, float):
            fail("accum_out must be a [P,1] tile view")
        if accum_op not in REDUCE_OPS:
            fail(f"accum_op={accum_op!r} is not one of {', '.join(REDUCE_OPS)}")
        attrs["accum"] = acc
        if accum_op != "add":
            attrs["accum_op"] = accum_op
        views.append(acc)
    eng = _engine("tensor_scalar", engine, views)
    tr.add_op(Op("tensor_scalar", eng, operands, attrs))
    return d


def _binary(op):
    def f(a, b, out=None, dtype=None, engine=None, pool=None, name=None):
        a_num = isinstance(a, (int, float)) and not isinstance(a, bool)
        b_num = isinstance(b, (int, float)) and not isinstance(b, bool)
        if a_num and b_num:
            fail(f"{op} of two numbers: one operand must be a tile")
        if a_num or b_num or _is_column(b, a) or _is_column(a, b):
            # tile op scalar (or scalar op tile: reversed)
            rev = a_num or (_is_column(a, b) and not _is_column(b, a))
            x, s = (b, a) if rev else (a, b)
            return tensor_scalar(x, op, s, reverse0=rev, out=out, dtype=dtype, engine=engine,
                                 pool=pool, name=name)
        return tensor_tensor(a, b, op, out=out, dtype=dtype, engine=engine, pool=pool,
                             name=name)
    f.__name__ = {"max": "maximum", "min": "minimum", "pow": "power"}.get(op, op)
    f.__doc__ = (f"Element-wise a {op} b. Tiles of the same shape (b may broadcast over "
                 "free axes) run as tensor_tensor; a number or a per-partition [P,1] tile "
                 "as tensor_scalar.")
    return f


def _is_column(c, other):
    """c is a per-partition [P,1] view and `other` a wider tile with the same P."""
    if not isinstance(c, (Tile, TileView)) or not isinstance(other, (Tile, TileView)):
        return False
    cv, ov = c.view, other.view
    return cv.free_elems == 1 and ov.free_elems > 1 and cv.np == ov.np


add, sub, mul, div = _binary("add"), _binary("sub"), _binary("mul"), _binary("div")
maximum, minimum, power = _binary("max"), _binary("min"), _binary("pow")
equal, not_equal = _binary("eq"), _binary("ne")
less, less_equal, greater, greater_equal = (_binary("lt"), _binary("le"), _binary("gt"),
                                            _binary("ge"))


def activation(func, x, scale=1.0, bias=0.0, out=None, dtype=None, accum_out=None, pool=None,
               name=None):
    """out = func(x * scale + bias) on the scalar engine; scale and bias are numbers or
    per-partition [P,1] tiles; `accum_out` [P,1] gets the sum of out over the free axes."""
    tr = current()
    if func not in ACT_FUNCS:
        fail(f"activation {func!r} is not one of {', '.join(ACT_FUNCS)}")
    s = _tile_view(x, "x")
    sc = _scalar_arg(scale, s.shape, "scale")
    bi = _scalar_arg(bias, s.shape, "bias")
    d = _elementwise_out(s.shape, dtype_name(dtype) if dtype else s.dtype, out, pool,
                         name or func)
    _same_shape(d, s, "out", "x")
    _partition_start(s, "x")
    attrs = {"func": func}
    if not (isinstance(sc, float) and sc == 1.0):
        attrs["scale"] = sc
    if not (isinstance(bi, float) and bi == 0.0):
        attrs["bias"] = bi
    if accum_out is not None:
        acc = _scalar_arg(accum_out, s.shape, "accum_out")
        if isinstance(acc, float):
            fail("accum_out must be a [P,1] tile view")
        attrs["accum"] = acc
    tr.add_op(Op("activation", "scalar", {"dst": d, "src": s}, attrs))
    return d


def _act(func):
    def f(x, scale=1.0, bias=0.0, out=None, dtype=None, accum_out=None, pool=None, name=None):
        return activation(func, x, scale, bias, out, dtype, accum_out, pool, name)
    f.__name__ = func
    f.__doc__ = f"{func}(x * scale + bias) on the scalar engine (see activation)."
    return f


identity, relu, gelu, gelu_tanh, sigmoid, tanh, exp, log, silu, sqrt, rsqrt, reciprocal, \
    square, abs, erf, softplus = (_act(f) for f in ACT_FUNCS)


def copy(x, out=None, dtype=None, engine=None, pool=None, name=None):
    """A copy (casting to out's dtype); e.g. PSUM -> SBUF."""
    tr = current()
    s = _tile_view(x, "x")
    d = _elementwise_out(s.shape, dtype_name(dtype) if dtype else s.dtype, out, pool,
                         name or "cp")
    _same_shape(d, s, "out", "x")
    _partition_start(s, "x")
    eng = _engine("tensor_copy", engine, (d, s))
    tr.add_op(Op("tensor_copy", eng, {"dst": d, "src": s}))
    return d


def memset(x, value, engine=None):
    """Fills a tile view with a number."""
    tr = current()
    d = _tile_view(x, "x")
    _no_broadcast_dst(d)
    _partition_start(d, "x")
    eng = _engine("memset", engine, (d,))
    tr.add_op(Op("memset", eng, {"dst": d}, {"value": float(value)}))
    return d


def full(shape, value, dtype="fp32", engine=None, pool=None, name=None, space="sbuf"):
    """A new tile filled with `value`."""
    d = _result(list(shape), dtype_name(dtype), None, pool, space=space, name=name or "full")
    return memset(d, value, engine)


def zeros(shape, dtype="fp32", engine=None, pool=None, name=None, space="sbuf"):
    """A new tile of zeros."""
    return full(shape, 0.0, dtype, engine, pool, name, space)


def _reduce(op):
    def f(x, axis=-1, out=None, dtype=None, engine=None, pool=None, name=None):
        tr = current()
        s = _tile_view(x, "x")
        nd = len(s.shape)
        axes = [axis] if isinstance(axis, int) else list(axis)
        norm = []
        for a in axes:
            a = a + nd if a < 0 else a
            if a == 0:
                fail("reduce over the partition axis: use partition_reduce (gpsimd), or "
                     "transpose first")
            if not 0 < a < nd:
                fail(f"axis {a} is out of range for a view of shape {list(s.shape)}")
            norm.append(a)
        shape = [1 if i in norm else n for i, n in enumerate(s.shape)]
        d = _elementwise_out(shape, dtype_name(dtype) if dtype else s.dtype, out, pool,
                             name or ("r" + op))
        _partition_start(s, "x")
        # The src pattern keeps the free axes as written (axes index them); size-1 axes
        # are dropped, and the kept ones merged in the dst stream.
        kept = [(i, dm) for i, dm in enumerate(s.dims, start=1) if dm[1] > 1]
        if not kept:  # nothing to reduce: a copy
            fail(f"reduction over axes {norm} of shape {list(s.shape)}: no axis has more "
                 "than one element")
        src_dims = [dm for _, dm in kept]
        bits = [j for j, (i, _) in enumerate(kept) if i in norm]
        if not bits:
            fail(f"reduction over axes {norm} of shape {list(s.shape)}: those axes have size 1")
        if len(src_dims) > 4:
            fail(f"reduce: the view has {len(src_dims)} free axes of size > 1; an access "
                 "pattern has at most 4")
        eng = _engine("tensor_reduce", engine, (d, s))
        tr.add_op(Op("tensor_reduce", eng, {"dst": d, "src": s}, {"op": op, "axes": bits},
                     text_dims={"src": (src_dims, True)}))
        return d
    f.__name__ = "reduce_" + {"add": "sum"}.get(op, op)
    f.__doc__ = (f"Reduces ({op}) free axes `axis` (int or list; the partition axis is 0); "
                 "the result keeps them as size 1, e.g. [P,F] -> [P,1].")
    return f


reduce_sum, reduce_max, reduce_min = _reduce("add"), _reduce("max"), _reduce("min")


def partition_reduce(x, op="add", partitions=None, out=None, pool=None, name=None):
    """Every one of `partitions` (default: x's) output partitions gets x reduced over
    its partitions (gpsimd)."""
    tr = current()
    if op not in REDUCE_OPS:
        fail(f"op={op!r} is not one of {', '.join(REDUCE_OPS)}")
    s = _tile_view(x, "x")
    p = partitions or s.np
    d = _result([p] + list(s.shape[1:]), s.dtype, out, pool, name=name or "preduce")
    _no_broadcast_dst(d)
    if d.free_elems != s.free_elems:
        fail(f"shape mismatch: out has {d.free_elems} elements per partition, x {s.free_elems}")
    _gpsimd_sbuf((d, s), "partition_reduce")
    tr.add_op(Op("partition_reduce", "gpsimd", {"dst": d, "src": s}, {"op": op}))
    return d


def partition_broadcast(x, partitions, out=None, pool=None, name=None):
    """Copies the one-partition view x [1,...] to `partitions` partitions (gpsimd)."""
    tr = current()
    s = _tile_view(x, "x")
    if s.np != 1:
        fail(f"partition_broadcast copies one partition; x has {s.np}")
    d = _result([int(partitions)] + list(s.shape[1:]), s.dtype, out, pool,
                name=name or "pbcast")
    _no_broadcast_dst(d)
    if d.free_elems != s.free_elems:
        fail(f"shape mismatch: out has {d.free_elems} elements per partition, x {s.free_elems}")
    _gpsimd_sbuf((d, s), "partition_broadcast")
    tr.add_op(Op("partition_broadcast", "gpsimd", {"dst": d, "src": s}))
    return d


def _steps(steps, ndims):
    steps = [int(s) for s in steps]
    if len(steps) > ndims:
        fail(f"{len(steps)} steps for {ndims} free axes")
    return steps + [0] * (ndims - len(steps))


def iota(shape, dtype="fp32", base=0, pstep=0, steps=(), out=None, pool=None, name=None):
    """out[p, i0, i1, ...] = base + pstep*p + sum(steps[k] * i_k) (gpsimd)."""
    tr = current()
    d = _result(list(shape), dtype_name(dtype), out, pool, name=name or "iota")
    _no_broadcast_dst(d)
    _gpsimd_sbuf((d,), "iota")
    _partition_start(d, "out")
    if len(d.dims) > 4:
        fail("iota: at most 4 free axes")
    st = _steps(steps, len(d.dims))
    tr.add_op(Op("iota", "gpsimd", {"dst": d}, {"base": float(base), "pstep": int(pstep),
                                                "steps": st},
                 text_dims={"dst": (d.dims, True)}))
    return d


def affine_select(x, cmp, fill, base=0, pstep=0, steps=(), out=None, pool=None, name=None):
    """out = x where (base + pstep*p + sum(steps[k] * i_k)) cmp 0, else fill (gpsimd):
    masks such as causal attention's (cmp='ge', pstep=1, steps=[-1])."""
    tr = current()
    if cmp not in COMPARE_OPS:
        fail(f"cmp={cmp!r} is not one of {', '.join(COMPARE_OPS)}")
    s = _tile_view(x, "x")
    d = _result(list(s.shape), s.dtype, out, pool, name=name or "mask")
    _no_broadcast_dst(d)
    _same_shape(d, s, "out", "x")
    _gpsimd_sbuf((d, s), "affine_select")
    _partition_start(d, "out")
    _partition_start(s, "x")
    if len(d.dims) > 4:
        fail("affine_select: at most 4 free axes")
    st = _steps(steps, len(d.dims))
    tr.add_op(Op("affine_select", "gpsimd", {"dst": d, "src": s},
                 {"cmp": cmp, "base": float(base), "pstep": int(pstep), "steps": st,
                  "fill": float(fill)},
                 text_dims={"dst": (d.dims, True), "src": (s.dims, True)}))
    return d


def where(pred, on_true, on_false, out=None, engine=None, pool=None, name=None):
    """out = on_true where pred != 0 else on_false (vector or gpsimd)."""
    tr = current()
    p = _tile_view(pred, "pred")
    a, b = _tile_view(on_true, "on_true"), _tile_view(on_false, "on_false")
    _same_shape(p, a, "pred", "on_true")
    _same_shape(p, b, "pred", "on_false")
    d = _elementwise_out(a.shape, a.dtype, out, pool, name or "sel")
    _same_shape(d, a, "out", "on_true")
    for v, w in ((p, "pred"), (a, "on_true"), (b, "on_false")):
        _partition_start(v, w)
    eng = _engine("select", engine, (d, p, a, b))
    tr.add_op(Op("select", eng, {"dst": d, "pred": p, "on_true": a, "on_false": b}))
    return d


def bn_stats(x, out=None, pool=None, name=None):
    """(count, mean, M2) of x's free elements per partition -> [P,3] fp32 (vector)."""
    tr = current()
    s = _tile_view(x, "x")
    lim = tr.limits
    if s.free_elems > lim.bn_stats_max_free:
        fail(f"bn_stats of {s.free_elems} elements per partition; one bn_stats takes at most "
             f"{lim.bn_stats_max_free}{' in config ' + lim.config if lim.config else ''}: "
             "split the row and combine the parts with bn_aggr")
    d = _elementwise_out([s.np, 3], "fp32", out, pool, name or "stats")
    _partition_start(s, "x")
    tr.add_op(Op("bn_stats", "vector", {"dst": d, "src": s}))
    return d


def bn_aggr(stats, out=None, pool=None, name=None):
    """Combines k (count, mean, M2) triples [P,3k] -> (mean, variance) [P,2] (vector)."""
    tr = current()
    s = _tile_view(stats, "stats")
    if s.free_elems % 3:
        fail(f"bn_aggr reads (count, mean, M2) triples; stats has {s.free_elems} elements per "
             "partition")
    d = _elementwise_out([s.np, 2], "fp32", out, pool, name or "mv")
    _partition_start(s, "stats")
    tr.add_op(Op("bn_aggr", "vector", {"dst": d, "src": s}))
    return d


def range(*args):
    """range() for kernel loops: loops are Python loops, unrolled at trace time; this
    is the same sequence, for kernels that want to mark their tile loops."""
    return builtins.range(*args)


def where_am_i():
    """(file, line) of the kernel source calling it (for tools)."""
    return user_frame()
