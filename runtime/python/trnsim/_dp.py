"""Data-parallel training steps (trnsim.train.train(..., dp=N)), as PyTorch's
DistributedDataParallel runs them: N ranks run the same step program, each on its
slice of the batch and differentiating its loss divided by N (DDP divides the
gradients by N before the sum; dividing the loss does it with no extra pass over
them); the gradients are summed over the ranks by all-reduces on buckets of
gradients, so every rank's optimizer applies the same averaged gradient.

Buckets are filled as DDP fills them: parameters in reverse order (the order the
backward roughly produces their gradients), a bucket closed once it holds
`bucket_cap_mb` MiB or more (the first one at 1 MiB). Each bucket's gradients are flattened and concatenated
into one buffer, all-reduced (one `all_reduce` instruction on the sync queue) and
split back; a bucket of one gradient is all-reduced as it is, with no copies. The
all-reduce follows its bucket's last gradient producer in the step's node order, so
it runs while the rest of the backward computes; the split waits until the
optimizer reads it.
`overlap` reads from the step's trace how much of the collectives' time compute hid.
"""

import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from onnx import helper, numpy_helper

COLLECTIVE_DOMAIN = "trnsim.collective"  # compiler/frontend/onnx_import.h
DEFAULT_BUCKET_CAP_MB = 25.0  # DDP's default bucket_cap_mb
FIRST_BUCKET_BYTES = 2**20  # DDP's cap of its first bucket
_COMPUTE_TRACKS = ("tensor", "vector", "scalar", "gpsimd")


def check_dp(dp, batches):
    """dp as an int; raises ValueError naming dp and the batch size when dp is not a
    positive integer dividing every batch tensor's first (batch) dimension."""
    if isinstance(dp, bool) or not isinstance(dp, (int, np.integer)) or dp < 1:
        raise ValueError(f"train: dp={dp!r}: expected a positive integer (ranks)")
    dp = int(dp)
    if dp == 1:
        return dp
    for i, batch in enumerate(batches):
        for j, t in enumerate(batch):
            size = t.shape[0] if t.dim() > 0 else None
            if size is None or size % dp:
                raise ValueError(f"train: dp={dp} does not divide the batch size "
                                 f"{size if size is not None else '(a 0-d tensor)'} (batch {i} "
                                 f"tensor {j}, shape {list(t.shape)}): each rank takes "
                                 "batch size / dp samples")
    return dp


