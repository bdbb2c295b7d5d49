"""`trnsim train SCRIPT.py`: training steps of a model described by a Python file.

The file defines (module-level names):
    model()            -> torch.nn.Module (called once; the module's mode is kept, so
                          call .train() in it for BatchNorm's batch statistics)
    loss_fn(out, *t)   -> the scalar loss of model(batch[0]) and batch[1:]
    optimizer(params)  -> a torch.optim SGD, Adam or AdamW over the parameters
    batches()          -> a list (or iterable) of batches: tuples (input, *targets)
and optionally tokens_per_batch (int: tokens per step for the 6ND MFU).

    trnsim train examples/train_mlp.py -c trn2 --precision bf16 --steps 5
"""

import argparse
import json
import os
import runpy
import sys

USAGE_EXIT = 2


class ScriptError(Exception):
    pass


def _load(path):
    if not os.path.isfile(path):
        raise ScriptError(f"{path}: no such file")
    try:
        ns = runpy.run_path(path, run_name="trnsim_train_script")
    except SystemExit as e:
        raise ScriptError(f"{path}: exited while being loaded ({e.code})") from None
    except SyntaxError as e:
        raise ScriptError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # the user's code: report it, not a traceback into runpy
        raise ScriptError(f"{path}: loading it raised {type(e).__name__}: {e}") from None
    missing = [n for n in ("model", "loss_fn", "optimizer", "batches") if n not in ns]
    if missing:
        raise ScriptError(f"{path}: defines no {', '.join(missing)} (needs model(), "
                          "loss_fn(out, *targets), optimizer(params), batches())")
    for n in ("model", "loss_fn", "optimizer", "batches"):
        if not callable(ns[n]):
            raise ScriptError(f"{path}: {n} is a {type(ns[n]).__name__}, not a function")
    return ns


def _call(path, ns, name, *args):
    try:
        return ns[name](*args)
    except Exception as e:
        raise ScriptError(f"{path}: {name}() raised {type(e).__name__}: {e}") from None


def build(path):
    """(model, loss_fn, optimizer, batches, tokens_per_batch) of a training script."""
    import torch
    ns = _load(path)
    model = _call(path, ns, "model")
    if not isinstance(model, torch.nn.Module):
        raise ScriptError(f"{path}: model() returned a {type(model).__name__}, not a "
                          "torch.nn.Module")
    opt = _call(path, ns, "optimizer", model.parameters())
    if not isinstance(opt, torch.optim.Optimizer):
        raise ScriptError(f"{path}: optimizer(params) returned a {type(opt).__name__}, not a "
                          "torch.optim.Optimizer")
    batches = _call(path, ns, "batches")
    try:
        batches = list(batches)
    except TypeError:
        raise ScriptError(f"{path}: batches() returned a {type(batches).__name__}, not a "
                          "list or iterable of batches") from None
    if not batches:
        raise ScriptError(f"{path}: batches() gave no batch")
    for i, b in enumerate(batches):
        items = (b,) if isinstance(b, torch.Tensor) else b
        if not isinstance(items, (tuple, list)) or not all(isinstance(t, torch.Tensor)
                                                             for t in items):
            raise ScriptError(f"{path}: batch {i} is not a tensor or a tuple of tensors "
                              "(input, *targets)")
    tokens = ns.get("tokens_per_batch")
    if tokens is not None and not isinstance(tokens, int):
        raise ScriptError(f"{path}: tokens_per_batch is a {type(tokens).__name__}, not an int")
    return model, ns["loss_fn"], opt, batches, tokens


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="trnsim train", description="training steps (forward, backward, optimizer) of "
        "a model on the simulated chip; SCRIPT.py defines model(), loss_fn(out, *targets), "
        "optimizer(params) and batches()")
    ap.add_argument("script", metavar="SCRIPT.py")
    ap.add_argument("-c", "--config", default="trn2", help="preset or YAML file [trn2]")
    ap.add_argument("--precision", default="bf16", help="matmul operand type [bf16]")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps (batches cycled) [one per batch]")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override (repeatable)")
    ap.add_argument("--stochastic-rounding", action="store_true",
                    help="engines round bf16/fp16/fp8 results stochastically")
    ap.add_argument("--seed", type=int, default=0, help="stochastic rounding seed [0]")
    ap.add_argument("--recompute", nargs="?", const="selective", default=None,
                    choices=("selective", "full"),
                    help="activation recomputation [selective when given alone]")
    ap.add_argument("--trace", metavar="FILE.json", help="Perfetto trace of the first step")
    ap.add_argument("--no-phase-times", action="store_true",
                    help="skip the separate forward/backward/optimizer programs")
    ap.add_argument("--json", metavar="FILE.json", help="write the report (and losses) as JSON")
    ap.add_argument("--dp", type=int, default=1,
                    help="data parallel over this many ranks, each batch / dp samples [1]")
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0,
                    help="with --dp: gradient all-reduce bucket size in MiB [25]")
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps {args.steps}: at least 1")
    for item in args.set:
        if "=" not in item:
            ap.error(f"--set {item}: expected KEY=VALUE")
    try:
        model, loss_fn, opt, batches, tokens = build(args.script)
    except ScriptError as e:
        print(f"trnsim train: error: {e}", file=sys.stderr)
        return USAGE_EXIT
    from trnsim._cli import TrnsimError
    from trnsim.train import UnsupportedOp, train
    try:
        result = train(model, loss_fn, opt, batches, config=args.config,
                       precision=args.precision, steps=args.steps, set=args.set or None,
                       tokens_per_batch=tokens, phase_times=not args.no_phase_times,
                       stochastic_rounding=args.stochastic_rounding, seed=args.seed,
                       recompute=args.recompute or False, trace=args.trace, dp=args.dp,
                       bucket_cap_mb=args.bucket_cap_mb)
    except (ValueError, UnsupportedOp, TrnsimError) as e:
        print(f"trnsim train: error: {args.script}: {e}", file=sys.stderr)
        return 1
    print(result)
    if args.trace:
        print(f"wrote {args.trace}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"losses": result.losses, "report": result.report}, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
