"""A matmul result[M,N] = lhsT[K,M]^T @ rhs[K,N], in four steps of optimisation.

The tensor engine contracts over the partitions: one matmul multiplies a [K<=128,
M<=128] stationary tile (the left operand, transposed) by a [K, N<=512] moving tile
into an fp32 PSUM tile of one bank, and accumulates over K tiles in PSUM. Tile
sizes come from the platform's limits (tk.limits()), not from constants here.

  matmul_tiled        per output tile, load the K tiles of both operands and
                      accumulate; every operand tile is loaded once per use
  matmul_hoisted      the lhsT column of an M tile is loaded once per M tile
  matmul_block_free   blocks of M and N tiles share their loads
  matmul_blocked      blocks of M, N and K tiles; partial sums over a K block are
                      added into SBUF result tiles, loads double-buffered
"""

import trnsim.kernels as tk


def _sizes(lhsT, rhs, bm=1, bn=1, bk=1):
    """(P, TM, TN): contraction tile, M tile and N tile sizes of the platform."""
    lim = tk.limits()
    (k, m), (k2, n) = lhsT.shape, rhs.shape
    if k != k2:
        raise ValueError(f"lhsT is [K={k}, M] but rhs is [K={k2}, N]")
    p, tm = lim.partitions, min(lim.partitions, lim.psum_partitions)
    tn = min(lim.matmul_max_n, lim.psum_free("fp32"))
    for what, size, t in (("K", k, p * bk), ("M", m, tm * bm), ("N", n, tn * bn)):
        if size % t:
            raise ValueError(f"{what}={size} is not a multiple of {t} (tile x block)")
    return p, tm, tn


