"""Fused row softmax: y = exp(x - max(x)) / sum(exp(x - max(x))) along the last axis.

Rows go on the partitions, one tile of up to 128 rows at a time: a max reduction
(vector), one activation computing exp(x - max) with its row sums on the fly
(scalar engine, accum_out), and one multiply by the reciprocal of the sums; two
buffers per pool so the next tile loads while this one computes.
"""

import trnsim.kernels as tk


@tk.kernel
def softmax(x):
    rows, cols = x.shape
    p = tk.limits().partitions
    y = tk.output([rows, cols], x.dtype, name="y")
    io, work, small = tk.pool(2, name="io"), tk.pool(2, name="work"), tk.pool(8, name="small")
    for r0 in tk.range(0, rows, p):
        n = min(p, rows - r0)
        xt = tk.load(x[r0:r0 + n, :], dtype=tk.fp32, pool=io)
        neg_max = tk.reduce_max(xt, axis=1, pool=small)            # [n, 1]
        tk.mul(neg_max, -1.0, out=neg_max)
        sums = small.tile([n, 1], tk.fp32)
        e = tk.exp(xt, bias=neg_max, accum_out=sums, pool=work)    # exp(x - max), row sums
        inv = tk.reciprocal(sums, pool=small)
        tk.store(y[r0:r0 + n, :], tk.mul(e, inv, dtype=y.dtype, pool=io))
    return y
