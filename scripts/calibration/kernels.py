"""Kernels of the calibration suite, written in trnsim's tile IR (.tir, the text form
of compiler/tile/ir.h) from the loop nests the vendor published. Each function
returns the kernel text; `trnsim run KERNEL.tir` compiles it with the same back-end
passes as a compiled model (DMA splitting, engine and queue assignment, allocation,
scheduling, sync insertion) and simulates it.

The loops are unrolled here. Tiles that the published kernel allocates inside a loop
get a pool with `bufs` rotating buffers: 2 (double buffering) where both copies fit
the SBUF, else 1; the suite says which in its assumptions column.
"""

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


class Tir:
    """A tile-IR kernel being written: tensors, pools, tiles and ops in order."""

    def __init__(self, name):
        self.lines = [f"kernel {name}"]
        self.ops = []
        self.tiles = {}  # name -> (shape, dtype)
        self.slots = {}  # pool -> next slot
        self.pools = {}  # pool -> bufs
        self.tensors = {}  # name -> (shape, dtype)

    def tensor(self, name, shape, dtype, role):
        self.tensors[name] = (shape, dtype)
        self.lines.append(f"tensor {name} [{','.join(map(str, shape))}] {dtype} {role}")

    def pool(self, name, space, bufs):
        self.pools[name] = bufs
        self.slots[name] = 0
        self.lines.append(f"pool {name} {space} bufs={bufs}")

    def tile(self, pool, shape, dtype):
        """A new tile in the pool's next buffer (rotating)."""
        slot = self.slots[pool]
        self.slots[pool] = (slot + 1) % self.pools[pool]
        name = f"{pool}_{len(self.tiles)}"
        self.tiles[name] = (shape, dtype)
        self.lines.append(f"tile {name} {pool} [{','.join(map(str, shape))}] {dtype} slot={slot}")
        return name

    def op(self, engine, text):
        self.ops.append(f"%{len(self.ops)} {engine} {text}")

    def text(self):
        return "\n".join(self.lines + self.ops) + "\n"

    # Operand patterns: a tile region [p0:p1, free elements f0 .. f0 + n), and a
    # 2-D block of an HBM matrix.
    def t(self, tile, n=None, f0=0, p=None, dtype=None):
        shape, dt = self.tiles[tile]
        dt = dtype or dt
        space = "psum" if tile.startswith("ps") else "sbuf"
        n = shape[1] if n is None else n
        p0, p1 = p or (0, shape[0])
        return f"{tile}:{space}[{p0}:{p1}, {f0 * DTYPE_BYTES[dt]}, {dt}, [1,{n}]]"

    def h(self, tensor, r0, rows, c0, cols):
        shape, dt = self.tensors[tensor]
        off = (r0 * shape[1] + c0) * DTYPE_BYTES[dt]
        return f"{tensor}:hbm[{rows}x{shape[1]}, {off}, {dt}, [1,{cols}]]"

    # A transfer of a [P, F] tile is spread over the DMA engines by partition, 8
    # partitions per engine (P / 8 engines, at least one), all on one queue number, as
    # docs/hardware.md: DMA describes the hardware doing: pinned (`dma.E.Q!`) so the
    # compiler's own DMA splitting and placement do not change the published mapping.
    def _spread(self, shape, queue, emit):
        engines = max(1, min(16, shape[0] // 8))
        rows = shape[0] // engines
        for e in range(engines):
            emit(e * rows, rows, f"dma.{e}.{queue}!")

    def load(self, tile, tensor, r0, c0, queue=0):
        shape, dt = self.tiles[tile]
        self._spread(shape, queue, lambda p0, n, eng: self.op(
            eng, f"dma_copy dst={self.t(tile, p=(p0, p0 + n))} "
            f"src={self.h(tensor, r0 + p0, n, c0, shape[1])}"))

    def store(self, tensor, r0, c0, tile, queue=2):
        shape, dt = self.tiles[tile]
        self._spread(shape, queue, lambda p0, n, eng: self.op(
            eng, f"dma_copy dst={self.h(tensor, r0 + p0, n, c0, shape[1])} "
            f"src={self.t(tile, p=(p0, p0 + n))}"))

    def matmul(self, ps, a, b, accumulate, a_f0=0, b_f0=0, m=128, n=512):
        self.op("tensor", f"matmul dst={self.t(ps, n)} stationary={self.t(a, m, a_f0)} "
                f"moving={self.t(b, n, b_f0)} accumulate={int(accumulate)}")


def _io(k, m, kk, n, dtype, out_dtype):
    k.tensor("lhsT", [kk, m], dtype, "input")
    k.tensor("rhs", [kk, n], dtype, "input")
    k.tensor("result", [m, n], out_dtype, "output")


def matmul_tiled(m, kk, n, dtype, out_dtype, bufs=2):
    """V0 "tiled": for m, n: psum = sum over k of lhsT[k, m]^T @ rhs[k, n] (a
    128x128 and a 128x512 load per k); evacuate the [128, 512] PSUM tile to SBUF
    (cast) and store it."""
    k = Tir("matmul_tiled")
    _io(k, m, kk, n, dtype, out_dtype)
    k.pool("a", "sbuf", bufs)
    k.pool("b", "sbuf", bufs)
    k.pool("ps", "psum", 2)
    k.pool("o", "sbuf", 2)
    for mi in range(m // 128):
        for ni in range(n // 512):
            ps = k.tile("ps", [128, 512], "fp32")
            for ki in range(kk // 128):
                a = k.tile("a", [128, 128], dtype)
                b = k.tile("b", [128, 512], dtype)
                k.load(a, "lhsT", ki * 128, mi * 128, queue=0)
                k.load(b, "rhs", ki * 128, ni * 512, queue=1)
                k.matmul(ps, a, b, ki > 0)
            o = k.tile("o", [128, 512], out_dtype)
            k.op("auto", f"tensor_copy dst={k.t(o)} src={k.t(ps)}")
            k.store("result", mi * 128, ni * 512, o)
    return k.text()


def matmul_hoisted(m, kk, n, dtype, out_dtype, a_bufs=2, b_bufs=2):
    """V1 "hoisted loads": per m, load the whole K column of lhsT (K/128 tiles of
    128x128); per (m, n), load K/128 rhs tiles of 128x512, then K/128 matmuls."""
    k = Tir("matmul_hoisted")
    _io(k, m, kk, n, dtype, out_dtype)
    kt = kk // 128
    k.pool("a", "sbuf", kt * a_bufs)
    k.pool("b", "sbuf", kt * b_bufs)
    k.pool("ps", "psum", 2)
    k.pool("o", "sbuf", 2)
    for mi in range(m // 128):
        a = [k.tile("a", [128, 128], dtype) for _ in range(kt)]
        for ki in range(kt):
            k.load(a[ki], "lhsT", ki * 128, mi * 128, queue=0)
        for ni in range(n // 512):
            b = [k.tile("b", [128, 512], dtype) for _ in range(kt)]
            for ki in range(kt):
                k.load(b[ki], "rhs", ki * 128, ni * 512, queue=1)
            ps = k.tile("ps", [128, 512], "fp32")
            for ki in range(kt):
                k.matmul(ps, a[ki], b[ki], ki > 0)
            o = k.tile("o", [128, 512], out_dtype)
            k.op("auto", f"tensor_copy dst={k.t(o)} src={k.t(ps)}")
            k.store("result", mi * 128, ni * 512, o)
    return k.text()


def matmul_block_free(m, kk, n, dtype, out_dtype, bm=2, bn=2, a_bufs=1, b_bufs=1):
    """V2 "blocked free dimensions": per block of bm M-tiles, load their lhsT
    columns; per block of bn N-tiles, load their rhs tiles; then every (M-tile,
    N-tile) pair of the block accumulates over K, is evacuated and stored."""
    k = Tir("matmul_block_free")
    _io(k, m, kk, n, dtype, out_dtype)
    kt = kk // 128
    k.pool("a", "sbuf", bm * kt * a_bufs)
    k.pool("b", "sbuf", bn * kt * b_bufs)
    k.pool("ps", "psum", 2)
    k.pool("o", "sbuf", 2)
    for mb in range(m // (128 * bm)):
        a = [[k.tile("a", [128, 128], dtype) for _ in range(kt)] for _ in range(bm)]
        for i in range(bm):
            for ki in range(kt):
                k.load(a[i][ki], "lhsT", ki * 128, (mb * bm + i) * 128, queue=0)
        for nb in range(n // (512 * bn)):
            b = [[k.tile("b", [128, 512], dtype) for _ in range(kt)] for _ in range(bn)]
            for j in range(bn):
                for ki in range(kt):
                    k.load(b[j][ki], "rhs", ki * 128, (nb * bn + j) * 512, queue=1)
            for i in range(bm):
                for j in range(bn):
                    ps = k.tile("ps", [128, 512], "fp32")
                    for ki in range(kt):
                        k.matmul(ps, a[i][ki], b[j][ki], ki > 0)
                    o = k.tile("o", [128, 512], out_dtype)
                    k.op("auto", f"tensor_copy dst={k.t(o)} src={k.t(ps)}")
                    k.store("result", (mb * bm + i) * 128, (nb * bn + j) * 512, o)
    return k.text()


def matmul_fully_optimized(m, kk, n, dtype, out_dtype, bm=16, bn=2, bk=8, bufs=2, pack=True):
    """V3 "fully optimized": blocks of bm M-tiles, bn N-tiles and bk K-tiles. Per
    N block, the result tiles of every M-tile live in SBUF (zeroed); per K block
    (sequential), load bk rhs rows of the N block (128 x 512bn each); per M block,
    load bk lhsT rows (128 x 128bm each), and for each (N-tile, M-tile) accumulate
    the bk matmuls in PSUM and add the PSUM tile to the SBUF result tile. After the
    K blocks, each M-tile's bn result tiles are packed into one [128, 512bn] tile
    and stored with one DMA (`pack`; else each is stored as it is)."""
    k = Tir("matmul_fully_optimized")
    _io(k, m, kk, n, dtype, out_dtype)
    nbm, nbn, nbk = m // (128 * bm), n // (512 * bn), kk // (128 * bk)
    k.pool("r", "sbuf", nbm * bm * bn)  # the result tiles of one N block
    k.pool("b", "sbuf", bk * bufs)
    k.pool("a", "sbuf", bk * bufs)
    k.pool("ps", "psum", 2)
    if pack:
        k.pool("o", "sbuf", 2)
    for nb in range(nbn):
        res = [[[k.tile("r", [128, 512], out_dtype) for _ in range(bn)] for _ in range(bm)]
               for _ in range(nbm)]
        for mb in range(nbm):
            for i in range(bm):
                for j in range(bn):
                    k.op("auto", f"memset dst={k.t(res[mb][i][j])} value=0")
        for kb in range(nbk):
            b = [k.tile("b", [128, 512 * bn], dtype) for _ in range(bk)]
            for x in range(bk):
                k.load(b[x], "rhs", (kb * bk + x) * 128, nb * 512 * bn, queue=1)
            for mb in range(nbm):
                a = [k.tile("a", [128, 128 * bm], dtype) for _ in range(bk)]
                for x in range(bk):
                    k.load(a[x], "lhsT", (kb * bk + x) * 128, mb * 128 * bm, queue=0)
                for j in range(bn):
                    for i in range(bm):
                        ps = k.tile("ps", [128, 512], "fp32")
                        for x in range(bk):
                            k.matmul(ps, a[x], b[x], x > 0, a_f0=i * 128, b_f0=j * 512)
                        r = res[mb][i][j]
                        k.op("vector", f"tensor_tensor dst={k.t(r)} in0={k.t(ps)} in1={k.t(r)} op=add")
        for mb in range(nbm):
            for i in range(bm):
                if not pack:  # each [128, 512] result tile stored as it is
                    for j in range(bn):
                        k.store("result", (mb * bm + i) * 128, (nb * bn + j) * 512, res[mb][i][j])
                    continue
                o = k.tile("o", [128, 512 * bn], out_dtype)
                for j in range(bn):
                    k.op("auto", f"tensor_copy dst={k.t(o, 512, j * 512)} src={k.t(res[mb][i][j])}")
                k.store("result", (mb * bm + i) * 128, nb * 512 * bn, o)
    return k.text()


def dma_load(rows, cols, dtype):
    """One HBM -> SBUF load of a [rows, cols] tile (the DMA measurements)."""
    k = Tir("dma_load")
    k.tensor("x", [rows, cols], dtype, "input")
    k.tensor("y", [rows, 1], dtype, "output")
    k.pool("s", "sbuf", 1)
    k.pool("y", "sbuf", 1)
    t = k.tile("s", [rows, cols], dtype)
    k.load(t, "x", 0, 0)
    # A one-element-per-partition store keeps the load live (the kernel needs an
    # output); the measurement is the load's own transfer time.
    y = k.tile("y", [rows, 1], dtype)
    k.op("auto", f"tensor_copy dst={k.t(y)} src={k.t(t, 1)}")
    k.store("y", 0, 0, y)
    return k.text()
