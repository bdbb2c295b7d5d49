"""The tile language's objects and tracing state: dtypes, limits, HBM tensors,
pools, tiles and their views, op records, and the text form they become.

A trace runs the user's function once; every language call appends an `Op` to the
active `Trace`. Views are access patterns (an element offset plus (stride, size)
per axis), so slicing, broadcasting and transposing never copy anything.
"""

import os
import sys
import threading

import numpy as np

# name -> (bytes, numpy dtype the CLI writes for it)
DTYPES = {
    "fp32": (4, np.float32), "bf16": (2, np.float32), "fp16": (2, np.float16),
    "fp8e4m3": (1, np.float32), "fp8e5m2": (1, np.float32),
    "int32": (4, np.int32), "uint8": (1, np.uint8),
}
FLOAT_DTYPES = ("fp32", "bf16", "fp16", "fp8e4m3", "fp8e5m2")
_NUMPY_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int32": "int32",
                "uint8": "uint8", "float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2"}

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def dtype_name(d):
    """'bf16', np.float32, np.dtype('float16'), ... -> the ISA's dtype name."""
    if isinstance(d, str) and d in DTYPES:
        return d
    try:
        n = np.dtype(d).name
    except TypeError:
        n = str(d)
    if n in _NUMPY_NAMES:
        return _NUMPY_NAMES[n]
    raise KernelError(f"unknown dtype {d!r} (use one of {', '.join(DTYPES)})")


def dtype_bytes(d):
    return DTYPES[d][0]


# ---------------------------------------------------------------- errors

class KernelError(ValueError):
    """A kernel the language refuses at trace time. The message starts with the
    user's FILE:LINE (the call that is wrong); `filename` and `lineno` hold them."""

    def __init__(self, message, where=None):
        self.filename, self.lineno = where if where else (None, None)
        self.message = message
        text = f"{self.filename}:{self.lineno}: error: {message}" if where else message
        super().__init__(text)


_inside = {}  # code file name -> whether it is this package's


def _in_package(filename):
    r = _inside.get(filename)
    if r is None:
        r = _inside[filename] = os.path.dirname(os.path.abspath(filename)) == _PKG_DIR
    return r


