"""Run keys: sweep axes that are `trnsim run` options rather than config keys, so that
scale-out sweeps (ranks, tensor- and data-parallel degree) work as config keys do.

    run.ranks   --ranks R   SPMD ranks (a .tasm/.tbin workload; an ONNX one runs tp x dp)
    run.tp      --tp N      ONNX: tensor-parallel ranks (the compiler splits the model)
    run.dp      --dp D      ONNX: data-parallel replicas (each compiles for batch / D)

They are counts, part of a point's identity like any key, and never in a compile's
`--set`s: a point with tp or dp above 1 compiles inside `trnsim run` (the partitioned
program is per rank), not through the sweep's compile cache. Network keys (network.link_bandwidth, network.torus_x, ...)
are config keys; they matter to the collectives of such runs.
"""

RUN_KEYS = {"run.ranks": "--ranks", "run.tp": "--tp", "run.dp": "--dp"}


def is_run_key(key):
    return key in RUN_KEYS


def split_sets(sets):
    """`k=v` texts -> (config sets, `trnsim run` arguments for the run keys)."""
    config, args = [], []
    for s in sets:
        k, _, v = s.partition("=")
        if is_run_key(k):
            args += [RUN_KEYS[k], v]
        else:
            config.append(s)
    return config, args


def partitioned(args):
    """True when the run arguments split an ONNX model (tp or dp above 1)."""
    pairs = dict(zip(args[::2], args[1::2]))
    return any(int(pairs.get(f, "1")) > 1 for f in ("--tp", "--dp"))


def drop_unsplit(args):
    """`args` without --tp 1 / --dp 1 (a program compiled whole takes neither)."""
    out = []
    for flag, v in zip(args[::2], args[1::2]):
        if flag not in ("--tp", "--dp"):
            out += [flag, v]
    return out
