"""Collectives on the instruction path (docs/isa.md, Collectives): sharing the ranks'
DMA engines and HBM with compute DMA, the algorithm chosen from the placement (as
collbench chooses it), and their times' arithmetic on the synthetic `tiny` config.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_coll.py
Exit 77 (skipped) when numpy or the binary are missing.
"""

import re
import tempfile
import unittest
from pathlib import Path

from _helpers import needs_binary, rank_times, run, run_ranks, step_ns

needs_binary(("numpy",))

import numpy as np  # noqa: E402
from _collective_ref import bf16  # noqa: E402


def shared_program(ranks, collective=True, copies=8):
    """An all_reduce of 2048 fp32 on the sync queue and, beside it with no
    semaphore between them, `copies` DMA loads of [128 x 64] fp32 (32 KiB), each
    spread over the 16 engines, on queue 0 of engine 0."""
    group = ",".join(str(r) for r in range(ranks))
    s = (".program shared\n.semaphores 1\n.tensor x [2048] fp32 input @0\n"
         ".tensor y [2048] fp32 output @8192\n.tensor w [128,64] fp32 input @16384\n")
    if copies:
        s += ".queue dma 0 0\n"
        for _ in range(copies):
            s += ("dma_copy dst=sbuf[0:128, 0, fp32, [1,64]] src=hbm[128x64, @w, fp32, [1,64]] "
                  "spread=16\n")
    if collective:
        s += (".queue sync\nall_reduce dst=hbm[1x0, @y, fp32, [1,2048]] "
              "src=hbm[1x0, @x, fp32, [1,2048]] group=[%s]\n" % group)
    return s


