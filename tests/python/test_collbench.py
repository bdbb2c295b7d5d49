"""Tests of `trnsim collbench` (runtime/collbench.cpp, models/network): the final
buffers of all_reduce against a numpy reduction written from the algorithms'
descriptions (the order a ring carries each chunk, fp32 additions rounded to the
dtype), and the printed columns against the nccl-tests definitions.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_collbench.py
Exit 77 (skipped) when numpy or the trnsim binary are missing.
"""

import os
import subprocess
import tempfile
import unittest

from _helpers import BIN, needs_binary

needs_binary(("numpy",))

import numpy as np  # noqa: E402
from _collective_ref import bf16, blocks, ring_all_reduce, ring_sum, rounder  # noqa: E402


def inputs(ranks, count, dtype):
    """collbench's inputs: ((r * 131 + i * 71) mod 1021 - 510) / 64, in the dtype."""
    r = np.arange(ranks, dtype=np.int64)[:, None]
    i = np.arange(count, dtype=np.int64)[None, :]
    return rounder(dtype)((((r * 131 + i * 71) % 1021) - 510) / 64.0)


def torus_all_reduce(x, sizes, rnd):
    """Dimension-wise: rank r has digits (r mod s0, r / s0 mod s1, ...); reduce along
    dimension 0 within each line (ranks equal in every other digit), then along
    dimension 1 on those partial sums, ...; the first half of each block rings
    forward (+1), the second half backward (-1)."""
    n, count = x.shape

    def digits(r):
        d = []
        for s in sizes:
            d.append(r % s)
            r //= s
        return d

    out = np.empty(count, dtype=np.float32)
    for b, (lo, hi) in enumerate(blocks(count, n)):
        mid = lo + (hi - lo + 1) // 2
        for (a, e), direction in (((lo, mid), 1), ((mid, hi), -1)):
            partial = {q: x[q, a:e] for q in range(n)}
            for d, size in enumerate(sizes):
                if size < 2:
                    continue
                nxt = {}
                for q in partial:
                    if digits(q)[d] != digits(b)[d]:
                        continue
                    line = sorted((m for m in partial
                                   if all(digits(m)[k] == digits(q)[k]
                                          for k in range(len(sizes)) if k != d)),
                                  key=lambda m: digits(m)[d])
                    nxt[q] = ring_sum([partial[m] for m in line], digits(b)[d], direction, rnd)
                partial = nxt
            out[a:e] = partial[b]
    return out


