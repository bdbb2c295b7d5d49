"""Single-head attention: out = softmax(q k^T / sqrt(d) [+ causal mask]) v.

q, k: [S, D], v: [S, Dv], with D <= 128 and S a multiple of 128 up to one PSUM bank
of fp32 scores per row (512 on trn1/trn2). The tensor engine contracts over the
partitions, so q and k are loaded row-major and transposed on the tensor engine
(q^T, k^T: [D, S]); per 128-query block the scores [128, S] come from one matmul,
the causal mask from affine_select (query index - key index >= 0), the softmax as in
softmax.py, and P @ V accumulates over 128-key blocks in PSUM, each block of P
transposed so the keys lie on the partitions.
"""

import math

import trnsim.kernels as tk


@tk.kernel
def attention(q, k, v, causal=True):
    s, d = q.shape
    dv = v.shape[1]
    lim = tk.limits()
    p = lim.partitions
    if s % p or s > min(lim.matmul_max_n, lim.psum_free("fp32")) or d > p:
        raise ValueError(f"attention needs S a multiple of {p} up to "
                         f"{min(lim.matmul_max_n, lim.psum_free('fp32'))} and D <= {p}; "
                         f"got S={s}, D={d}")
    nb = s // p
    out = tk.output([s, dv], q.dtype, name="out")
    # PSUM: transposes, scores and P @ V accumulators each rotate their own buffers.
    ps_t, ps_s, ps_o = (tk.pool(2, "psum", name=n) for n in ("ps_t", "ps_s", "ps_o"))

    def transposed(x, name):
        """[S, D] in HBM -> [D, S] in SBUF, 128 rows at a time on the tensor engine."""
        t = tk.tile([d, s], x.dtype, name=name)
        for j in range(nb):
            rows = tk.load(x[j * p:(j + 1) * p, :])
            tk.copy(tk.transpose(rows, pool=ps_t), out=t[:, j * p:(j + 1) * p])
        return t

    qT, kT = transposed(q, "qT"), transposed(k, "kT")
    vt = [tk.load(v[j * p:(j + 1) * p, :], name="v") for j in range(nb)]
    work, small = tk.pool(2, name="work"), tk.pool(6, name="small")
    et_pool = tk.pool(2, name="eT")  # apart from `work`: e stays live across the j loop
    for i in tk.range(nb):
        x = tk.copy(tk.matmul(qT[:, i * p:(i + 1) * p], kT, pool=ps_s), dtype=tk.fp32,
                    pool=work)                                    # scores [128, S]
        if causal:  # keep key j <= query i*128 + partition
            x = tk.affine_select(x, "ge", fill=-math.inf, base=i * p, pstep=1, steps=[-1],
                                 pool=work)
        neg_max = tk.reduce_max(x, pool=small)
        tk.mul(neg_max, -1.0 / math.sqrt(d), out=neg_max)
        sums = small.tile([p, 1], tk.fp32)
        e = tk.exp(x, scale=1.0 / math.sqrt(d), bias=neg_max, accum_out=sums, dtype=q.dtype,
                   pool=work)
        acc = ps_o.tile([p, dv], tk.fp32)
        for j in range(nb):
            eT = tk.copy(tk.transpose(e[:, j * p:(j + 1) * p], pool=ps_t), pool=et_pool)
            tk.matmul(eT, vt[j], out=acc, accumulate=j > 0)
        inv = tk.reciprocal(sums, pool=small)
        tk.store(out[i * p:(i + 1) * p, :], tk.mul(acc, inv, dtype=out.dtype, pool=work))
    return out