def user_frame():
    """(file, line) of the innermost caller outside this package."""
    f = sys._getframe(1)
    while f is not None and _in_package(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return ("<unknown>", 0)
    return (f.f_code.co_filename, f.f_lineno)


def fail(message):
    raise KernelError(message, user_frame())


# ---------------------------------------------------------------- limits

class Limits:
    """The hardware sizes the language checks kernels against, read from a platform
    config (`trnsim info -c CONFIG`) or given by hand.

    partitions: SBUF/PSUM partitions (the partition axis limit; matmul K and M);
    sbuf_bytes, psum_bytes: bytes per partition; psum_bank_bytes: one PSUM bank per
    partition (a matmul result lies in one bank); matmul_max_n: largest moving free
    size; bn_stats_max_free: largest free size one bn_stats takes.
    """

    FIELDS = ("partitions", "psum_partitions", "sbuf_bytes", "psum_bytes", "psum_bank_bytes",
              "matmul_max_n", "bn_stats_max_free")

    def __init__(self, partitions, sbuf_bytes, psum_bytes, psum_bank_bytes, matmul_max_n,
                 bn_stats_max_free, psum_partitions=None, config=None):
        self.partitions = int(partitions)
        self.psum_partitions = int(psum_partitions if psum_partitions is not None else partitions)
        self.sbuf_bytes = int(sbuf_bytes)
        self.psum_bytes = int(psum_bytes)
        self.psum_bank_bytes = int(psum_bank_bytes)
        self.matmul_max_n = int(matmul_max_n)
        self.bn_stats_max_free = int(bn_stats_max_free)
        self.config = config

    def psum_free(self, dtype="fp32"):
        """Elements of `dtype` one PSUM bank holds per partition."""
        return self.psum_bank_bytes // dtype_bytes(dtype_name(dtype))

    def __repr__(self):
        f = ", ".join(f"{k}={getattr(self, k)}" for k in self.FIELDS)
        return f"Limits({f}{', config=' + repr(self.config) if self.config else ''})"


# ---------------------------------------------------------------- trace state

_state = threading.local()


def current():
    t = getattr(_state, "trace", None)
    if t is None:
        fail("trnsim.kernels calls work only inside a @trnsim.kernels.kernel function "
             "while it is traced (kernel.simulate / benchmark / trace)")
    return t


class Trace:
    """Everything one run of the user's function built."""

    def __init__(self, name, limits):
        self.name = name
        self.limits = limits
        self.tensors = []
        self.pools = []
        self.tiles = []
        self.ops = []
        self._names = set()
        self._next = {}  # base name -> next suffix to try
        self.auto_pools = {}  # (call site, space, name) -> Pool

    def unique(self, base):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "t"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "_" + base
        name, i = base, self._next.get(base, 1)
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._next[base] = i
        self._names.add(name)
        return name

    def add_op(self, op):
        op.id = len(self.ops)
        self.ops.append(op)
        views = list(op.operands.values()) + list(op.attrs.values())
        for v in views:
            if not isinstance(v, TileView):
                continue
            v.tile.last = op.id
            if not v.tile.touched:
                t = v.tile
                t.touched = True
                t.first = op.id
                if t.pool.auto:
                    continue
                # The first use of a tile ends the tiles allocated before it in its buffer.
                for old in t.pool.by_slot[t.slot]:
                    if old is t:
                        break
                    if old.taken_by is None:
                        old.taken_by, old.taken_where = t, op.where
        return op


# ---------------------------------------------------------------- views

def _norm_index(idx, shape):
    """An index expression -> a list with one entry per axis (slice, int or None)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if n_real > len(shape):
        fail(f"too many indices ({n_real}) for a view of shape {list(shape)}")
    out = []
    for i in idx:
        if i is Ellipsis:
            out += [slice(None)] * (len(shape) - n_real)
            n_real = len(shape)  # one Ellipsis only
        else:
            out.append(i)
    while sum(1 for i in out if i is not None) < len(shape):
        out.append(slice(None))
    return out


def _slice_text(s):
    t = f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}"
    return t + (f":{s.step}" if s.step is not None else "")


def _apply_index(offset, dims, idx, keep_first=False):
    """Indexes the pattern (offset, [(stride, size)...]); returns (offset, dims, first)
    where `first` is (start, size) of axis 0 when `keep_first` (tile partition axis)."""
    if type(idx) is tuple and len(idx) == len(dims) and all(
            type(i) is slice or type(i) is int for i in idx):
        items = idx  # the common case: one slice or int per axis
    else:
        items = _norm_index(idx, [n for _, n in dims])
    new, axis, first = [], 0, None
    for it in items:
        if it is None:
            new.append((0, 1))
            continue
        stride, size = dims[axis]
        if isinstance(it, slice):
            for b in (it.start, it.stop):
                # numpy clamps; a kernel's slice past the end is a mistake worth naming.
                if b is not None and not -size <= b <= size:
                    fail(f"slice {_slice_text(it)} of axis {axis} (size {size}) is out of range")
            start, stop, step = it.indices(size)
            n = len(range(start, stop, step))
            if n == 0:
                fail(f"slice {_slice_text(it)} of axis {axis} (size {size}) is empty")
            if keep_first and axis == 0:
                if step != 1:
                    fail("the partition axis takes contiguous slices only (step 1)")
                first = (start, n)
            else:
                offset += start * stride
                new.append((stride * step, n))
        else:
            try:
                i = int(it)
            except TypeError:
                fail(f"index {it!r} is not an int or slice (indices are Python values at "
                     "trace time)")
            if i < 0:
                i += size
            if not 0 <= i < size:
                fail(f"index {int(it)} is out of range for axis {axis} of size {size}")
            if keep_first and axis == 0:
                first = (i, 1)  # the partition axis stays, one partition
            else:
                offset += i * stride
        axis += 1
    return offset, new, first


def _broadcast_dims(dims, shape, what):
    """Free-axis dims broadcast to `shape` (numpy rules, size 1 -> stride 0)."""
    if len(shape) < len(dims):
        fail(f"cannot broadcast {what} of shape {[s for _, s in dims]} to {list(shape)}")
    dims = [(0, 1)] * (len(shape) - len(dims)) + list(dims)
    out = []
    for (st, n), want in zip(dims, shape):
        if n == want:
            out.append((st, n))
        elif n == 1:
            out.append((0, want))
        else:
            fail(f"cannot broadcast {what} of shape {[s for _, s in dims]} to {list(shape)}")
    return out


def merge_dims(dims):
    """Drops size-1 dims and merges dims that walk memory contiguously."""
    out = []
    for st, n in dims:
        if n == 1:
            continue
        if out and out[-1][0] == st * n:
            out[-1] = (st, out[-1][1] * n)
        else:
            out.append((st, n))
    return out


def _contiguous(dims):
    m = merge_dims(dims)
    return not m or (len(m) == 1 and m[0][0] == 1)


def _reshape_dims(dims, shape, what):
    total = 1
    for _, n in dims:
        total *= n
    new_total = 1
    for n in shape:
        new_total *= int(n)
    if total != new_total:
        fail(f"cannot reshape {what} of {total} elements to {list(shape)}")
    if not _contiguous(dims):
        fail(f"reshape needs a contiguous {what}; this one is strided ({dims})")
    out, stride = [], 1
    for n in reversed([int(s) for s in shape]):
        out.append((stride, n))
        stride *= n
    return list(reversed(out))


class HbmTensor:
    """A kernel argument or output in HBM; index it (numpy basic indexing) for views."""

    def __init__(self, name, shape, dtype, role):
        self.name, self.shape, self.dtype, self.role = name, tuple(shape), dtype, role
        dims, stride = [], 1
        for n in reversed(self.shape):
            dims.append((stride, n))
            stride *= n
        self._dims = list(reversed(dims))

    @property
    def view(self):
        return HbmView(self, 0, self._dims)

    def __getitem__(self, idx):
        return self.view[idx]

    @property
    def T(self):
        return self.view.T

    def reshape(self, *shape):
        return self.view.reshape(*shape)

    def broadcast_to(self, shape):
        return self.view.broadcast_to(shape)

    def __repr__(self):
        return f"HbmTensor({self.name}, {list(self.shape)}, {self.dtype}, {self.role})"


class HbmView:
    """A strided region of an HBM tensor: offset and (stride, size) per axis [elements]."""

    def __init__(self, tensor, offset, dims):
        self.tensor, self.offset, self.dims = tensor, offset, list(dims)

    @property
    def shape(self):
        return tuple(n for _, n in self.dims)

    @property
    def dtype(self):
        return self.tensor.dtype

    def __getitem__(self, idx):
        off, dims, _ = _apply_index(self.offset, self.dims, idx)
        return HbmView(self.tensor, off, dims)

    @property
    def T(self):
        return self.transpose()

    def transpose(self, *axes):
        if not axes:
            axes = tuple(reversed(range(len(self.dims))))
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if sorted(axes) != list(range(len(self.dims))):
            fail(f"transpose axes {list(axes)} do not permute {len(self.dims)} axes")
        return HbmView(self.tensor, self.offset, [self.dims[a] for a in axes])

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return HbmView(self.tensor, self.offset,
                       _reshape_dims(self.dims, shape, f"view of '{self.tensor.name}'"))

    def broadcast_to(self, shape):
        return HbmView(self.tensor, self.offset,
                       _broadcast_dims(self.dims, list(shape), f"view of '{self.tensor.name}'"))

    def text(self):
        dt = self.dtype
        b = dtype_bytes(dt)
        if self.dims:
            (pst, rows), rest = self.dims[0], merge_dims(self.dims[1:])
        else:
            pst, rows, rest = 0, 1, []
        if len(rest) > 4:
            fail(f"the view of '{self.tensor.name}' needs {len(rest)} free dims after merging; "
                 "an access pattern has at most 4")
        d = "".join(f", [{s},{n}]" for s, n in rest)
        return f"{self.tensor.name}:hbm[{rows}x{pst}, {self.offset * b}, {dt}{d}]"

    def __repr__(self):
        return f"HbmView({self.tensor.name}, shape={list(self.shape)})"


class Pool:
    """`bufs` rotating buffers in SBUF or PSUM: the pool's i-th tile lives in buffer
    i % bufs, so tile i + bufs takes tile i's memory (tile i must be done by then).
    bufs=2 double-buffers a tile allocated once per loop iteration."""

    def __init__(self, trace, name, space, bufs, where):
        self.trace, self.name, self.space, self.bufs = trace, name, space, bufs
        self.where = where
        self.count = 0
        self.by_slot = {}  # slot -> the tiles of that buffer, in allocation order
        # Automatic: the tiles one call site of the kernel allocates without a pool;
        # bufs and slots are chosen after the trace (assign_auto_buffers).
        self.auto = False
        self.tiles = []

    def tile(self, shape, dtype, name=None):
        """A new tile of this pool in its next buffer."""
        return new_tile(self.trace, self, shape, dtype, name)

    def __repr__(self):
        return f"Pool({self.name}, {self.space}, bufs={self.bufs})"


def auto_pool(trace, name, space):
    """The automatic pool of the tiles one kernel line allocates without a pool (one
    per op name and space on that line)."""
    key = (user_frame(), space, name)
    p = trace.auto_pools.get(key)
    if p is None:
        p = new_pool(trace, name, space, 1)
        p.auto = True
        trace.auto_pools[key] = p
    return p


def new_pool(trace, name, space, bufs):
    if space not in ("sbuf", "psum"):
        fail(f"pool space must be 'sbuf' or 'psum', not {space!r}")
    try:
        bufs = int(bufs)
    except (TypeError, ValueError):
        fail(f"bufs={bufs!r} is not an integer")
    if bufs < 1:
        fail(f"bufs={bufs} must be >= 1")
    p = Pool(trace, trace.unique(name or ("ps" if space == "psum" else "pool")), space, bufs,
             user_frame())
    trace.pools.append(p)
    return p


def new_tile(trace, pool, shape, dtype, name=None):
    lim = trace.limits
    try:
        shape = [int(s) for s in shape]
    except TypeError:
        fail(f"tile shape {shape!r} is not a list of ints")
    dtype = dtype_name(dtype)
    if len(shape) < 2:
        fail(f"a tile has a partition axis and at least one free axis; shape {shape}")
    if any(s < 1 for s in shape):
        fail(f"tile shape {shape} has a dimension < 1")
    parts = lim.psum_partitions if pool.space == "psum" else lim.partitions
    if shape[0] > parts:
        fail(f"tile shape {shape}: {shape[0]} partitions, but {pool.space.upper()} has "
             f"{parts}{_cfg(lim)}; split the partition axis into tiles of at most {parts}")
    nbytes = dtype_bytes(dtype)
    for s in shape[1:]:
        nbytes *= s
    cap = lim.psum_bytes if pool.space == "psum" else lim.sbuf_bytes
    if nbytes * pool.bufs > cap:
        fail(f"tile shape {shape} {dtype}: {nbytes} bytes per partition x bufs={pool.bufs} "
             f"exceed the {cap} bytes a {pool.space.upper()} partition has{_cfg(lim)}")
    where = user_frame()
    slot = pool.count % pool.bufs
    pool.count += 1
    t = Tile(trace.unique(name or f"{pool.name}_t"), pool, shape, dtype, slot, where)
    pool.by_slot.setdefault(slot, []).append(t)
    pool.tiles.append(t)
    trace.tiles.append(t)
    return t


def _cfg(lim):
    return f" (config {lim.config})" if lim.config else ""


class _ViewOps:
    """Arithmetic operators of tiles and views (element-wise ops, new auto tiles)."""

    def __add__(self, o):
        from trnsim.kernels import _ops
        return _ops.add(self, o)

    def __radd__(self, o):
        from trnsim.kernels import _ops
        return _ops.add(self, o)

    def __sub__(self, o):
        from trnsim.kernels import _ops
        return _ops.sub(self, o)

    def __rsub__(self, o):
        from trnsim.kernels import _ops
        return _ops.sub(o, self)

    def __mul__(self, o):
        from trnsim.kernels import _ops
        return _ops.mul(self, o)

    def __rmul__(self, o):
        from trnsim.kernels import _ops
        return _ops.mul(self, o)

    def __truediv__(self, o):
        from trnsim.kernels import _ops
        return _ops.div(self, o)

    def __rtruediv__(self, o):
        from trnsim.kernels import _ops
        return _ops.div(o, self)

    def __neg__(self):
        from trnsim.kernels import _ops
        return _ops.mul(self, -1.0)


class Tile(_ViewOps):
    """An SBUF or PSUM tile: shape [partitions, free...], starting at partition 0."""

    def __init__(self, name, pool, shape, dtype, slot, where):
        self.name, self.pool, self.shape, self.dtype = name, pool, tuple(shape), dtype
        self.slot, self.where = slot, where
        # The later tile of the same buffer whose first use ended this one's life, and
        # where that was: a use of this tile after it would read the other's data.
        self.taken_by = self.taken_where = None
        self.touched = False
        self.first = self.last = None  # ids of the first and last op using it
        self.index = None
        n, dims, stride = 1, [], 1
        for s in reversed(shape[1:]):
            dims.append((stride, s))
            stride *= s
            n *= s
        self.free_elems = n
        self._dims = list(reversed(dims))

    @property
    def space(self):
        return self.pool.space

    @property
    def view(self):
        return TileView(self, 0, self.shape[0], 0, self._dims)

    def __getitem__(self, idx):
        return self.view[idx]

    def reshape(self, *shape):
        return self.view.reshape(*shape)

    def broadcast_to(self, shape):
        return self.view.broadcast_to(shape)

    def __repr__(self):
        return f"Tile({self.name}, {list(self.shape)}, {self.dtype}, {self.space})"


class TileView(_ViewOps):
    """Partitions [p0, p0 + np) of a tile and a strided pattern of its free elements."""

    def __init__(self, tile, p0, np_, offset, dims):
        self.tile, self.p0, self.np, self.offset, self.dims = tile, p0, np_, offset, list(dims)

    @property
    def shape(self):
        return (self.np,) + tuple(n for _, n in self.dims)

    @property
    def dtype(self):
        return self.tile.dtype

    @property
    def space(self):
        return self.tile.space

    @property
    def free_elems(self):
        n = 1
        for _, s in self.dims:
            n *= s
        return n

    @property
    def view(self):
        return self

    def __getitem__(self, idx):
        dims = [(0, self.np)] + self.dims  # axis 0: the partitions
        off, new, first = _apply_index(self.offset, dims, idx, keep_first=True)
        if first is None:  # a None before the partition axis
            fail("the partition axis stays first; index it with a slice or an int")
        return TileView(self.tile, self.p0 + first[0], first[1], off, new)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = [int(s) for s in shape]
        if shape[0] != self.np:
            fail(f"reshape keeps the partition axis ({self.np}); got {shape}")
        return TileView(self.tile, self.p0, self.np, self.offset,
                        _reshape_dims(self.dims, shape[1:], f"view of tile '{self.tile.name}'"))

    def broadcast_to(self, shape):
        shape = [int(s) for s in shape]
        if shape[0] != self.np:
            fail(f"broadcast_to keeps the partition axis ({self.np}); got {shape} (use "
                 "partition_broadcast to copy one partition to many)")
        return TileView(self.tile, self.p0, self.np, self.offset,
                        _broadcast_dims(self.dims, shape[1:], f"view of tile '{self.tile.name}'"))

    def has_broadcast(self):
        return any(st == 0 and n > 1 for st, n in self.dims)

    def text(self, dims=None, keep=False):
        """The operand text; `dims` overrides the free dims, `keep` skips merging."""
        dt = self.dtype
        d = self.dims if dims is None else dims
        d = d if keep else merge_dims(d)
        if len(d) > 4:
            fail(f"the view of tile '{self.tile.name}' needs {len(d)} free dims after merging; "
                 "an access pattern has at most 4")
        ds = "".join(f", [{s},{n}]" for s, n in d)
        return (f"{self.tile.name}:{self.space}[{self.p0}:{self.p0 + self.np}, "
                f"{self.offset * dtype_bytes(dt)}, {dt}{ds}]")

    def __repr__(self):
        return f"TileView({self.tile.name}, shape={list(self.shape)}, {self.dtype})"


def as_view(x, what="operand"):
    if isinstance(x, (Tile, TileView)):
        v = x.view
    elif isinstance(x, (HbmTensor, HbmView)):
        v = x.view if isinstance(x, HbmTensor) else x
    else:
        fail(f"{what} is {type(x).__name__}, not a tile or tensor view")
    return v


# ---------------------------------------------------------------- ops

class Op:
    """One traced instruction. `operands` maps the ISA key to a view (reads and
    writes); `attrs` holds the other keys as Python values; `text_attrs` their text."""

    def __init__(self, opcode, engine, operands, attrs=None, where=None, text_dims=None):
        self.id = -1
        self.opcode, self.engine = opcode, engine
        self.operands = operands  # ordered {key: view}
        self.attrs = attrs or {}
        self.where = where or user_frame()
        self.text_dims = text_dims or {}  # key -> (dims, keep) overriding a view's dims

    def text(self):
        parts = [f"%{self.id} {self.engine} {self.opcode}"]
        for k, v in self.operands.items():
            if isinstance(v, HbmView):
                parts.append(f"{k}={v.text()}")
            else:
                dims, keep = self.text_dims.get(k, (None, False))
                parts.append(f"{k}={v.text(dims, keep)}")
        for k, v in self.attrs.items():
            parts.append(f"{k}={attr_text(v)}")
        f, line = self.where
        return " ".join(parts) + f"  # {os.path.basename(f)}:{line}"


def float_text(v):
    v = float(np.float32(v))
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def attr_text(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (TileView,)):
        return v.text()
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(int(x)) for x in v) + "]"
    if isinstance(v, (float, np.floating)):
        return float_text(v)
    return str(v)


def _buffer_bytes(pool, lim):
    """Bytes per partition of one buffer, rounded as the compiler places them."""
    b = max([t.free_elems * dtype_bytes(t.dtype) for t in pool.tiles] or [1])
    if pool.space == "psum":
        bank = lim.psum_bank_bytes
        return max(4, 1 << (b - 1).bit_length()) if b <= bank else -(-b // bank) * bank
    return -(-b // 64) * 64


def _color(tiles, count):
    """Slots for tiles whose [first, last] op ranges may not share a buffer when they
    overlap: each tile takes the buffer that has been free the longest (so a new tile
    can be written while the previous ones are still read). None if `count` is short."""
    free = [(-1, i) for i in range(count)]  # (op id of the last use, slot)
    busy = []  # (last use, slot)
    for t in sorted(tiles, key=lambda t: t.first):
        busy.sort()
        while busy and busy[0][0] < t.first:
            free.append(busy.pop(0))
        if not free:
            return None
        free.sort()
        last, slot = free.pop(0)
        t.slot = slot
        busy.append((t.last, slot))
    return True


def assign_auto_buffers(trace):
    """Buffers of the automatic pools: as many as the pool's tiles ever have live at
    once, plus one (so the next tile of a loop can be loaded while the last is in use)
    when the memory's peak use allows it; slots given by interval colouring."""
    lim = trace.limits
    plans = []
    for p in trace.pools:
        if not p.auto:
            continue
        used = [t for t in p.tiles if t.touched]
        for t in p.tiles:
            t.slot = 0
        if not used:
            p.bufs = 1
            continue
        events = sorted([(t.first, 1) for t in used] + [(t.last + 1, -1) for t in used])
        live = peak = 0
        for _, d in events:
            live += d
            peak = max(peak, live)
        p.bufs = peak + (1 if len(used) > peak else 0)
        plans.append((p, used, peak))
    # Drop the extra buffer of the largest pools while the peak of live memory (pools
    # live from their first to their last use) exceeds a partition's bytes.
    for space, cap in (("sbuf", lim.sbuf_bytes), ("psum", lim.psum_bytes)):
        pools = [p for p in trace.pools if p.space == space and p.tiles]
        while True:
            events = []
            for p in pools:
                used = [t for t in p.tiles if t.touched]
                if used:
                    size = p.bufs * _buffer_bytes(p, lim)
                    events += [(min(t.first for t in used), size),
                               (max(t.last for t in used) + 1, -size)]
            live = peak = 0
            for _, d in sorted(events, key=lambda e: (e[0], e[1])):
                live += d
                peak = max(peak, live)
            extra = [(p, peak_p) for p, _, peak_p in plans
                     if p.space == space and p.bufs > peak_p]
            if peak <= cap or not extra:
                break
            p, peak_p = max(extra, key=lambda e: _buffer_bytes(e[0], lim))
            p.bufs = peak_p
    for p, used, _ in plans:
        _color(used, p.bufs)


def to_text(trace):
    assign_auto_buffers(trace)
    lines = [f"kernel {trace.name}"]
    for t in trace.tensors:
        lines.append(f"tensor {t.name} [{','.join(map(str, t.shape))}] {t.dtype} {t.role}")
    for p in trace.pools:
        lines.append(f"pool {p.name} {p.space} bufs={p.bufs}")
    for t in trace.tiles:
        lines.append(f"tile {t.name} {t.pool.name} [{','.join(map(str, t.shape))}] {t.dtype} "
                     f"slot={t.slot}")
    lines += [op.text() for op in trace.ops]
    return "\n".join(lines) + "\n"