def shard(batch, dp, rank):
    """Rank `rank`'s contiguous slice of every batch tensor (DistributedSampler-like)."""
    return tuple(t[rank * (t.shape[0] // dp):(rank + 1) * (t.shape[0] // dp)] for t in batch)


def scaled(loss_fn, dp):
    """loss_fn / dp: each rank differentiates its loss divided by dp, so the all-reduced
    sum of the gradients is their average (DDP divides each bucket by the ranks before
    the sum) with no extra pass over the buckets, and the ranks' losses sum to the
    mean over the whole batch."""
    if dp == 1:
        return loss_fn
    return lambda out, *args: loss_fn(out, *args) / dp


def buckets(sizes_bytes, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES):
    """Bucket assignment: parameter indices in reverse order, a bucket closed once its
    bytes reach cap_bytes (a gradient larger than the cap is a bucket of its own); the
    first bucket's cap is min(first_cap_bytes, cap_bytes), as DDP's, so the first
    all-reduce starts early in the backward."""
    out, cur, have = [], [], 0
    for k in reversed(range(len(sizes_bytes))):
        cur.append(k)
        have += sizes_bytes[k]
        if have >= (min(first_cap_bytes, cap_bytes) if not out else cap_bytes):
            out.append(cur)
            cur, have = [], 0
    if cur:
        out.append(cur)
    return out


def add_allreduce(model, dp, nparams, cap_bytes, keep_grads):
    """Rewrites the ONNX step `model` (with outputs grad_0 .. grad_{nparams-1}, each an
    Identity of the value the optimizer reads, already divided by dp: see scaled) in
    place: each bucket's gradients are all-reduced over ranks 0..dp-1, and every
    reader of a gradient reads the sum, their average. keep_grads False drops the grad_k outputs (a training step).
    Returns [(param indices, bytes)] per bucket, in issue order."""
    g = model.graph
    nodes = list(g.node)
    out_ident = {}
    for i, n in enumerate(nodes):
        if n.op_type == "Identity" and n.output[0].startswith("grad_"):
            out_ident[n.output[0]] = i
    shapes = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in g.output}
    src, shape = [], []
    for k in range(nparams):
        name = f"grad_{k}"
        if name not in out_ident:
            raise ValueError(f"train: the captured step has no output {name}")
        src.append(nodes[out_ident[name]].input[0])
        shape.append(shapes[name])
    producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    numel = [int(np.prod(s)) if s else 1 for s in shape]
    plan = buckets([4 * n for n in numel], cap_bytes)

    inits = []
    count = [0]

    def fresh(hint):
        count[0] += 1
        return f"dp_{hint}_{count[0]}"

    def const(arr):
        name = fresh("const")
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    group = list(range(dp))
    drop = set() if keep_grads else {out_ident[f"grad_{k}"] for k in range(nparams)}
    readers = {}
    for i, n in enumerate(nodes):
        if i not in drop:
            for name in n.input:
                readers.setdefault(name, []).append(i)
    after, before = {}, {}  # node index -> nodes to insert after / before it
    averaged = {}
    for b, ks in enumerate(plan):
        made = []

        def op(op_type, ins, n_out=1, domain=None, **attrs):
            outs = [fresh(op_type.lower()) for _ in range(n_out)]
            node = helper.make_node(op_type, ins, outs, name=fresh(f"b{b}_{op_type}"),
                                    domain=domain, **attrs)
            node.doc_string = "backward"
            made.append(node)
            return outs[0] if n_out == 1 else outs

        # The gradients come divided by dp (scaled): the sum is their average.
        if len(ks) == 1:
            flat = src[ks[0]]
        else:
            flat = op("Concat", [op("Reshape", [src[k], const(np.array([-1], dtype=np.int64))])
                                 for k in ks], axis=0)
        summed = op("AllReduce", [flat], domain=COLLECTIVE_DOMAIN, group=group)
        last = max(producer.get(src[k], -1) for k in ks)
        after.setdefault(last, []).extend(made)
        made = []
        if len(ks) == 1:
            averaged[ks[0]] = summed
        else:
            parts = op("Split", [summed, const(np.array([numel[k] for k in ks],
                                                        dtype=np.int64))],
                       n_out=len(ks), axis=0)
            for k, p in zip(ks, parts):
                averaged[k] = op("Reshape", [p, const(np.array(shape[k], dtype=np.int64))])
        # An engine runs its queue in order: a reader of the sum placed right after
        # the all-reduce would hold up every later op on its engine until the
        # collective ends. The split goes just before the first reader instead
        # (the optimizer, after the whole backward).
        first = min((i for k in ks for i in readers.get(src[k], [])), default=len(nodes))
        before.setdefault(first, []).extend(made)

    rename = {src[k]: averaged[k] for k in range(nparams)}
    new_nodes = list(after.get(-1, []))
    for i, n in enumerate(nodes):
        new_nodes.extend(before.get(i, []))
        if i not in drop:
            for j, name in enumerate(n.input):
                if name in rename:
                    n.input[j] = rename[name]
            new_nodes.append(n)
        new_nodes.extend(after.get(i, []))
    new_nodes.extend(before.get(len(nodes), []))
    del g.node[:]
    g.node.extend(new_nodes)
    g.initializer.extend(inits)
    if not keep_grads:
        outs = [o for o in g.output if not o.name.startswith("grad_")]
        del g.output[:]
        g.output.extend(outs)
    if not any(o.domain == COLLECTIVE_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(COLLECTIVE_DOMAIN, 1))
    return [(ks, sum(4 * numel[k] for k in ks)) for ks in plan]


def run_ranks(program, rank_inputs, output_names, config, precision, set=None, timeout=None,
              trace=None, workdir=None):
    """`trnsim run PROGRAM --ranks R` with rank r's inputs rank_inputs[r] ({name:
    array}); an input equal on every rank is written once. Returns ([{name: array}] per
    rank, Report of the whole launch)."""
    from trnsim._cli import TrnsimError, _cli_message, _set_args, find_binary
    from trnsim._cli import _safe_name as _file_safe  # the CLI's output file names
    from trnsim.report import Report
    ranks = len(rank_inputs)
    own = None
    if workdir is None:
        own = tempfile.TemporaryDirectory(prefix="trnsim-dp-")
        workdir = own.name
    try:
        work = Path(workdir)
        out_dir = work / "outputs"
        stats = work / "stats.json"
        cmd = [find_binary(), "run", str(program), "-c", str(config), "--precision",
               str(precision), "--ranks", str(ranks), "--stats", str(stats),
               "--output-dir", str(out_dir)]
        if str(program).endswith(".onnx"):
            cmd += ["--dp", str(ranks)]
        cmd += _set_args(set)
        for name in rank_inputs[0]:
            arrays = [np.ascontiguousarray(ri[name]) for ri in rank_inputs]
            safe = _file_safe(name)
            if all(a.shape == arrays[0].shape and np.array_equal(a, arrays[0])
                   for a in arrays[1:]):
                path = work / f"in_{safe}.npy"
                np.save(path, arrays[0])
            else:
                for r, a in enumerate(arrays):
                    np.save(work / f"in_{safe}_r{r}.npy", a)
                path = work / f"in_{safe}_r{{rank}}.npy"
            cmd += ["--input", f"{name}={path}"]
        if trace:
            Path(trace).parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--trace", str(trace)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise TrnsimError(f"trnsim run {program} --ranks {ranks} did not finish within "
                              f"{timeout} s", cmd=cmd) from e
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise TrnsimError(_cli_message(proc.stderr, proc.returncode), proc.returncode, cmd,
                              proc.stdout, proc.stderr)
        with open(stats) as f:
            tree = json.load(f)
        outs = []
        for r in range(ranks):
            d = {}
            for name in output_names:
                path = out_dir / f"rank{r}" / f"{_file_safe(name)}.npy"
                if not path.is_file():
                    raise TrnsimError(f"trnsim wrote no output '{name}' for rank {r} (expected "
                                      f"{path})", 0, cmd, proc.stdout, proc.stderr)
                d[name] = np.load(path)
            outs.append(d)
        report = Report(tree, config=str(config), precision=str(precision), wall_seconds=wall,
                        trace=str(trace) if trace else None, model=Path(program).stem,
                        text=proc.stdout)
        return outs, report
    finally:
        if own is not None:
            own.cleanup()


def _union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _covered(a, b):
    """Length of the intersection of two sorted unions of intervals."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(trace_path):
    """Per rank, from a Chrome trace of an SPMD step: the all-reduce instructions' time
    on the sync queue (`comm_ns`: from the rendezvous of all ranks to completion,
    rendezvous waits excluded), the part of it during which a compute engine (tensor,
    vector, scalar, gpsimd) of the same core was busy (`hidden_ns`), the rest
    (`exposed_ns`), and the time the sync queue waited for the other ranks
    (`rendezvous_ns`)."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    pname, tname = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            pname[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            tname[(e["pid"], e["tid"])] = e["args"]["name"]
    comm, compute = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        pid = e["pid"]
        track = tname.get((pid, e["tid"]), "")
        s = float(e["ts"]) * 1e3  # us -> ns
        end = s + float(e["dur"]) * 1e3
        if track == "sync" and e["name"] == "all_reduce":
            comm.setdefault(pid, []).append((s, end))
        elif track in _COMPUTE_TRACKS:
            compute.setdefault(pid, []).append((s, end))
    rows = []
    for pid in sorted(comm):
        c = _union(comm[pid])
        busy = _union(compute.get(pid, []))
        total = sum(e - s for s, e in c)
        hidden = _covered(c, busy)
        rows.append({"core": pname.get(pid, str(pid)), "collectives": len(comm[pid]),
                     "comm_ns": total, "hidden_ns": hidden, "exposed_ns": total - hidden})
    return rows


def summary(dp, plan, rows, cap_mb):
    """The report's data-parallel entries: dp, bucket_cap_mb, bucket_bytes (per bucket,
    in issue order), allreduce_bytes_per_step, and overlap (rank 0's first step:
    comm_ns, hidden_ns, exposed_ns, hidden_pct, collectives; per_rank: every rank's)."""
    out = {"dp": dp, "bucket_cap_mb": float(cap_mb), "bucket_bytes": [b for _, b in plan],
           "allreduce_bytes_per_step": sum(b for _, b in plan)}
    if rows:
        r0 = rows[0]
        out["overlap"] = {
            "comm_ns": r0["comm_ns"], "hidden_ns": r0["hidden_ns"],
            "exposed_ns": r0["exposed_ns"], "collectives": r0["collectives"],
            "hidden_pct": 100.0 * r0["hidden_ns"] / r0["comm_ns"] if r0["comm_ns"] else 0.0,
            "per_rank": rows}
    return out


def format_rows(r):
    from trnsim.report import _human_bytes
    n = len(r["bucket_bytes"])
    rows = [f"  data parallel     {r['dp']} ranks, {n} gradient bucket{'s' if n != 1 else ''} "
            f"(cap {r['bucket_cap_mb']:g} MiB), {_human_bytes(r['allreduce_bytes_per_step'])} "
            "all-reduced per step"]
    ov = r.get("overlap")
    if ov:
        rows.append(f"  all-reduce        {ov['comm_ns'] / 1e3:.3f} us (rank 0, first step): "
                    f"{ov['hidden_ns'] / 1e3:.3f} us hidden under compute "
                    f"({ov['hidden_pct']:.1f}%), {ov['exposed_ns'] / 1e3:.3f} us exposed")
    return rows