def collbench(*args):
    r = subprocess.run([BIN, "collbench", *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class Numerics(unittest.TestCase):
    def run_case(self, algo, ranks, per_chip, dtype, count, reference, coll="all_reduce",
                 extra=()):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.npy")
            size = count * (2 if dtype == "bf16" else 4)
            code, text = collbench(coll, "-c", "tiny", "--ranks", str(ranks),
                                   "--per-chip", str(per_chip), "--dtype", dtype,
                                   "--sizes", f"{size}B", "--algo", algo, "--out", out, "--check",
                                   *extra)
            self.assertEqual(code, 0, text)
            self.assertIn(" ok", text)
            got = np.load(out)
        want = reference(inputs(ranks, count, dtype), rounder(dtype))
        self.assertEqual(got.shape, (ranks, count))
        for r, (lo, hi) in enumerate(blocks(count, ranks)):
            if coll == "reduce_scatter":  # rank r keeps block r
                np.testing.assert_array_equal(got[r, lo:hi], want[lo:hi], err_msg=f"rank {r}")
            else:
                np.testing.assert_array_equal(got[r], want, err_msg=f"rank {r}")
        return want

    def test_ring_fp32_and_bf16(self):
        for dtype in ("fp32", "bf16"):
            with self.subTest(dtype=dtype):
                want = self.run_case("ring", 4, 1, dtype, 103, ring_all_reduce)
                if dtype == "bf16":
                    # The order matters: a plain left-to-right sum rounds differently.
                    x = inputs(4, 103, "bf16")
                    plain = x[0]
                    for q in range(1, 4):
                        plain = bf16(plain + x[q])
                    self.assertFalse(np.array_equal(plain, want))

    def test_ring_over_cores_and_chips(self):
        self.run_case("ring", 8, 2, "bf16", 77, ring_all_reduce)

    def test_torus_over_cores_and_chips(self):
        # tiny: 2 cores per chip, 4 chips in a ring: dimensions (2, 4).
        for dtype in ("fp32", "bf16"):
            with self.subTest(dtype=dtype):
                self.run_case("torus", 8, 2, dtype, 101,
                              lambda x, rnd: torus_all_reduce(x, [2, 4], rnd))


    def test_torus_across_nodes(self):
        # 2 nodes of tiny's 4-chip ring, one rank per chip: dimensions (4 chips, 2 nodes).
        self.run_case("torus", 8, 1, "bf16", 99,
                      lambda x, rnd: torus_all_reduce(x, [4, 2], rnd),
                      extra=("--set", "network.nodes=2"))

    def test_reduce_scatter_keeps_each_ranks_block(self):
        self.run_case("ring", 4, 1, "bf16", 103, ring_all_reduce, coll="reduce_scatter")
        self.run_case("torus", 8, 2, "bf16", 101,
                      lambda x, rnd: torus_all_reduce(x, [2, 4], rnd), coll="reduce_scatter")


class Columns(unittest.TestCase):
    def rows(self, text):
        return [line.split() for line in text.splitlines() if line and not line.startswith("#")]

    def test_bandwidths_follow_nccl_tests(self):
        for coll, factor in (("all_reduce", 2 * 3 / 4), ("all_gather", 3 / 4),
                             ("reduce_scatter", 3 / 4)):
            with self.subTest(coll=coll):
                code, text = collbench(coll, "-c", "tiny", "--ranks", "4", "--sizes", "1KiB:64KiB",
                                       "--algo", "ring")
                self.assertEqual(code, 0, text)
                rows = self.rows(text)
                self.assertEqual([int(r[0]) for r in rows], [1024 << k for k in range(7)])
                for size, count, typ, us, algbw, busbw in rows:
                    self.assertEqual(typ, "fp32")
                    self.assertEqual(int(count), int(size) // 4)
                    # time is printed to 0.01 us: 1 % covers its rounding here (>= 0.5 us).
                    want = int(size) / (float(us) * 1e3)
                    self.assertAlmostEqual(float(algbw), want, delta=0.01 * want + 0.005)
                    self.assertAlmostEqual(float(busbw), float(algbw) * factor, delta=0.01)

    def test_ring_time_is_closed_form(self):
        # tiny ring of 4 chips, 16 KiB: 2(n-1) = 6 steps x (100 ns + 4096 B / 10 B/ns)
        # = 3057.6 ns = 3.06 us; algbw = 16384 B / 3057.6 ns = 5.36 GB/s, busbw x 1.5.
        code, text = collbench("all_reduce", "-c", "tiny", "--ranks", "4", "--sizes", "16KiB",
                               "--algo", "ring")
        self.assertEqual(code, 0, text)
        self.assertEqual(self.rows(text), [["16384", "4096", "fp32", "3.06", "5.36", "8.04"]])

    def test_links_name_the_bottleneck(self):
        # tiny ring, 16 KiB: each chip's x+ link carries 6 chunks of 4096 B = 24576 B,
        # busy 6 x 409.6 = 2457.6 ns of 3057.6 ns = 80.4 %; a core's DMA (160 B/ns)
        # moves the same bytes in 6 x 25.6 ns = 153.6 ns, 5.0 % of the time.
        code, text = collbench("all_reduce", "-c", "tiny", "--ranks", "4", "--sizes", "16KiB",
                               "--algo", "ring", "--links")
        self.assertEqual(code, 0, text)
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("# busiest"))
        rows = [line.split()[1:] for line in lines[start + 1:]]
        self.assertEqual(sorted(r[0] for r in rows[:4]),
                         [f"node0.chip{c}.linkx+" for c in range(4)])
        for r in rows[:4]:
            self.assertEqual(r[1:], ["24576", "6", "80.4", "80.4"])
        self.assertEqual(rows[4][0], "rank0.dma")
        self.assertEqual(rows[4][1:], ["24576", "6", "80.4", "5.0"])

    def test_trace_has_a_track_per_link(self):
        # tiny ring, 16 KiB: chip 0's x+ link carries rank 0's 6 chunks, one per step of
        # 100 ns + 409.6 ns: each flows 409.6 ns from k x 509.6 ns.
        import json
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            code, text = collbench("all_reduce", "-c", "tiny", "--ranks", "4", "--sizes",
                                   "16KiB", "--algo", "ring", "--trace", path)
            self.assertEqual(code, 0, text)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        tid = next(t for t, n in names.items() if n == "node0.chip0.linkx+")
        slices = sorted((e for e in events if e["ph"] == "X" and e["tid"] == tid),
                        key=lambda e: e["ts"])
        self.assertEqual(len(slices), 6)
        for k, e in enumerate(slices):
            self.assertEqual(e["name"], "rank0 -> rank1")
            self.assertAlmostEqual(e["ts"], k * 0.5096, places=6)
            self.assertAlmostEqual(e["dur"], 0.4096, places=6)
            self.assertEqual(e["args"]["bytes"], 4096)
        got, text = collbench("all_reduce", "-c", "tiny", "--sizes", "1KiB:2KiB", "--trace", "x.json")
        self.assertEqual(got, 2, text)
        self.assertIn("--trace needs one size", text)

    def test_bad_input_is_a_clear_error(self):
        cases = [
            (["all_sum", "-c", "tiny"], 2, "unknown collective 'all_sum'"),
            (["all_reduce", "-c", "tiny", "--ranks", "5"], 2, "need 5 chips; the network has 4"),
            (["all_reduce", "-c", "tiny", "--per-chip", "3"], 2, "must be 1..chip.cores (2)"),
            (["all_reduce", "-c", "tiny", "--sizes", "1MiB:1KiB"], 2, "expected 0 < A <= B"),
            (["all_reduce", "-c", "tiny", "--dtype", "fp16"], 2, "expected fp32 or bf16"),
            (["all_reduce", "-c", "tiny", "--ranks", "3", "--algo", "torus"], 2,
             "the torus algorithm needs whole nodes"),
            (["all_reduce", "-c", "tiny", "--set", "network.torus_x=3"], 1,
             "network.torus_x: torus_x x torus_y = 3 x 1 = 3 must equal network.chips (4)"),
        ]
        for args, code, want in cases:
            with self.subTest(args=args):
                got, text = collbench(*args)
                self.assertEqual(got, code, text)
                self.assertIn(want, text)
                self.assertNotIn("# collbench", text)  # the error comes before any table


class Tlm(unittest.TestCase):
    """--tlm: the ring on SystemC/TLM link blocks (models/network/ring_tlm.h) gives the
    analytic ring's times (each hop one link, uncontended) and its numerics."""

    def rows(self, text):
        return [line.split() for line in text.splitlines() if line and not line.startswith("#")]

    def test_numerics_match_the_ring_reference(self):
        n = Numerics()
        for dtype in ("fp32", "bf16"):
            for coll in ("all_reduce", "reduce_scatter"):
                with self.subTest(dtype=dtype, coll=coll):
                    n.run_case("ring", 4, 1, dtype, 103, ring_all_reduce, coll=coll,
                               extra=("--tlm",))

    def test_times_equal_the_analytic_ring(self):
        # Several sizes in one process: the TLM ring runs them in turn on one model.
        for coll in ("all_reduce", "all_gather", "reduce_scatter"):
            with self.subTest(coll=coll):
                args = (coll, "-c", "tiny", "--ranks", "4", "--sizes", "1KiB:64KiB",
                        "--algo", "ring")
                code, analytic = collbench(*args)
                self.assertEqual(code, 0, analytic)
                code, tlm = collbench(*args, "--tlm")
                self.assertEqual(code, 0, tlm)
                self.assertIn("algorithm ring (TLM links)", tlm)
                self.assertEqual(self.rows(tlm), self.rows(analytic))

    def test_torus_and_cores_of_a_chip(self):
        # Paths beyond one rank a chip: 2 ranks a chip (the intra-chip path) and the
        # torus (both ways, halves through each rank's DMA stage). TLM serves
        # transfers that overlap on a resource in turn where the analytic model
        # shares it: the times agree within a few percent (tests/network has the
        # arithmetic), the numerics exactly.
        for extra in (("--ranks", "8", "--per-chip", "2"), ("--algo", "torus")):
            with self.subTest(extra=extra):
                args = ("all_reduce", "-c", "tiny", "--sizes", "64KiB", "--check") + extra
                code, analytic = collbench(*args)
                self.assertEqual(code, 0, analytic)
                code, tlm = collbench(*args, "--tlm")
                self.assertEqual(code, 0, tlm)
                self.assertIn("(TLM links)", tlm)
                a, t = self.rows(analytic)[0], self.rows(tlm)[0]
                self.assertEqual(t[-1], "ok")
                self.assertAlmostEqual(float(t[3]), float(a[3]), delta=0.05 * float(a[3]))

    def test_rejects_what_it_does_not_model(self):
        got, text = collbench("all_reduce", "-c", "tiny", "--tlm", "--links")
        self.assertEqual(got, 2, text)
        self.assertIn("--tlm has no --links or --trace", text)
        self.assertNotIn("# collbench", text)


class Direct(unittest.TestCase):
    """all_to_all and permute: point-to-point transfers all at once, timing only."""

    def rows(self, text):
        return [line.split() for line in text.splitlines() if line and not line.startswith("#")]

    def test_permute_time_is_one_hop(self):
        # tiny ring of 4 chips, permute of 16 KiB: rank i sends 16384 B to rank i + 1
        # over its own link: 16384 / 10 B/ns + 100 ns = 1738.4 ns = 1.74 us; busbw =
        # algbw (factor 1) = 16384 / 1738.4 = 9.42 GB/s. TLM: the same, uncontended.
        for extra in ((), ("--tlm",)):
            with self.subTest(extra=extra):
                code, text = collbench("permute", "-c", "tiny", "--sizes", "16KiB", *extra)
                self.assertEqual(code, 0, text)
                self.assertIn("algorithm direct", text)
                self.assertEqual(self.rows(text),
                                 [["16384", "4096", "fp32", "1.74", "9.42", "9.42"]])

    def test_all_to_all_analytic_and_tlm(self):
        code, analytic = collbench("all_to_all", "-c", "tiny", "--sizes", "4KiB:64KiB")
        self.assertEqual(code, 0, analytic)
        code, tlm = collbench("all_to_all", "-c", "tiny", "--sizes", "4KiB:64KiB", "--tlm")
        self.assertEqual(code, 0, tlm)
        a, t = self.rows(analytic), self.rows(tlm)
        self.assertEqual(len(a), 5)
        for ra, rt in zip(a, t):
            # busbw = algbw x (n - 1) / n, as nccl-tests defines it for all_to_all.
            self.assertAlmostEqual(float(ra[5]), float(ra[4]) * 3 / 4, delta=0.01)
            # Blocks of S / 4 bytes; each chip's + link carries three (its rank's
            # one-hop block, the first hop of its two-hop block, the previous rank's
            # second hop) at 10 B/ns, and the last arrives a 100 ns latency after
            # it drained: no schedule beats 3 (S / 4) / 10 + 100 ns. TLM books each
            # link as a transfer's head reaches it (pairwise order) and meets the
            # bound; the analytic model shares the links fairly, so the two-hop
            # blocks finish last, and pays a second latency on them.
            bound_us = (3 * int(ra[0]) / 4 / 10 + 100) / 1e3
            self.assertAlmostEqual(float(rt[3]), bound_us, delta=0.006)
            self.assertGreaterEqual(float(ra[3]), float(rt[3]))

    def test_rejects_check_and_algo(self):
        for extra, want in ((("--check",), "moves data without arithmetic"),
                            (("--algo", "ring"), "no --algo")):
            with self.subTest(extra=extra):
                got, text = collbench("permute", "-c", "tiny", *extra)
                self.assertEqual(got, 2, text)
                self.assertIn(want, text)

if __name__ == "__main__":
    unittest.main()
