"""numpy references for the collective suites, written from the algorithms'
descriptions: bf16 rounding and a ring's all-reduce (the order a ring carries each
chunk, every addition in fp32 rounded to the dtype). Import after numpy is known to be
installed (skip_unless.require).
"""
import numpy as np


def bf16(x):
    """Round float32 values to bf16 (nearest, ties to even), kept as float32."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def rounder(dtype):
    return bf16 if dtype == "bf16" else (lambda a: np.asarray(a, dtype=np.float32))


def blocks(count, n):
    """The n chunks [lo, hi) a buffer of `count` elements is cut into: equal, the first
    count mod n one longer."""
    base, extra = divmod(count, n)
    starts = [b * base + min(b, extra) for b in range(n + 1)]
    return [(starts[b], starts[b + 1]) for b in range(n)]


def ring_sum(vals, owner, direction, rnd):
    """A ring's reduction of the chunk `owner` ends with: start at the member after
    the owner (in `direction`), add each member in turn, the owner last."""
    n = len(vals)
    acc = vals[(owner + direction) % n]
    for k in range(2, n + 1):
        acc = rnd(acc + vals[(owner + k * direction) % n])
    return acc


def ring_all_reduce(x, rnd):
    """One ring over the ranks in order (rank order is ring order: the ranks of one
    chip, or tiny's chips). x: [ranks, count] float32."""
    n, count = x.shape
    out = np.empty(count, dtype=np.float32)
    for c, (lo, hi) in enumerate(blocks(count, n)):
        out[lo:hi] = ring_sum([x[q, lo:hi] for q in range(n)], c, 1, rnd)
    return out