@tk.kernel
def matmul_tiled(lhsT, rhs, bufs=2):
    p, tm, tn = _sizes(lhsT, rhs)
    (kk, m), n = lhsT.shape, rhs.shape[1]
    result = tk.output([m, n], lhsT.dtype, name="result")
    a_pool, b_pool = tk.pool(bufs, name="a"), tk.pool(bufs, name="b")
    ps_pool, o_pool = tk.pool(2, "psum", name="ps"), tk.pool(2, name="o")
    for mi in tk.range(m // tm):
        for ni in tk.range(n // tn):
            ps = ps_pool.tile([tm, tn], tk.fp32)
            for ki in tk.range(kk // p):
                a = tk.load(lhsT[ki * p:(ki + 1) * p, mi * tm:(mi + 1) * tm], pool=a_pool)
                b = tk.load(rhs[ki * p:(ki + 1) * p, ni * tn:(ni + 1) * tn], pool=b_pool)
                tk.matmul(a, b, out=ps, accumulate=ki > 0)
            o = tk.copy(ps, dtype=result.dtype, pool=o_pool)
            tk.store(result[mi * tm:(mi + 1) * tm, ni * tn:(ni + 1) * tn], o)
    return result


@tk.kernel
def matmul_hoisted(lhsT, rhs, a_bufs=2, b_bufs=2):
    p, tm, tn = _sizes(lhsT, rhs)
    (kk, m), n = lhsT.shape, rhs.shape[1]
    kt = kk // p
    result = tk.output([m, n], lhsT.dtype, name="result")
    a_pool, b_pool = tk.pool(kt * a_bufs, name="a"), tk.pool(kt * b_bufs, name="b")
    ps_pool, o_pool = tk.pool(2, "psum", name="ps"), tk.pool(2, name="o")
    for mi in tk.range(m // tm):
        a = [tk.load(lhsT[ki * p:(ki + 1) * p, mi * tm:(mi + 1) * tm], pool=a_pool)
             for ki in range(kt)]
        for ni in tk.range(n // tn):
            b = [tk.load(rhs[ki * p:(ki + 1) * p, ni * tn:(ni + 1) * tn], pool=b_pool)
                 for ki in range(kt)]
            ps = ps_pool.tile([tm, tn], tk.fp32)
            for ki in range(kt):
                tk.matmul(a[ki], b[ki], out=ps, accumulate=ki > 0)
            o = tk.copy(ps, dtype=result.dtype, pool=o_pool)
            tk.store(result[mi * tm:(mi + 1) * tm, ni * tn:(ni + 1) * tn], o)
    return result


@tk.kernel
def matmul_block_free(lhsT, rhs, bm=2, bn=2, bufs=1):
    p, tm, tn = _sizes(lhsT, rhs, bm, bn)
    (kk, m), n = lhsT.shape, rhs.shape[1]
    kt = kk // p
    result = tk.output([m, n], lhsT.dtype, name="result")
    a_pool, b_pool = tk.pool(bm * kt * bufs, name="a"), tk.pool(bn * kt * bufs, name="b")
    ps_pool, o_pool = tk.pool(2, "psum", name="ps"), tk.pool(2, name="o")
    for mb in tk.range(m // (tm * bm)):
        rows = [(mb * bm + i) * tm for i in range(bm)]
        a = [[tk.load(lhsT[ki * p:(ki + 1) * p, r:r + tm], pool=a_pool) for ki in range(kt)]
             for r in rows]
        for nb in tk.range(n // (tn * bn)):
            cols = [(nb * bn + j) * tn for j in range(bn)]
            b = [[tk.load(rhs[ki * p:(ki + 1) * p, c:c + tn], pool=b_pool) for ki in range(kt)]
                 for c in cols]
            for i, r in enumerate(rows):
                for j, c in enumerate(cols):
                    ps = ps_pool.tile([tm, tn], tk.fp32)
                    for ki in range(kt):
                        tk.matmul(a[i][ki], b[j][ki], out=ps, accumulate=ki > 0)
                    tk.store(result[r:r + tm, c:c + tn],
                             tk.copy(ps, dtype=result.dtype, pool=o_pool))
    return result


@tk.kernel
def matmul_blocked(lhsT, rhs, bm=16, bn=2, bk=16, bufs=1):
    """Per N block (bn N tiles), the result rows of all M tiles stay in SBUF. Per K
    block (bk K tiles) the rhs rows of the N block are loaded once ([P, bn*TN] per K
    tile), per M block the lhsT rows ([P, bm*TM] per K tile); each (N tile, M tile)
    pair accumulates its bk matmuls in PSUM and adds them to its SBUF result tile.
    Then each M tile's bn result tiles leave as one [TM, bn*TN] store.
    Defaults: the vendor tutorial blocks K by 8 with two buffer sets (bk=8, bufs=2);
    one set of 16 K tiles moves twice the bytes per load and still overlaps, since
    each tile's buffer is reloaded for the next M block as soon as its last matmul
    is done (trn1, [4096,8192]@[8192,8192]: 6.48 ms against 7.07 ms)."""
    p, tm, tn = _sizes(lhsT, rhs, bm, bn, bk)
    (kk, m), n = lhsT.shape, rhs.shape[1]
    nbm, nbn, nbk = m // (tm * bm), n // (tn * bn), kk // (p * bk)
    result = tk.output([m, n], lhsT.dtype, name="result")
    # The result tiles of one N block: [TM, bn*TN] per M tile, nbm*bm of them.
    r_pool = tk.pool(nbm * bm, name="r")
    a_pool, b_pool = tk.pool(bk * bufs, name="a"), tk.pool(bk * bufs, name="b")
    ps_pool = tk.pool(2, "psum", name="ps")
    for nb in tk.range(nbn):
        n0 = nb * bn * tn
        res = [r_pool.tile([tm, bn * tn], result.dtype) for _ in range(nbm * bm)]
        for r in res:
            tk.memset(r, 0.0)
        for kb in tk.range(nbk):
            k0 = kb * bk * p
            b = [tk.load(rhs[k0 + x * p:k0 + (x + 1) * p, n0:n0 + bn * tn], pool=b_pool)
                 for x in range(bk)]
            for mb in tk.range(nbm):
                m0 = mb * bm * tm
                a = [tk.load(lhsT[k0 + x * p:k0 + (x + 1) * p, m0:m0 + bm * tm], pool=a_pool)
                     for x in range(bk)]
                for j in range(bn):
                    for i in range(bm):
                        ps = ps_pool.tile([tm, tn], tk.fp32)
                        for x in range(bk):
                            tk.matmul(a[x][:, i * tm:(i + 1) * tm], b[x][:, j * tn:(j + 1) * tn],
                                      out=ps, accumulate=x > 0)
                        r = res[mb * bm + i][:, j * tn:(j + 1) * tn]
                        tk.add(ps, r, out=r, engine="vector")
        for mi in range(nbm * bm):
            tk.store(result[mi * tm:(mi + 1) * tm, n0:n0 + bn * tn], res[mi])
    return result


VARIANTS = {"tiled": matmul_tiled, "hoisted": matmul_hoisted,
            "block_free": matmul_block_free, "blocked": matmul_blocked}
