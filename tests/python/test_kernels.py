"""Tests of trnsim.kernels, the Python tile language (runtime/python/trnsim/kernels).

Simulate: the example kernels (examples/kernels) computed on the host with numpy
    against numpy references written from the math (fp32 tight, bf16 3e-2), and
    reads of never-written memory showing up as NaN.
Benchmark: the same kernels compiled and simulated by `trnsim run KERNEL.tir` with
    races and poisoned reads checked, against the same references; the report's
    figures.
Errors: every trace-time error names the kernel's file and the line of the call
    that is wrong (marked `# ERR:<tag>` below).
Exit 77 (skipped) when numpy or the binary are missing.
"""

import os
import sys
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
require(("numpy",), BIN)
os.environ.setdefault("TRNSIM_BIN", BIN)

import numpy as np  # noqa: E402

sys.path.insert(0, str(REPO / "runtime" / "python"))
sys.path.insert(0, str(REPO))
import trnsim.kernels as tk  # noqa: E402
from trnsim import TrnsimError  # noqa: E402
from examples.kernels import attention, layernorm, matmul, softmax  # noqa: E402

CONFIG = "trn1"
TOL = {"fp32": 1e-5, "bf16": 3e-2}


def bf16(x):
    """float32 rounded to bf16 (nearest even), as float32: numpy from the format."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want).max() / np.abs(want).max()


def ref_matmul(a, b):
    return a.astype(np.float64).T @ b.astype(np.float64)


def ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_layernorm(x, g, b, eps=1e-5):
    x = x.astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def ref_attention(q, k, v, causal):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape)) > 0, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v


def cases():
    """(label, kernel, args, kwargs, reference, dtype) at small shapes."""
    rng = np.random.default_rng(7)
    out = []
    a = rng.standard_normal((512, 256)).astype(np.float32)   # lhsT [K, M]
    b = rng.standard_normal((512, 1024)).astype(np.float32)  # rhs [K, N]
    for dtype in ("fp32", "bf16"):
        aa, bb = (a, b) if dtype == "fp32" else (bf16(a), bf16(b))
        for name, k in matmul.VARIANTS.items():
            kw = {"bm": 2, "bn": 2, "bk": 2} if name == "blocked" else {}
            out.append((f"matmul_{name}", k, (tk.spec(a, dtype), tk.spec(b, dtype)), kw,
                        ref_matmul(aa, bb), dtype))
    x = (3 * rng.standard_normal((200, 384))).astype(np.float32)  # 200 rows: a partial tile
    out.append(("softmax", softmax.softmax, (x,), {}, ref_softmax(x), "fp32"))
    out.append(("softmax", softmax.softmax, (tk.spec(x, "bf16"),), {}, ref_softmax(bf16(x)),
                "bf16"))
    x = rng.standard_normal((160, 1000)).astype(np.float32)  # 1000 > one bn_stats (512)
    g = rng.standard_normal(1000).astype(np.float32)
    be = rng.standard_normal(1000).astype(np.float32)
    out.append(("layernorm", layernorm.layernorm, (x, g, be), {}, ref_layernorm(x, g, be),
                "fp32"))
    out.append(("layernorm", layernorm.layernorm,
                (tk.spec(x, "bf16"), tk.spec(g, "bf16"), tk.spec(be, "bf16")), {},
                ref_layernorm(bf16(x), bf16(g), bf16(be)), "bf16"))
    q, k, v = (rng.standard_normal((256, 64)).astype(np.float32) for _ in range(3))
    for causal in (True, False):
        out.append((f"attention causal={causal}", attention.attention, (q, k, v),
                    {"causal": causal}, ref_attention(q, k, v, causal), "fp32"))
    out.append(("attention causal=True", attention.attention,
                tuple(tk.spec(t, "bf16") for t in (q, k, v)), {"causal": True},
                ref_attention(bf16(q), bf16(k), bf16(v), True), "bf16"))
    # Four key blocks: e stays live across more transposes than a 2-buffer pool holds.
    q4, k4, v4 = (rng.standard_normal((512, 64)).astype(np.float32) for _ in range(3))
    out.append(("attention S=512", attention.attention, (q4, k4, v4), {"causal": True},
                ref_attention(q4, k4, v4, True), "fp32"))
    return out


class Simulate(unittest.TestCase):
    def test_examples_match_numpy(self):
        for label, k, args, kw, ref, dtype in cases():
            with self.subTest(kernel=label, dtype=dtype):
                got = k.simulate(*args, config=CONFIG, **kw)
                self.assertEqual(got.shape, ref.shape)
                self.assertLess(rel_err(got, ref), TOL[dtype])

    def test_unwritten_memory_reads_as_nan(self):
        @tk.kernel
        def half_loaded(x):
            out = tk.output(x.shape, x.dtype)
            t = tk.tile(x.shape, x.dtype)
            tk.load(x[:, :32], out=t[:, :32])  # columns 32.. never written
            tk.store(out, t)
            return out

        x = np.ones((128, 64), np.float32)
        y = half_loaded.simulate(x, config=CONFIG)
        self.assertTrue(np.all(y[:, :32] == 1))
        self.assertTrue(np.all(np.isnan(y[:, 32:])))

    def test_ops_against_numpy(self):
        # Element-wise, reductions, transpose, iota/affine_select/where, partition ops.
        @tk.kernel
        def many(x, col):
            p, f = x.shape
            o = tk.output([p, 8], tk.fp32, name="o")
            mask = tk.output([p, p], tk.fp32, name="mask")
            t = tk.transpose(tk.load(x[:, :p]))  # [128, 128] in PSUM
            xt, c = tk.load(x), tk.load(col)
            res = tk.zeros([p, 8])
            tk.reduce_sum(xt, out=res[:, 0:1])
            tk.reduce_max(xt, out=res[:, 1:2])
            tk.copy(tk.sigmoid(c, scale=2.0, bias=c), out=res[:, 2:3])
            tk.sub(1.0, c, out=res[:, 3:4])
            tk.reduce_min(tk.mul(xt, c), out=res[:, 4:5])
            tk.partition_reduce(c, "add", out=res[:, 5:6])
            idx = tk.iota([p, 1], pstep=1)
            tk.where(tk.greater(idx, 63.5), c, idx, out=res[:, 6:7])
            tk.copy(t[:, 0:1], out=res[:, 7:8])
            tk.store(o, res)
            m = tk.affine_select(tk.full([p, p], 1.0), "ge", fill=0.0, pstep=1, steps=[-1])
            tk.store(mask, m)
            return o, mask

        rng = np.random.default_rng(3)
        x = rng.standard_normal((128, 160)).astype(np.float32)
        col = rng.standard_normal((128, 1)).astype(np.float32)
        c = col[:, 0].astype(np.float64)
        want = np.stack([x.sum(1), x.max(1), 1 / (1 + np.exp(-(2 * c + c))), 1 - c,
                         (x * col).min(1), np.full(128, c.sum()),
                         np.where(np.arange(128) > 63.5, c, np.arange(128)), x[0, :128]], 1)
        for mode in ("simulate", "benchmark"):
            with self.subTest(mode=mode):
                if mode == "simulate":
                    o, mask = many.simulate(x, col, config=CONFIG)
                else:
                    (o, mask), _ = many.benchmark(x, col, config=CONFIG, checks=True)
                np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-4)
                np.testing.assert_array_equal(mask, np.tril(np.ones((128, 128))))


class Benchmark(unittest.TestCase):
    def test_examples_match_numpy(self):
        for label, k, args, kw, ref, dtype in cases():
            with self.subTest(kernel=label, dtype=dtype):
                got, rep = k.benchmark(*args, config=CONFIG, checks=True, **kw)
                self.assertEqual(got.shape, ref.shape)
                self.assertLess(rel_err(got, ref), TOL[dtype])
                self.assertGreater(rep.simulated_ns, 0)
                self.assertIn("dma", rep.engine_active_pct)

    def test_matmul_steps_get_faster(self):
        # Each optimisation step of the matmul is faster on the simulated trn1 than the
        # one before, and the fully blocked one keeps the tensor engine busiest.
        m, k, n = 1024, 2048, 2048
        ns, te = [], []
        for name, kern in matmul.VARIANTS.items():
            kw = {"bm": 8, "bn": 2, "bk": 4} if name == "blocked" else {}
            _, rep = kern.benchmark(tk.spec([k, m], "bf16"), tk.spec([k, n], "bf16"),
                                    config=CONFIG, functional=False, **kw)
            ns.append(rep.simulated_ns)
            te.append(rep.engine_active_pct["tensor"])
        self.assertEqual(ns, sorted(ns, reverse=True), list(zip(matmul.VARIANTS, ns)))
        self.assertEqual(len(set(ns)), len(ns))
        self.assertEqual(max(te), te[-1])

    def test_automatic_allocation(self):
        # Tiles allocated without a pool: per kernel line, as many buffers as are live
        # at once plus one when the memory allows (loop iterations overlap), else not.
        @tk.kernel
        def scale(x, bufs=0):
            out = tk.output(x.shape, x.dtype)
            pi = tk.pool(bufs, name="i") if bufs else None
            po = tk.pool(bufs, name="o") if bufs else None
            for r in range(0, x.shape[0], 128):
                t = tk.load(x[r:r + 128, :], pool=pi, name="xin")
                tk.store(out[r:r + 128, :], tk.mul(t, 2.0, pool=po, name="y"))
            return out

        x = np.arange(128 * 8 * 512, dtype=np.float32).reshape(128 * 8, 512)
        text = scale.tir(x, config=CONFIG)
        self.assertIn("pool xin sbuf bufs=2", text)
        self.assertIn("pool y sbuf bufs=2", text)
        y, auto = scale.benchmark(x, config=CONFIG, checks=True)
        np.testing.assert_array_equal(y, 2 * x)
        _, single = scale.benchmark(x, config=CONFIG, bufs=1)
        self.assertLess(auto.simulated_ns, single.simulated_ns)
        # Two buffers of these rows do not fit a partition: one, and still correct.
        cols = tk.config_limits(CONFIG).sbuf_bytes // 4 * 2 // 5  # 40 % of a partition
        x = np.ones((256, cols), np.float32)
        text = scale.tir(x, config=CONFIG)
        self.assertIn("pool xin sbuf bufs=1", text)
        np.testing.assert_array_equal(scale.benchmark(x, config=CONFIG, checks=True)[0], 2 * x)
        # Tiles of one line live together (a list): a buffer each.
        @tk.kernel
        def rows_sum(x):
            out = tk.output([128, x.shape[1]], x.dtype)
            parts = [tk.load(x[r:r + 128, :], name="part") for r in range(0, x.shape[0], 128)]
            acc = parts[0]
            for t in parts[1:]:
                acc = tk.add(acc, t, name="acc")
            tk.store(out, acc)
            return out

        x = np.random.default_rng(0).standard_normal((512, 64)).astype(np.float32)
        self.assertIn("pool part sbuf bufs=4", rows_sum.tir(x, config=CONFIG))
        got = rows_sum.benchmark(x, config=CONFIG, checks=True)[0]
        np.testing.assert_allclose(got, x.reshape(4, 128, 64).sum(0), rtol=1e-5, atol=1e-5)

    def test_report_and_files(self):
        rng = np.random.default_rng(1)
        a = rng.standard_normal((256, 128)).astype(np.float32)
        b = rng.standard_normal((256, 512)).astype(np.float32)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            y, rep = matmul.matmul_tiled.benchmark(a, b, config=CONFIG, workdir=d,
                                                   trace=os.path.join(d, "t.json"),
                                                   reference=ref_matmul(a, b))
            self.assertTrue((Path(d) / "matmul_tiled.tir").is_file())
            self.assertTrue((Path(d) / "t.json").is_file())
        self.assertLess(rep.errors["result"]["max_rel"], 1e-5)
        self.assertEqual(rep.engine_instructions["tensor"], 2)  # K/128 matmuls, one N tile
        self.assertGreater(rep.engine_active_pct["tensor"], 0)
        # Timing only: specs without data, no outputs.
        y, rep = matmul.matmul_tiled.benchmark(tk.spec([256, 128], "bf16"),
                                               tk.spec([256, 512], "bf16"), config=CONFIG,
                                               functional=False)
        self.assertIsNone(y)
        self.assertGreater(rep.simulated_ns, 0)

    def test_casts_agree_with_the_device(self):
        # Rounding to every dtype (nearest even, fp8e4m3 saturating, e5m2 to inf,
        # integers saturating): the host numerics against the simulated chip's.
        dtypes = ("bf16", "fp16", "fp8e4m3", "fp8e5m2", "int32", "uint8")

        @tk.kernel
        def casts(x):
            xt, outs = tk.load(x), []
            for dt in dtypes:
                o = tk.output(x.shape, tk.fp32, name="o_" + dt)
                tk.store(o, tk.copy(tk.copy(xt, dtype=dt), dtype=tk.fp32))
                outs.append(o)
            return tuple(outs)

        rng = np.random.default_rng(0)
        x = rng.standard_normal((128, 64)) * np.exp2(rng.integers(-30, 30, (128, 64)))
        x = x.astype(np.float32)
        x[0, :8] = [0.0, -0.0, 1e30, -1e30, 300.5, 255.5, -2.5, 3.5]
        host = casts.simulate(x, config=CONFIG)
        chip, _ = casts.benchmark(x, config=CONFIG)
        for dt, h, c in zip(dtypes, host, chip):
            with self.subTest(dtype=dt):
                np.testing.assert_array_equal(h, c)

    def test_ops_agree_with_the_device(self):
        # Every activation function and ALU op: host numerics against the chip's.
        from trnsim.kernels._ops import ACT_FUNCS, ALU_OPS

        @tk.kernel
        def ops(x, y):
            xt, yt, outs = tk.load(x), tk.load(y), []
            for f in ACT_FUNCS:
                o = tk.output(x.shape, tk.fp32, name="act_" + f)
                tk.store(o, tk.activation(f, xt, scale=0.5, bias=yt[:, 0:1]))
                outs.append(o)
            for op in ALU_OPS:
                o = tk.output(x.shape, tk.fp32, name="alu_" + op)
                tk.store(o, tk.tensor_tensor(xt, yt, op))
                outs.append(o)
            return tuple(outs)

        rng = np.random.default_rng(2)
        x = (4 * rng.standard_normal((128, 32))).astype(np.float32)
        y = rng.standard_normal((128, 32)).astype(np.float32)
        x[:, :4] = y[:, :4]  # equal operands for the comparisons
        host = ops.simulate(x, y, config=CONFIG)
        chip, _ = ops.benchmark(x, y, config=CONFIG)
        for name, h, c in zip(ACT_FUNCS + ALU_OPS, host, chip):
            with self.subTest(op=name):
                np.testing.assert_allclose(h, c, rtol=2e-6, atol=1e-6)

    def test_tir_runs_on_the_command_line(self):
        text = softmax.softmax.tir(tk.spec([64, 32], "fp32"), config=CONFIG)
        self.assertTrue(text.startswith("kernel softmax\n"))
        self.assertIn("tensor x [64,32] fp32 input", text)
        self.assertIn("# softmax.py:", text)  # each op says where it came from

    def test_compile_error_names_the_kernel_line(self):
        # Tiles that each fit but together exceed the SBUF: the compiler's refusal
        # comes back as a TrnsimError, with the kernel line of the op it names.
        @tk.kernel
        def too_big(x):
            out = tk.output(x.shape, x.dtype)
            lim = tk.limits()
            cols = lim.sbuf_bytes // 4 // 2 + 64
            a = tk.zeros([128, cols])
            b = tk.zeros([128, cols])
            tk.store(out, tk.add(a[:, :8], b[:, :8]))  # ERR:sbuf
            return out

        with self.assertRaises(TrnsimError) as e:
            too_big.benchmark(np.zeros((128, 8), np.float32), config=CONFIG)
        msg = str(e.exception)
        self.assertIn("bytes per partition of sbuf", msg)
        # The compiler names op %N; the message adds where the kernel made it.
        self.assertRegex(msg, rf"op %\d+ is {__file__}:{marked_line('sbuf')}")


def marked_line(tag):
    for i, line in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"# ERR:{tag}"):
            return i
    raise AssertionError(f"no line marked ERR:{tag}")


class Errors(unittest.TestCase):
    def check(self, tag, fn, *args, config=CONFIG, set=None, contains=()):
        with self.assertRaises(tk.KernelError) as e:
            fn.simulate(*args, config=config, set=set)
        err = e.exception
        self.assertEqual(Path(err.filename).resolve(), Path(__file__).resolve(), str(err))
        self.assertEqual(err.lineno, marked_line(tag), str(err))
        self.assertTrue(str(err).startswith(f"{err.filename}:{err.lineno}: error: "), str(err))
        for c in contains:
            self.assertIn(c, str(err))
        return err

    x = np.zeros((128, 512), np.float32)

    def test_partitions_over_the_limit(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            big = tk.tile([tk.limits().partitions + 1, 4], tk.fp32)  # ERR:partitions
            tk.store(out, big)
            return out

        self.check("partitions", k, self.x, contains=("129 partitions", "SBUF has 128",
                                                       "trn1"))

    def test_psum_tile_crossing_a_bank(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            a, b = tk.load(x[:, :128]), tk.load(x[:, :512])
            ps = tk.tile([128, 1024], tk.fp32, space="psum")
            tk.matmul(a, b, out=ps[:, 256:768])  # ERR:bank
            return out

        self.check("bank", k, self.x, contains=("2048-byte PSUM bank",))

    def test_psum_bank_comes_from_the_config(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            a, b = tk.load(x[:, :128]), tk.load(x[:, :256])
            ps = tk.tile([128, 512], tk.fp32, space="psum")
            tk.matmul(a, b, out=ps[:, 128:384])  # ERR:bank1k
            return out

        # Fits trn1's 2 KiB bank; a config with 1 KiB banks refuses it.
        with self.assertRaises(tk.KernelError) as e:
            k.simulate(self.x, config=CONFIG)
        self.assertIn("never stored", str(e.exception))  # traced fine up to the end
        self.check("bank1k", k, self.x, set={"core.psum.bank_size": "1KiB",
                                             "core.tensor.max_moving_free": 256},
                   contains=("1024-byte PSUM bank",))

    def test_dtype_the_engine_cannot_take(self):
        @tk.kernel
        def k(x):
            out = tk.output([128, 128], tk.fp32)
            a = tk.load(x[:, :128], dtype=tk.int32)
            tk.matmul(a, a)  # ERR:dtype
            return out

        self.check("dtype", k, self.x, contains=("int32", "tensor engine"))

    def test_shape_mismatch(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            a, b = tk.load(x[:, :64]), tk.load(x[:, :32])
            tk.store(out, tk.add(a, b))  # ERR:shape
            return out

        self.check("shape", k, self.x, contains=("shape mismatch", "[128, 64]", "[128, 32]"))

    def test_store_shape_mismatch(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            tk.store(out[:, :64], tk.load(x[:, :32]))  # ERR:store
            return out

        self.check("store", k, self.x, contains=("shape mismatch",))

    def test_slice_out_of_range(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            tk.store(out, tk.load(x[:, 256:1024]))  # ERR:slice
            return out

        self.check("slice", k, self.x, contains=("256:1024", "size 512"))

    def test_tile_used_after_its_buffer_rotated(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            pool = tk.pool(bufs=2)
            first = tk.load(x, pool=pool)
            tk.load(x, pool=pool)
            tk.load(x, pool=pool)  # ERR:taker
            tk.store(out, first)  # ERR:rotation
            return out

        err = self.check("rotation", k, self.x, contains=("bufs=2", "took the buffer"))
        self.assertIn(f"test_kernels.py:{marked_line('taker')}", str(err))

    def test_rotation_counts_from_the_first_use(self):
        # A tile may be allocated before the last use of the one whose buffer it gets:
        # its buffer is taken when it is first used.
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            pool = tk.pool(bufs=1)
            a, b = pool.tile(x.shape, x.dtype), pool.tile(x.shape, x.dtype)
            tk.load(x, out=a)
            tk.store(out, tk.mul(a, 2.0))
            tk.load(x, out=b)
            tk.store(out, tk.add(a, b))  # ERR:firstuse
            return out

        self.check("firstuse", k, self.x, contains=("took the buffer",))

        @tk.kernel
        def ok(x):
            out = tk.output(x.shape, x.dtype)
            pool = tk.pool(bufs=1)
            a, b = pool.tile(x.shape, x.dtype), pool.tile(x.shape, x.dtype)
            tk.load(x, out=a)
            tk.store(out, tk.mul(a, 2.0))
            tk.load(out, out=b)
            tk.store(out, tk.add(b, 1.0))
            return out

        x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
        np.testing.assert_array_equal(ok.simulate(x, config=CONFIG), 2 * x + 1)
        np.testing.assert_array_equal(ok.benchmark(x, config=CONFIG, checks=True)[0], 2 * x + 1)

    def test_store_from_psum(self):
        @tk.kernel
        def k(x):
            out = tk.output([128, 128], tk.fp32)
            a = tk.load(x[:, :128])
            tk.store(out, tk.matmul(a, a))  # ERR:psumstore
            return out

        self.check("psumstore", k, self.x, contains=("PSUM", "copy"))

    def test_gpsimd_cannot_touch_psum(self):
        @tk.kernel
        def k(x):
            out = tk.output([128, 128], tk.fp32)
            a = tk.load(x[:, :128])
            tk.store(out, tk.copy(tk.matmul(a, a), engine="gpsimd"))  # ERR:gpsimd
            return out

        self.check("gpsimd", k, self.x, contains=("gpsimd", "PSUM"))

    def test_partition_start_rule(self):
        @tk.kernel
        def k(x):
            out = tk.output(x.shape, x.dtype)
            a = tk.load(x)
            tk.store(out[16:48, :], tk.exp(a[16:48, :]))  # ERR:pstart
            return out

        self.check("pstart", k, self.x, contains=("partitions 16..47",))

    def test_bn_stats_limit_from_the_config(self):
        @tk.kernel
        def k(x):
            out = tk.output([128, 3], tk.fp32)
            tk.store(out, tk.bn_stats(tk.load(x)))  # ERR:bnstats
            return out

        self.check("bnstats", k, self.x, set={"core.vector.bn_stats_max_free": 256},
                   contains=("at most 256",))

    def test_outside_a_kernel(self):
        with self.assertRaises(tk.KernelError) as e:
            tk.zeros([128, 4])  # ERR:outside
        self.assertEqual(e.exception.lineno, marked_line("outside"))


if __name__ == "__main__":
    unittest.main()