class Contention(unittest.TestCase):
    """tiny: 2 ranks on one chip (2 cores); DMA engines 10 B/ns with a 100 ns fixed
    cost, 16 per core; the chip path 20 B/ns + 50 ns. HBM at 10 TB/s (set below) so
    the engines, not HBM, bound the loads."""

    def step(self, prog, sets=()):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(prog)
            args = ["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                    "--random-inputs", "--set", "hbm.bandwidth=10TB/s"]
            for s in sets:
                args += ["--set", s]
            p = run(args)
        return step_ns(p.stdout), p.stdout

    def test_collective_and_dma_share_the_engines(self):
        # Collective alone: 2 ring steps (torus on one chip: both ways, halves), each
        # rank's two 2048 B halves share the 20 B/ns chip path with the other rank's
        # (5 B/ns each): 2 x (50 + 2048 / 5) = 2 x 459.6 = 919.2 ns.
        coll, out = self.step(shared_program(2, copies=0))
        self.assertAlmostEqual(coll, 919.2, places=3, msg=out)
        # Loads alone: each of 8 copies puts 8 rows x 256 B = 2048 B on every engine:
        # 100 + 2048 / 10 = 304.8 ns; one in flight on the queue: 8 x 304.8 = 2438.4 ns.
        dma, out = self.step(shared_program(2, collective=False))
        self.assertAlmostEqual(dma, 2438.4, places=3, msg=out)
        # Both: the rank sends 4 halves of 2048 B = 8192 B, 512 B on each of the 16
        # engines: 512 / 10 = 51.2 ns an engine, taken after the first copy's share
        # and before the next: the loads end 51.2 ns later, 2489.6 ns; the collective
        # still ends at 919.2 ns. More than either alone, at most their sum.
        both, out = self.step(shared_program(2))
        self.assertAlmostEqual(both, dma + 51.2, places=3, msg=out)
        self.assertGreater(both, max(coll, dma))
        self.assertLessEqual(both, coll + dma)

    def test_fewer_collective_engines_take_longer_each(self):
        dma, _ = self.step(shared_program(2, collective=False))
        # network.collective_dma_engines=4: engines 12-15 carry 8192 / 4 = 2048 B
        # each, 204.8 ns; the collective's own DMA rate, 4 x 10 = 40 B/ns, stays above
        # its 5 B/ns share of the chip path, so alone it still takes 919.2 ns.
        sets = ("network.collective_dma_engines=4",)
        coll, out = self.step(shared_program(2, copies=0), sets)
        self.assertAlmostEqual(coll, 919.2, places=3, msg=out)
        both, out = self.step(shared_program(2), sets)
        self.assertAlmostEqual(both, dma + 204.8, places=3, msg=out)
        self.assertLessEqual(both, coll + dma)

    def test_collective_waits_for_busy_engines(self):
        # Engine 15 starts one 32 KiB load (no spread): 100 + 32768 / 10 = 3376.8 ns;
        # the all_reduce waits for its start signal, and with
        # network.collective_dma_engines=1 engine 15 alone carries the rank's 8192 B
        # after it: 3376.8 + 8192 / 10 = 4196.0 ns instead of the network's 919.2 ns.
        prog = (".program busy\n.semaphores 1\n.tensor x [2048] fp32 input @0\n"
                ".tensor y [2048] fp32 output @8192\n.tensor w [128,64] fp32 input @16384\n"
                ".queue dma 15 0\n"
                "dma_copy dst=sbuf[0:128, 0, fp32, [1,64]] src=hbm[128x64, @w, fp32, [1,64]] "
                "signal=s0+1@start\n.queue sync\n"
                "all_reduce dst=hbm[1x0, @y, fp32, [1,2048]] src=hbm[1x0, @x, fp32, [1,2048]] "
                "group=[0,1] wait=s0>=1\n")
        _, out = self.step(prog, ("network.collective_dma_engines=1",))
        times = rank_times(out)
        for r in (0, 1):
            self.assertAlmostEqual(times[r], 4196.0, places=3, msg=out)
        self.assertIn("slowed 6553.6 ns by compute", out)  # 2 x (4196.0 - 919.2)

    def test_hbm_bound_loads_share_hbm(self):
        # tiny's own HBM, one channel of 100 B/ns: both ranks' loads, 2 x 8 x 32 KiB,
        # are HBM bound; the collectives' HBM traffic (each rank: 8192 B sent read,
        # 4096 B of own operands read, 8192 B received written) joins it. Bounds only:
        # more than either alone, at most their sum.
        def step(prog):
            with tempfile.TemporaryDirectory() as d:
                Path(d, "p.tasm").write_text(prog)
                return step_ns(run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks",
                                    "2", "--random-inputs"]).stdout)
        coll = step(shared_program(2, copies=0))
        dma = step(shared_program(2, collective=False))
        both = step(shared_program(2))
        self.assertGreater(both, max(coll, dma))
        self.assertLessEqual(both, coll + dma)


class Algorithms(unittest.TestCase):
    """The instruction path takes the algorithm collbench takes for the placement:
    torus on one chip or whole nodes, else ring; times per algorithm."""

    def coll_time(self, ranks, sets=()):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(shared_program(ranks, copies=0))
            args = ["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", str(ranks),
                    "--random-inputs"]
            for s in sets:
                args += ["--set", s]
            p = run(args)
        self.assertIn("algorithm", p.stdout)
        return rank_times(p.stdout), p.stdout

    def test_torus_on_a_whole_node(self):
        # 4 ranks one per chip (chip.cores=1) fill tiny's node of 4 chips: torus,
        # both ways round the ring of chips on halves of every block: each step
        # moves 1024 B each way on its own link at 10 B/ns + 100 ns: 6 steps x
        # (100 + 1024 / 10) = 6 x 202.4 = 1214.4 ns.
        times, out = self.coll_time(4, ("chip.cores=1",))
        self.assertIn("algorithm torus", out)
        for r in range(4):
            self.assertAlmostEqual(times[r], 1214.4, places=3, msg=out)

    def test_ring_on_part_of_a_node(self):
        # 2 ranks one per chip (chip.cores=1): 2 of 4 chips, not whole: ring, one
        # way; chunk 8192 / 2 = 4096 B on a 10 B/ns link + 100 ns; 2 steps =
        # 2 x 509.6 = 1019.2 ns. Torus would not fit.
        times, out = self.coll_time(2, ("chip.cores=1",))
        self.assertIn("algorithm ring", out)
        for r in range(2):
            self.assertAlmostEqual(times[r], 1019.2, places=3, msg=out)


