"""Layer norm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta.

Rows on the partitions. gamma and beta ([D]) are loaded once, broadcast to every
partition by the DMA (a view with partition stride 0). Per row tile, bn_stats over
chunks of at most the engine's bn_stats limit and bn_aggr give the mean and the
variance; one tensor_scalar computes (x - mean) * rstd, two tensor_tensor ops apply
gamma and beta.
"""

import trnsim.kernels as tk


@tk.kernel
def layernorm(x, gamma, beta, eps=1e-5):
    rows, d = x.shape
    lim = tk.limits()
    p = lim.partitions
    y = tk.output([rows, d], x.dtype, name="y")
    g = tk.load(gamma[None, :].broadcast_to([p, d]), dtype=tk.fp32, name="gamma")
    b = tk.load(beta[None, :].broadcast_to([p, d]), dtype=tk.fp32, name="beta")
    chunk = min(d, lim.bn_stats_max_free)
    nchunks = (d + chunk - 1) // chunk
    xin, work, small = tk.pool(2, name="xin"), tk.pool(2, name="work"), tk.pool(4, name="small")
    for r0 in tk.range(0, rows, p):
        n = min(p, rows - r0)
        xt = tk.load(x[r0:r0 + n, :], dtype=tk.fp32, pool=xin)
        stats = small.tile([n, 3 * nchunks], tk.fp32)
        for c in range(nchunks):
            tk.bn_stats(xt[:, c * chunk:min(d, (c + 1) * chunk)], out=stats[:, 3 * c:3 * c + 3])
        mv = tk.bn_aggr(stats, pool=small)                      # [n, 2]: mean, variance
        rstd = tk.tensor_scalar(mv[:, 1:2], "add", eps, "pow", -0.5, pool=small)
        xn = tk.tensor_scalar(xt, "sub", mv[:, 0:1], "mul", rstd, pool=work)
        tk.mul(xn, g[:n, :], out=xn)
        yt = tk.add(xn, b[:n, :], dtype=y.dtype, pool=work)
        tk.store(y[r0:r0 + n, :], yt)
    return y