def exchange_program(op, dtype, n, ranks, peers=None):
    """One all_to_all or permute of n elements per rank from x into y."""
    group = ",".join(str(r) for r in range(ranks))
    es = 4 if dtype == "fp32" else 2
    extra = " peers=[%s]" % ",".join("-" if p is None else str(p) for p in peers) if peers else ""
    return (".program %s\n.semaphores 1\n.tensor x [%d] %s input @0\n"
            ".tensor y [%d] %s output @%d\n.queue sync\n"
            "%s dst=hbm[1x0, @y, %s, [1,%d]] src=hbm[1x0, @x, %s, [1,%d]] group=[%s]%s\n"
            % (op, n, dtype, n, dtype, -(-n * es // 4096) * 4096, op, dtype, n, dtype, n, group,
               extra))


class Exchange(unittest.TestCase):
    """all_to_all and permute (docs/isa.md, Collectives) against numpy written from
    the spec, their times' arithmetic, and their errors."""

    def exchange(self, op, dtype, ranks, n, peers=None, sets=()):
        rng = np.random.default_rng(ranks * 7 + n)
        xs = rng.uniform(-8, 8, size=(ranks, n)).astype(np.float32)
        if dtype == "bf16":
            xs = bf16(xs)
        ys, out = run_ranks(exchange_program(op, dtype, n, ranks, peers), xs, sets=sets)
        return xs, ys, out

    def test_all_to_all_matches_numpy(self):
        for ranks, dtype in ((2, "fp32"), (4, "bf16"), (4, "fp32")):
            with self.subTest(ranks=ranks, dtype=dtype):
                n = 24 * ranks
                xs, ys, _ = self.exchange("all_to_all", dtype, ranks, n)
                blk = n // ranks
                # Rank q's block p is rank p's block q: a block transpose.
                want = xs.reshape(ranks, ranks, blk).transpose(1, 0, 2).reshape(ranks, n)
                np.testing.assert_array_equal(ys, want)

    def test_permute_matches_numpy(self):
        for peers in ([1, 2, 3, 0], [2, 3, 0, 1], [0, 3, 1, 2]):
            with self.subTest(peers=peers):
                xs, ys, _ = self.exchange("permute", "fp32", 4, 100, peers)
                want = np.empty_like(xs)
                for i, dst in enumerate(peers):
                    want[dst] = xs[i]
                np.testing.assert_array_equal(ys, want)

    def test_times_are_point_to_point(self):
        # 4 ranks, one per chip of tiny's ring of 4 (chip.cores=1); links 10 B/ns,
        # 100 ns a hop. permute to the next chip: each rank sends 1024 fp32 = 4096 B
        # over its own + link: 4096 / 10 + 100 = 509.6 ns.
        _, _, out = self.exchange("permute", "fp32", 4, 1024, [1, 2, 3, 0], ("chip.cores=1",))
        self.assertIn("algorithm direct", out)
        for r, t in rank_times(out).items():
            self.assertAlmostEqual(t, 509.6, places=3, msg=out)
        # all_to_all of 1024 fp32: blocks of 256 x 4 = 1024 B to each other rank.
        # To c+1 one hop +, to c-1 one hop -, to c+2 two hops + (the tie goes +).
        # Each + link carries three (c -> c+1, c -> c+2, c-1 -> c+1), 10/3 B/ns
        # each: 1024 / (10/3) = 307.2 ns, then the two-hop latency, 200 ns: 507.2 ns.
        _, _, out = self.exchange("all_to_all", "fp32", 4, 1024, None, ("chip.cores=1",))
        for r, t in rank_times(out).items():
            self.assertAlmostEqual(t, 507.2, places=3, msg=out)

    def test_peers_that_differ_name_instruction_and_ranks(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(exchange_program("permute", "fp32", 64, 2, [1, 0]))
            Path(d, "b.tasm").write_text(exchange_program("permute", "fp32", 64, 2, [0, 1]))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "2",
                     "--rank-program", "1=" + str(Path(d, "b.tasm")), "--random-inputs"],
                    check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("collective mismatch", p.stderr)
        self.assertIn("permute (line 6) group [0,1] peers [", p.stderr)
        self.assertIn("rank 0", p.stderr)
        self.assertIn("rank 1", p.stderr)

    def test_bad_peers_are_a_validation_error(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(exchange_program("permute", "fp32", 64, 3, [1, 1, 0]))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "3",
                     "--random-inputs"], check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("permute", p.stderr)
        self.assertIn("peers name rank 1 twice", p.stderr)


def pipeline_program(n):
    """A 4-stage pipeline shift: rank i sends x[:n] to rank i + 1 (peers
    [1,2,3,-]: the last sends nothing, so rank 0 receives nothing). y is first set
    from x[n:2n] by a DMA that the permute waits for, so each rank's y holds a known
    value before the permute."""
    return (".program pipeline\n.semaphores 1\n.tensor x [%d] fp32 input @0\n"
            ".tensor y [%d] fp32 output @%d\n.queue dma 0 0\n"
            "dma_copy dst=hbm[1x0, @y, fp32, [1,%d]] src=hbm[1x0, @x+%d, fp32, [1,%d]] "
            "signal=s0+1\n.queue sync\n"
            "permute dst=hbm[1x0, @y, fp32, [1,%d]] src=hbm[1x0, @x, fp32, [1,%d]] "
            "group=[0,1,2,3] peers=[1,2,3,-] wait=s0>=1\n"
            % (2 * n, n, -(-2 * n * 4 // 4096) * 4096, n, 4 * n, n, n, n))


class PartialPermute(unittest.TestCase):
    """permute with `-` peers (docs/isa.md, Collectives): send/receive between
    pipeline stages, against numpy from the spec, and its time."""

    def test_pipeline_shift_matches_numpy(self):
        n = 100
        rng = np.random.default_rng(11)
        xs = rng.uniform(-8, 8, size=(4, 2 * n)).astype(np.float32)
        # Rank 0 receives nothing: its y keeps what the DMA wrote (its own x[n:]);
        # rank i > 0 gets rank i - 1's x[:n]. The same on the analytic and TLM
        # network models (each writes the ranks' results its own way).
        want = np.concatenate([xs[:1, n:], xs[:3, :n]])
        for model in ("analytic", "tlm"):
            ys, out = run_ranks(pipeline_program(n), xs, sets=("network.model=" + model,))
            self.assertIn("algorithm direct", out)
            np.testing.assert_array_equal(ys, want, err_msg=model)

    def test_times_one_transfer_timing_only(self):
        # Timing only, 4 ranks one per chip of tiny's ring of 4 (chip.cores=1), links
        # 10 B/ns, 100 ns a hop. The three real pairs (0->1, 1->2, 2->3) each take
        # their own + link at once, so the permute lasts one transfer of 1024 fp32:
        # 4096 B / 10 B/ns + 100 ns = 509.6 ns, on every rank (all complete together).
        peers = [1, 2, 3, None]
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(exchange_program("permute", "fp32", 1024, 4, peers))
            p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "4",
                     "--no-functional", "--set", "chip.cores=1"])
        times = rank_times(p.stdout)
        self.assertEqual(sorted(times), [0, 1, 2, 3], p.stdout)
        for r, t in times.items():
            self.assertAlmostEqual(t, 509.6, places=3, msg=p.stdout)
        # The same permute with data takes the same time.
        xs = np.zeros((4, 1024), np.float32)
        _, out = run_ranks(exchange_program("permute", "fp32", 1024, 4, peers), xs,
                           sets=("chip.cores=1",))
        self.assertEqual(rank_times(out), times, out)

    def test_bytes_sent_are_each_ranks_own(self):
        # Timing only, as above: ranks 0..2 each send their 1024 fp32 (4096 B), rank
        # 3 (no peer) sends nothing; each rank's report line counts its own sends,
        # on both network models (not the group's 3 x 4096 / 4 = 3072 B each).
        peers = [1, 2, 3, None]
        for model in ("analytic", "tlm"):
            with tempfile.TemporaryDirectory() as d:
                Path(d, "p.tasm").write_text(exchange_program("permute", "fp32", 1024, 4, peers))
                p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "4",
                         "--no-functional", "--set", "chip.cores=1", "--set",
                         "network.model=" + model])
            sent = {int(m.group(1)): int(m.group(2))
                    for m in re.finditer(r"rank (\d+): .*?(\d+) bytes sent", p.stdout)}
            self.assertEqual(sent, {0: 4096, 1: 4096, 2: 4096, 3: 0}, msg=model + p.stdout)

    def checked(self, prog, model):
        """`trnsim run --check-races --poison` of `prog` on 4 ranks with random
        inputs; the finished process (a finding exits 1)."""
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(prog)
            return run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "4",
                        "--random-inputs", "--check-races", "--poison", "--set",
                        "network.model=" + model], check=False)

    def test_checker_sees_an_unreceived_dst_unwritten(self):
        # Rank 0 receives nothing, so the permute leaves its y (scratch) as it was;
        # DMA queue 1 reads y back into z after the permute. With y set by a DMA
        # first, that read is clean; with y never set, rank 0's read of it is the one
        # poisoned read (ranks 1..3 read what the permute wrote; rank 3, with no
        # peer, does not read its x).
        n = 64

        def prog(init):
            s = (".program p\n.semaphores 2\n.tensor x [%d] fp32 input @0\n"
                 ".tensor y [%d] fp32 scratch @4096\n.tensor z [%d] fp32 output @8192\n"
                 % (2 * n, n, n))
            if init:
                s += (".queue dma 0 0\ndma_copy dst=hbm[1x0, @y, fp32, [1,%d]] "
                      "src=hbm[1x0, @x+%d, fp32, [1,%d]] signal=s0+1\n" % (n, 4 * n, n))
            return s + (".queue sync\npermute dst=hbm[1x0, @y, fp32, [1,%d]] "
                        "src=hbm[1x0, @x, fp32, [1,%d]] group=[0,1,2,3] peers=[1,2,3,-]%s "
                        "signal=s1+1\n.queue dma 1 0\ndma_copy dst=hbm[1x0, @z, fp32, [1,%d]] "
                        "src=hbm[1x0, @y, fp32, [1,%d]] wait=s1>=1\n"
                        % (n, n, " wait=s0>=1" if init else "", n, n))

        for model in ("analytic", "tlm"):
            p = self.checked(prog(True), model)
            self.assertEqual(p.returncode, 0, model + p.stdout + p.stderr)
            self.assertIn("checks: 0 race(s), 0 poisoned read(s)", p.stdout)
            p = self.checked(prog(False), model)
            out = p.stdout + p.stderr
            self.assertEqual(p.returncode, 1, model + out)
            self.assertIn("checks: 0 race(s), 1 poisoned read(s)", out)
            self.assertIn("poisoned read of never-written", out)

class Profile(unittest.TestCase):
    """The SPMD report's communication profile and the trace's rank processes,
    collective tracks and link tracks."""

    def profile(self, prog, extra=()):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(prog)
            trace = Path(d, "t.json")
            p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                     "--random-inputs", "--set", "hbm.bandwidth=10TB/s", "--trace", str(trace)]
                    + list(extra))
            import json
            return p.stdout, json.loads(trace.read_text())

    def test_links_busy_and_contended(self):
        out, _ = self.profile(shared_program(2, copies=0))
        # The collective alone on one chip: 2 steps, each four 2048 B halves share
        # the chip path (5 B/ns each) for 409.6 ns, then 50 ns latency: busy 2 x
        # 409.6 = 819.2 ns of the 919.2 ns step (89.1 %), all of it shared by
        # several (contended 89.1 %); 2 steps x 4 x 2048 B = 16384 B.
        m = re.search(r"node0\.chip0\.local\s+(\d+) bytes\s+(\d+) transfers\s+busy\s+([0-9.]+)%"
                      r"\s+contended\s+([0-9.]+)%", out)
        self.assertIsNotNone(m, out)
        self.assertEqual(int(m.group(1)), 16384)
        self.assertEqual(int(m.group(2)), 8)
        self.assertAlmostEqual(float(m.group(3)), 89.1, places=1)
        self.assertAlmostEqual(float(m.group(4)), 89.1, places=1)
        self.assertIn("all_reduce group [0,1] 2048 fp32: algorithm torus, 1 run(s), 919.2 ns", out)
        # Nothing else runs: none of the communication overlapped compute.
        self.assertIn("100.0% of the step", out)
        self.assertRegex(out, r"; 0\.0% of it overlapped compute")

    def test_overlap_with_concurrent_compute(self):
        # Four memsets on the vector engine beside the all_reduce, sharing nothing
        # with it: they outlast its 919.2 ns, so all of it overlapped compute; the
        # communication share is 919.2 ns over the step.
        prog = shared_program(2, copies=0).replace(
            ".queue sync", ".queue vector\n" + "memset dst=sbuf[0:128, 0, fp32, [1,512]] value=1\n" * 4
            + ".queue sync")
        out, trace = self.profile(prog)
        self.assertRegex(out, r"; 100\.0% of it overlapped compute")
        self.assertIn("rank 1: communication 919.2 ns, 919.2 ns of it overlapped compute", out)
        step = step_ns(out)
        self.assertGreater(step, 919.2)
        share = float(re.search(r"communication: 919\.2 ns \(([0-9.]+)% of the step", out).group(1))
        self.assertAlmostEqual(share, round(100 * 919.2 / step, 1), places=1)
        events = trace["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
        self.assertIn("rank 0 (chip.core0)", procs.values())
        self.assertIn("rank 1 (chip.core1)", procs.values())
        self.assertIn("network", procs.values())
        threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                   if e.get("name") == "thread_name"}
        net = [k for k, v in procs.items() if v == "network"][0]
        links = sorted(v for (pid, _), v in threads.items() if pid == net)
        self.assertEqual(links, ["node0.chip0.local", "rank0.dma", "rank1.dma"])
        coll = [k for k, v in threads.items() if v == "collectives"]
        self.assertEqual(len(coll), 2)
        spans = [e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in coll]
        self.assertEqual([e["name"] for e in spans], ["all_reduce", "all_reduce"])
        for e in spans:
            self.assertAlmostEqual(e["dur"], 0.9192, places=6)
        # Without a trace, --comm-profile alone gives the same overlap.
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(prog)
            base = ["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                    "--random-inputs", "--set", "hbm.bandwidth=10TB/s"]
            self.assertIn("100.0% of it overlapped compute", run(base + ["--comm-profile"]).stdout)
            self.assertIn("run with --comm-profile or --trace", run(base).stdout)
            # --stats: the same per rank and per link.
            import json
            run(base + ["--comm-profile", "--stats", str(Path(d, "s.json"))])
            st = json.loads(Path(d, "s.json").read_text())
        self.assertEqual(st["ranks"]["rank1"]["overlap_pct"], 100.0)
        self.assertEqual(st["links"]["node0_chip0_local"]["bytes"], 16384)


if __name__ == "__main__":
    unittest.main()
