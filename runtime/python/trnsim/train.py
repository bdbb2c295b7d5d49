"""Training steps on the simulator: forward, backward and optimizer as one device program.

    import trnsim.train
    result = trnsim.train.train(model, loss_fn, optimizer, batches, config="trn2",
                                precision="fp32", steps=10)
    result.losses, result.params, result.report

The step is captured as torch.compile's AOT autograd does: make_fx traces the forward,
torch.autograd.grad and the optimizer's update into one aten-level fx graph, decomposed
with torch's own tables (torch._decomp); trnsim._fx_to_onnx translates it to ONNX and
`trnsim compile` compiles it once. Every step then simulates that one program with the
current parameters, optimizer state, learning rate, step number and batch as inputs.
"""

import math
import os
import shutil
import tempfile

import numpy as np
import torch

from trnsim import _dp
from trnsim._cli import run_model
from trnsim._fx_to_onnx import (UnsupportedOp, _shape, decompositions, fx_to_onnx,
                                split_phases)

__all__ = ["StepReport", "TrainResult", "gradients", "hbm_breakdown", "train", "UnsupportedOp"]


def _named_tensors(model):
    """(trainable parameters by their first name, every name under which each is
    reachable (tied weights have several), float buffers, other buffers)."""
    params, aliases, seen = [], {}, {}
    for mname, mod in model.named_modules(remove_duplicate=False):
        for pname, p in mod._parameters.items():
            if p is None or not p.requires_grad:
                continue
            full = f"{mname}.{pname}" if mname else pname
            if id(p) not in seen:
                seen[id(p)] = len(params)
                params.append((full, p))
            aliases.setdefault(seen[id(p)], []).append(full)
    fbufs, obufs = [], []
    for name, buf in model.named_buffers():
        (fbufs if buf.is_floating_point() else obufs).append((name, buf))
    return params, aliases, fbufs, obufs


class _Optim:
    """The update rule of a torch.optim optimizer as tensor code traced into the step."""

    def __init__(self, optimizer, params):
        self.groups = [{}]
        self.group_of = {}
        if optimizer is None:
            self.kind = "none"
            return
        self.groups = optimizer.param_groups
        self.group_of = {id(p): j for j, g in enumerate(self.groups) for p in g["params"]}
        missing = [n for n, p in params if id(p) not in self.group_of]
        if missing:
            raise ValueError(f"train: parameter {missing[0]} is not in the optimizer")
        kind = type(optimizer).__name__
        for g in self.groups:
            if kind == "SGD":
                if g.get("maximize"):
                    raise ValueError("train: SGD with maximize is not supported")
            elif kind in ("AdamW", "Adam"):
                if g.get("amsgrad") or g.get("maximize"):
                    raise ValueError(f"train: {kind} with amsgrad or maximize is not "
                                     "supported")
            else:
                raise ValueError(f"train: optimizer {kind} is not supported (SGD, Adam, "
                                 "AdamW)")
        if kind == "SGD":
            # Momentum state for every parameter when any group has momentum; a group
            # without momentum passes its (zero) buffer through.
            self.kind = "sgd_momentum" if any(g["momentum"] for g in self.groups) else "sgd"
        else:
            self.kind = kind.lower()
        self.optimizer = optimizer

    def lrs(self):
        """The groups' current learning rates (read every step: schedulers apply)."""
        return [float(g.get("lr", 0.0)) for g in self.groups]

    def state_names(self):
        return {"none": [], "sgd": [], "sgd_momentum": ["momentum_buffer"],
                "adam": ["exp_avg", "exp_avg_sq"], "adamw": ["exp_avg", "exp_avg_sq"]}[self.kind]

    def initial_state(self, p):
        st = self.optimizer.state.get(p, {}) if self.kind != "none" else {}
        out = []
        for name in self.state_names():
            v = st.get(name)
            out.append(torch.zeros_like(p) if v is None else v.detach().clone())
        return out

    def step_count(self, p):
        """Steps taken before: Adam's count; for SGD 1 when its momentum buffer exists
        (the step input then tells the first step, whose buffer is the plain gradient)."""
        st = self.optimizer.state.get(p, {}) if self.kind != "none" else {}
        if self.kind.startswith("sgd"):
            return 1.0 if st.get("momentum_buffer") is not None else 0.0
        s = st.get("step", 0)
        return float(s.item() if torch.is_tensor(s) else s)

    def update(self, params, grads, states, lr, step, order):
        """New params and states (tensor code, traced). lr: the learning rate (0-d), or
        with several param groups each group's ([G]); step: 0-d; order: each
        parameter's group.

        The scalars (bias corrections, decay) are computed once per group, not per
        parameter, and each tensor is updated as [128, n / 128] when it divides: the
        update is elementwise, and a 1-D bias would otherwise sit in one partition."""
        scal = []
        for j, g_ in enumerate(self.groups):
            lr_j = lr if len(self.groups) == 1 else lr[j]
            sc = {"lr": lr_j}
            if self.kind in ("adam", "adamw"):
                b1, b2 = g_["betas"]
                # beta ** step as exp(step * ln beta): step is a run-time input
                sc["step_size"] = lr_j / (1.0 - torch.exp(step * math.log(b1)))
                sc["inv_sqrt_bc2"] = torch.rsqrt(1.0 - torch.exp(step * math.log(b2)))
                sc["decay"] = 1.0 - lr_j * g_.get("weight_decay", 0.0)
            scal.append(sc)
        new_p, new_s = [], []
        for p, g, st, j in zip(params, grads, states, order):
            g_, sc = self.groups[j], scal[j]
            wd = g_.get("weight_decay", 0.0)
            shape = p.shape
            if p.dim() != 2 and p.numel() % 128 == 0:
                p, g, st = p.reshape(128, -1), g.reshape(128, -1), [t.reshape(128, -1)
                                                                     for t in st]
            if self.kind in ("sgd", "sgd_momentum"):
                d = g + wd * p if wd else g
                out_s = []
                if self.kind == "sgd_momentum":
                    mom, damp = g_["momentum"], g_.get("dampening", 0.0)
                    if mom:
                        # The first step's buffer is d itself (undamped); the zero initial
                        # buffer makes that momentum * 0 + coef * d with coef 1.
                        coef = 1.0 - damp * torch.clamp(step - 1.0, 0.0, 1.0) if damp else 1.0
                        buf = st[0] * mom + (d * coef if damp else d)
                        d = d + mom * buf if g_.get("nesterov") else buf
                        out_s = [buf]
                    else:
                        out_s = [st[0]]
                out_p = p - sc["lr"] * d
            elif self.kind in ("adam", "adamw"):
                if self.kind == "adamw":
                    p = p * sc["decay"]
                elif wd:
                    g = g + wd * p
                b1, b2 = g_["betas"]
                m = st[0] * b1 + g * (1.0 - b1)
                v = st[1] * b2 + g * g * (1.0 - b2)
                denom = torch.sqrt(v) * sc["inv_sqrt_bc2"] + g_["eps"]
                out_p = p - sc["step_size"] * (m / denom)
                out_s = [m, v]
            else:
                out_p, out_s = p, []
            new_p.append(out_p.reshape(shape))
            new_s.append([t.reshape(shape) for t in out_s])
        return new_p, new_s

    def write_back(self, params, states, steps_done):
        if self.kind == "none":
            return
        for p, st in zip(params, states):
            s = self.optimizer.state[p]
            if self.kind == "sgd_momentum" and not self.groups[self.group_of[id(p)]]["momentum"]:
                continue  # eager keeps no buffer for a group without momentum
            for name, v in zip(self.state_names(), st):
                s[name] = v.clone()
            if self.kind in ("adam", "adamw"):
                prev = s.get("step", 0)
                prev = float(prev.item() if torch.is_tensor(prev) else prev)
                s["step"] = torch.tensor(prev + steps_done)


class _Captured:
    """The captured step graph and its ONNX form, with input/output names."""

    def __init__(self, model, loss_fn, optim, batch, with_grads, with_update, recompute=False):
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.nn.utils.stateless import functional_call

        self.params, self.aliases, self.fbufs, self.obufs = _named_tensors(model)
        self.optim = optim
        np_, nb = len(self.params), len(self.fbufs)
        nstate = len(optim.state_names()) if with_update else 0
        self.nbatch = len(batch)
        order = [optim.group_of.get(id(p), 0) for _, p in self.params]
        ngroups = len(optim.groups)
        bnames = [n for n, _ in self.fbufs]
        aliases = self.aliases
        obufs = {n: b for n, b in self.obufs}

        def step(*flat):
            i = 0
            params = list(flat[i:i + np_])
            i += np_
            bufs = [b.clone() for b in flat[i:i + nb]]  # BN updates its stats in place
            i += nb
            states = [list(flat[i + k * nstate:i + (k + 1) * nstate]) for k in range(np_)]
            i += np_ * nstate
            lr, stepno = flat[i], flat[i + 1]
            i += 2
            data = flat[i:]
            # Integer buffers (BatchNorm's num_batches_tracked) are constants of the
            # trace; clones, so the trace's in-place updates leave the model alone.
            mapping = {n: b.clone() for n, b in obufs.items()}
            for k, p in enumerate(params):
                for alias in aliases[k]:
                    mapping[alias] = p
            mapping.update(zip(bnames, bufs))
            out = functional_call(model, mapping, (data[0],))
            loss = loss_fn(out, *data[1:])
            grads = torch.autograd.grad(loss, params)
            outs = [loss]
            if with_grads:
                outs += list(grads)
            if with_update:
                with torch.no_grad():
                    new_p, new_s = optim.update(params, grads, states, lr, stepno, order)
                outs += new_p
                outs += [t for st in new_s for t in st]
            outs += bufs
            return tuple(outs)

        self.in_names = ([f"param_{k}" for k in range(np_)] + [f"buffer_{k}" for k in range(nb)]
                         + [f"state_{k}_{j}" for k in range(np_) for j in range(nstate)]
                         + ["lr", "step"] + [f"batch_{k}" for k in range(self.nbatch)])
        self.out_names = (["loss"] + ([f"grad_{k}" for k in range(np_)] if with_grads else [])
                          + ([f"new_param_{k}" for k in range(np_)] if with_update else [])
                          + ([f"new_state_{k}_{j}" for k in range(np_) for j in range(nstate)]
                             if with_update else [])
                          + [f"new_buffer_{k}" for k in range(nb)])
        self.nstate = nstate
        example = ([p.detach().clone().requires_grad_(True) for _, p in self.params]
                   + [b.detach().clone() for _, b in self.fbufs]
                   + [torch.zeros_like(p) for _, p in self.params for _ in range(nstate)]
                   + [torch.tensor(0.1) if ngroups == 1 else torch.full((ngroups,), 0.1),
                      torch.tensor(1.0)] + [t.clone() for t in batch])
        modes = [(m, m.training) for m in model.modules()]
        rng = torch.get_rng_state()  # the trace draws dropout masks: the caller's draws
        try:
            self.gm = make_fx(step, decomposition_table=decompositions())(*example)
        finally:
            torch.set_rng_state(rng)
            for m, t in modes:
                m.training = t
        self._random_inputs()
        self.gm.graph.eliminate_dead_code()
        self.recomputed = _recompute(self.gm, self.phase_of(), recompute) if recompute else 0
        # A training step keeps its gradients inside the program: they are outputs of
        # the trace only so that the phases can be told apart (phase_models).
        self.keep = [not n.startswith("grad_") or not with_update for n in self.out_names]
        # Each node's doc_string names its phase (hbm_breakdown reads it; the compiler
        # does not).
        self.onnx = fx_to_onnx(self.gm, self.in_names, self.out_names, keep=self.keep,
                               phase_of=self.phase_of())
        self.run_outputs = [n for n, k in zip(self.out_names, self.keep) if k]

    def data_parallel(self, dp, bucket_cap_mb):
        """Makes the step data parallel over dp ranks (trnsim._dp): the gradients are
        averaged over the ranks in buckets before anything reads them."""
        if bucket_cap_mb is None or not bucket_cap_mb >= 0:
            raise ValueError(f"train: bucket_cap_mb={bucket_cap_mb!r}: expected a size in "
                             "MiB (0: every gradient its own all-reduce)")
        full = fx_to_onnx(self.gm, self.in_names, self.out_names, phase_of=self.phase_of())
        with_update = any(n.startswith("new_param_") for n in self.out_names)
        self.buckets = _dp.add_allreduce(full, dp, len(self.params),
                                         float(bucket_cap_mb) * 2**20, keep_grads=not with_update)
        self.onnx = full
        self.run_outputs = [o.name for o in full.graph.output]
        self.dp = dp

    def phase_of(self):
        """fx node -> "forward" (what the loss and the new BatchNorm statistics need),
        "backward" (what the gradients need beyond that) or "optimizer" (the rest)."""
        out = next(n for n in self.gm.graph.nodes if n.op == "output")
        flat = list(out.args[0])
        named = dict(zip(self.out_names, flat))

        def ancestors(roots):
            seen, stack = set(), [r for r in roots if isinstance(r, torch.fx.Node)]
            while stack:
                n = stack.pop()
                if n not in seen:
                    seen.add(n)
                    stack.extend(n.all_input_nodes)
            return seen

        fwd = ancestors([v for k, v in named.items() if k == "loss" or
                         k.startswith("new_buffer_")])
        bwd = ancestors([v for k, v in named.items() if k.startswith("grad_")]) - fwd
        return lambda n: "forward" if n in fwd else "backward" if n in bwd else "optimizer"

    def phase_models(self):
        """{phase: ONNX model} of the forward, backward and optimizer parts of the step."""
        full = fx_to_onnx(self.gm, self.in_names, self.out_names, keep=self.keep,
                          phase_of=self.phase_of())
        return split_phases(full, ["forward", "backward", "optimizer"])

    def _random_inputs(self):
        """Each dropout mask draw (bernoulli_) becomes a graph input, drawn on the host
        before every step from torch's generator in the trace's order, which is eager's:
        the same seed gives eager's masks."""
        g = self.gm.graph
        last = [n for n in g.nodes if n.op == "placeholder"][-1]
        self.random = []  # (shape, probability) per mask input
        for node in list(g.nodes):
            if node.op != "call_function" or node.target is not torch.ops.aten.bernoulli_.float:
                continue
            prob = node.args[1] if len(node.args) > 1 else node.kwargs.get("p", 0.5)
            with g.inserting_after(last):
                ph = g.placeholder(f"rng_{len(self.random)}")
            ph.meta = dict(node.meta)
            node.replace_all_uses_with(ph)
            g.erase_node(node)
            last = ph
            self.random.append((tuple(_shape(ph)), float(prob)))
        self.in_names += [f"rng_{k}" for k in range(len(self.random))]
        self.gm.recompile()

    def draw_masks(self):
        """This step's dropout masks, drawn as eager's dropout draws them."""
        return [torch.empty(shape).bernoulli_(prob) for shape, prob in self.random]

    def inputs(self, params, bufs, states, lr, stepno, batch, masks=()):
        arrays = [p.detach().float().numpy() for p in params]
        arrays += [b.detach().float().numpy() for b in bufs]
        arrays += [s.detach().float().numpy() for st in states for s in st]
        lr = lr[0] if isinstance(lr, (list, tuple)) and len(lr) == 1 else lr
        arrays += [np.array(lr, dtype=np.float32), np.array(stepno, dtype=np.float32)]
        arrays += [t.detach().float().numpy() for t in batch]
        if len(masks) != len(self.random):
            raise ValueError(f"{len(self.random)} dropout masks needed, {len(masks)} given")
        arrays += [m.numpy() for m in masks]
        return {n: np.ascontiguousarray(a) for n, a in zip(self.in_names, arrays)}


# Ops whose outputs the selective recomputation keeps (saves for the backward): the
# matmuls and convolutions, whose recomputation would cost tensor-engine time.
def _saved_ops():
    a = torch.ops.aten
    return {a.mm.default, a.bmm.default, a.addmm.default, a.convolution.default,
            a.baddbmm.default}


def _recompute(gm, phase_of, mode):
    """Activation recomputation on the captured step: every forward value a backward
    node reads is computed again in the backward from saved values, instead of being
    kept from the forward. mode True / "selective": matmul and convolution outputs are
    saved, everything else (norms, activations, softmax, masks) recomputed; "full":
    only the step's inputs are saved and the whole forward chain is recomputed (as
    torch.utils.checkpoint around the whole model). In-place ops are never recomputed.
    Returns the number of nodes added."""
    if mode not in (True, "selective", "full"):
        raise ValueError(f"train: recompute={mode!r}: expected False, True, 'selective' or "
                         "'full'")
    saved = set() if mode == "full" else _saved_ops()
    g = gm.graph
    copies = {}

    def keep(n):
        if not isinstance(n, torch.fx.Node) or n.op != "call_function":
            return True
        if phase_of(n) != "forward" or n.target in saved:
            return True
        name = getattr(n.target, "__name__", "")
        return name.split(".")[0].endswith("_")  # in place: would apply twice

    def clone(n, anchor):
        if keep(n):
            return n
        if n not in copies:
            args = {a: clone(a, anchor) for a in n.all_input_nodes}
            with g.inserting_before(anchor):
                c = g.node_copy(n, lambda a: args[a])
            c.meta = dict(n.meta)
            copies[n] = c
        return copies[n]

    backward = [n for n in g.nodes if n.op == "call_function" and phase_of(n) == "backward"]
    for n in backward:
        ins = {a: clone(a, n) for a in n.all_input_nodes}
        if any(a is not b for a, b in ins.items()):
            n.args = torch.fx.node.map_arg(n.args, lambda a: ins[a])
            n.kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: ins[a])
    g.eliminate_dead_code()
    g.lint()
    gm.recompile()
    return len(copies)


_HBM_KINDS = ("parameters", "optimizer_state", "gradients", "saved_activations",
              "new_parameters_and_state", "other", "unused", "reused")


def _program_tensors(program):
    """[(name, role, bytes, offset)] of a compiled program's HBM tensor table, and the
    names of the tensors an instruction accesses (`trnsim disasm`)."""
    import re
    import subprocess
    from trnsim._cli import find_binary
    proc = subprocess.run([find_binary(), "disasm", program], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"trnsim disasm {program}: {proc.stderr.strip()}")
    sizes = {"fp32": 4, "int32": 4, "bf16": 2, "fp16": 2, "fp8e4m3": 1, "fp8e5m2": 1,
             "uint8": 1}
    decl = re.compile(r"^\.tensor\s+(\S+)\s+\[([0-9,\s]*)\]\s+(\S+)\s+(\S+)\s+@(\d+)")
    tensors, used = [], set()
    for line in proc.stdout.splitlines():
        m = decl.match(line)
        if m:
            shape = [int(d) for d in m.group(2).split(",") if d.strip()]
            tensors.append((m.group(1), m.group(4), sizes[m.group(3)] * math.prod(shape),
                            int(m.group(5))))
        elif "@" in line:
            used.update(re.findall(r"@([A-Za-z_][A-Za-z0-9_.]*)", line))
    return tensors, used


def _safe_name(value):
    """The HBM tensor name compiler/lower gives an ONNX value (before de-duplication)."""
    return "".join(c if c.isalnum() or c in "_." else "_" for c in value)


def hbm_breakdown(cap, program):
    """{kind: bytes} of the compiled step's HBM allocation, and its peak. The peak is
    the footprint: the end of the last tensor. Inputs and outputs have their own space
    for the whole step; a scratch tensor reuses the bytes of scratch tensors dead by
    the time it is first touched (compiler/passes/alloc_hbm.cpp). Kinds, each the
    bytes of its tensors: the inputs param_* (parameters) and state_* (optimizer_state);
    the outputs new_param_* / new_state_* (new_parameters_and_state: an in-place
    update would reuse the inputs' space); scratch values the backward produces and the
    optimizer reads (gradients), that the forward produces and the backward reads
    (saved_activations); unused: scratch declared but no instruction touches (the
    compiler drops those: 0); other: the batch, loss, statistics, the forward's and
    backward's temporaries, alignment padding; reused (<= 0): the bytes tensors share,
    so the kinds add up to the peak. Returns (peak, {kind: bytes}, live peak: see
    _live_peak)."""
    tensors, _ = _program_tensors(program)
    # The compiler drops scratch no instruction touches, and scratch tensors sharing
    # bytes disassemble under one name: every declared tensor is used.
    used = {name for name, _, _, _ in tensors}
    phase, readers = {}, {}
    for node in cap.onnx.graph.node:
        for o in node.output:
            phase[o] = node.doc_string
        for i in node.input:
            readers.setdefault(i, set()).add(node.doc_string)
    # A gradient reaches the optimizer through shape-only ops (the transpose of a
    # weight gradient, reshapes): the value before them is the gradient too.
    views = ("Reshape", "Transpose", "Identity", "Squeeze", "Unsqueeze", "Flatten")
    for node in reversed(cap.onnx.graph.node):
        if node.op_type in views and "optimizer" in readers.get(node.output[0], ()):
            readers.setdefault(node.input[0], set()).add("optimizer")
    # HBM tensor names are the ONNX value names made file-safe (compiler/lower).
    safe = {}
    for v in phase:
        safe.setdefault(_safe_name(v), v)
    out = dict.fromkeys(_HBM_KINDS, 0)
    for name, role, nbytes, _ in tensors:
        if name.startswith("param_") and role == "input":
            kind = "parameters"
        elif name.startswith("state_") and role == "input":
            kind = "optimizer_state"
        elif (name.startswith("new_param_") or name.startswith("new_state_")) and \
                role == "output":
            kind = "new_parameters_and_state"
        elif role == "scratch" and name not in used:
            kind = "unused"
        else:
            v = safe.get(name)
            ph, rd = phase.get(v), readers.get(v, set())
            kind = ("saved_activations" if ph == "forward" and "backward" in rd else
                    "gradients" if ph == "backward" and "optimizer" in rd else "other")
        out[kind] += nbytes
    peak = max((off + b for _, _, b, off in tensors), default=0)
    # Bytes no tensor covers (alignment) are "other"; bytes several cover, "reused".
    spans = sorted((off, off + b) for _, _, b, off in tensors if b)
    covered, hi = 0, 0
    for lo, end in spans:
        covered += max(0, end - max(lo, hi))
        hi = max(hi, end)
    out["other"] += peak - covered
    out["reused"] = covered - sum(b for _, _, b, _ in tensors)
    return peak, out, _live_peak(cap.onnx.graph, tensors, used, safe)


def _live_peak(graph, tensors, used, safe):
    """The most HBM bytes live at once in the ONNX node order (the step's order: the
    forward, then the backward with its recomputations, then the optimizer): about
    what the compiler's allocator, which reuses dead tensors' space in the schedule's
    order, needs. Inputs, outputs and constants
    live throughout; a scratch tensor from its producer to its last reader (a reader
    of a reshape of it counts); scratch no instruction touches takes none."""
    size = {name: b for name, role, b, _ in tensors if role != "scratch" or name in used}
    scratch = {name for name, role, _, _ in tensors if role == "scratch"}
    nodes = list(graph.node)
    start, end = {}, {}
    alias = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
    for i, node in enumerate(nodes):
        for o in node.output:
            start.setdefault(o, i)
        for v in node.input:
            end[v] = i
    for i in range(len(nodes) - 1, -1, -1):  # a view keeps its source alive
        node = nodes[i]
        if node.op_type in alias and node.input and node.output[0] in end:
            end[node.input[0]] = max(end.get(node.input[0], i), end[node.output[0]])
    always = sum(b for name, b in size.items() if name not in scratch)
    delta = [0] * (len(nodes) + 1)
    for v, i in start.items():
        t = _safe_name(v)
        if t in scratch and t in size and safe.get(t) == v:
            delta[i] += size[t]
            delta[max(end.get(v, i), i) + 1] -= size[t]
    live, peak = 0, 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return always + peak


class StepReport:
    """Figures of one simulated training step (see TrainResult.report)."""

    def __init__(self, report):
        self.run = report
        self.step_ns = report.simulated_ns
        self.hbm_read_bytes = report.hbm_read_bytes
        self.hbm_write_bytes = report.hbm_write_bytes
        self.matmul_flops = report.flops
        self.mfu_pct = report.mfu_pct
        self.fallback_ops = list(report.fallback_ops)

    def as_dict(self):
        return {k: getattr(self, k) for k in ("step_ns", "hbm_read_bytes", "hbm_write_bytes",
                                              "matmul_flops", "mfu_pct", "fallback_ops")}


class TrainResult:
    """losses: per-step loss (floats); params: {name: trained tensor}; report: dict with
    per-step `step_ns` (the whole step's simulated time: forward, backward and optimizer
    in one program, so not split between them), mean `step_ns_mean`, HBM bytes per step,
    `model_flops_per_step` (6 x params x tokens), `mfu_6nd_pct` against the matmul peak
    of the precision, the device's own matmul `mfu_pct`, `fallback_ops` (ops run on the
    host), `compiled` (once / per step), and with phase_times
    `phase_ns_separate_programs` / `phase_hbm_bytes_separate_programs` (forward, backward
    and optimizer each simulated once as its own program, so they do not sum to
    step_ns) and `phase_fallback_ops`; steps: the StepReports."""

    def __init__(self, losses, params, steps, summary):
        self.losses = losses
        self.params = params
        self.steps = steps
        self.report = summary

    def __repr__(self):
        return f"TrainResult(losses={self.losses}, report={self.report})"

    def __str__(self):
        r = self.report
        rows = [f"training on {r['config']}, {r['precision']}: {r['steps']} steps, "
                f"{r['params']} parameters, {r['tokens_per_step']} tokens/step",
                f"  loss              {self.losses[0]:.4f} -> {self.losses[-1]:.4f}",
                f"  step (simulated)  {r['step_ns_mean'] / 1e3:.3f} us (forward + backward + "
                "optimizer, one program)"]
        ph = r.get("phase_ns_separate_programs")
        if ph:
            rows.append("  phases            " + ", ".join(
                f"{k} {v / 1e3:.3f} us" for k, v in ph.items()) + " (each its own program)")
        mfu = r["mfu_6nd_pct"]
        rows.append(f"  MFU (6 x params x tokens)  {mfu:.3f}%" if mfu is not None else
                    "  MFU (6 x params x tokens)  n/a (no matmul peak in the stats)")
        from trnsim.report import _human_bytes
        rows.append(f"  HBM per step      read {_human_bytes(r['hbm_read_bytes_per_step'])}, "
                    f"write {_human_bytes(r['hbm_write_bytes_per_step'])}")
        if r.get("hbm_peak_bytes"):
            parts = ", ".join(f"{k.replace('_', ' ')} "
                              f"{'-' if v < 0 else ''}{_human_bytes(abs(v))}"
                              for k, v in r["hbm_breakdown"].items() if v)
            rows.append(f"  HBM peak          {_human_bytes(r['hbm_peak_bytes'])}: {parts}")
            rows.append(f"  HBM live peak     {_human_bytes(r['hbm_live_peak_bytes'])} (tensors "
                        "live at once in node order; the program allocates the peak above)")
        rows.append(f"  host fallback     {', '.join(r['fallback_ops']) or 'none'}; compiled "
                    f"{r['compiled']}")
        if r.get("dp", 1) > 1:
            rows += _dp.format_rows(r)
        return "\n".join(rows)


def _peak_flops(report):
    """The matmul peak the run's MFU is measured against (FLOP/s), from its own stats."""
    if report.mfu_pct > 0 and report.tflops > 0:
        return report.tflops * 1e12 / (report.mfu_pct / 100.0)
    return None


class _Program:
    """The captured ONNX step compiled once with `trnsim compile` (kept in a temporary
    directory); a step that needs the host cannot be one program file, so its ONNX model
    is compiled again on every run."""

    def __init__(self, onnx_model, config, precision, set, timeout):
        import onnx
        from trnsim.torch import _compile_program
        self.dir = tempfile.mkdtemp(prefix="trnsim-train-")
        self.onnx = os.path.join(self.dir, "step.onnx")
        onnx.save(onnx_model, self.onnx)
        self.kw = dict(config=config, precision=precision, set=set, timeout=timeout)
        prog = os.path.join(self.dir, "step.tbin")
        self.program = prog if _compile_program(self.onnx, prog, config, precision, set,
                                                timeout) else None

    def run(self, inputs, output_names, **extra):
        kw = dict(self.kw, **extra)  # extra may replace set: the simulator's keys of a step
        with tempfile.TemporaryDirectory(prefix="trnsim-train-run-") as work:
            return run_model(self.program or self.onnx, inputs, output_names=output_names,
                             workdir=work, **kw)

    def run_ranks(self, rank_inputs, output_names, **extra):
        """An SPMD run on len(rank_inputs) ranks (trnsim._dp.run_ranks)."""
        kw = dict(self.kw, **extra)
        with tempfile.TemporaryDirectory(prefix="trnsim-train-run-") as work:
            return _dp.run_ranks(self.program or self.onnx, rank_inputs, output_names,
                                 workdir=work, **kw)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _phase_times(cap, inputs, config, precision, set, timeout):
    """{phase: simulated ns} of the forward, backward and optimizer parts of the step,
    each compiled and simulated on its own once, in order, with the values crossing
    between them (saved activations, gradients) passed through HBM."""
    import onnx
    values = dict(inputs)
    times = {}
    with tempfile.TemporaryDirectory(prefix="trnsim-train-phases-") as work:
        for ph, model in cap.phase_models().items():
            if not model.graph.node:
                times[ph] = 0.0
                times[ph + "_hbm_bytes"] = 0
                continue
            path = os.path.join(work, f"{ph}.onnx")
            onnx.save(model, path)
            ins = {}
            for vi in model.graph.input:
                a = np.asarray(values[vi.name])
                ins[vi.name] = a.astype(np.bool_) if vi.type.tensor_type.elem_type == \
                    onnx.TensorProto.BOOL else a
            names = [o.name for o in model.graph.output]
            os.makedirs(os.path.join(work, ph))
            outs, report = run_model(path, ins, config=config, precision=precision, set=set,
                                     timeout=timeout, output_names=names,
                                     workdir=os.path.join(work, ph))
            values.update(outs)
            times[ph] = report.simulated_ns
            times[ph + "_hbm_bytes"] = report.hbm_read_bytes + report.hbm_write_bytes
            if report.fallback_ops:
                times[ph + "_fallback_ops"] = list(report.fallback_ops)
    return times


def _as_batch(batch):
    if isinstance(batch, torch.Tensor):
        return (batch,)
    return tuple(batch)


def gradients(model, loss_fn, batch, config="trn2", precision="fp32", set=None,
              timeout=None, recompute=False, dp=1, bucket_cap_mb=_dp.DEFAULT_BUCKET_CAP_MB):
    """Loss and the gradient of every trainable parameter for one batch, on the simulator.

    batch: (input, *loss_args): loss_fn(model(input), *loss_args). The model keeps its
    mode (a BatchNorm in train mode uses the batch's statistics); nothing is modified.
    recompute, dp, bucket_cap_mb: as train's (dp: the gradients averaged over the
    ranks, the loss the mean of the ranks' losses).
    Returns (loss float, {param name: grad tensor}, Report).
    """
    batch = _as_batch(batch)
    dp = _dp.check_dp(dp, [batch])
    cap = _Captured(model, _dp.scaled(loss_fn, dp), _Optim(None, []), _dp.shard(batch, dp, 0),
                    with_grads=True, with_update=False, recompute=recompute)
    if dp > 1:
        cap.data_parallel(dp, bucket_cap_mb)
    prog = _Program(cap.onnx, config, precision, set, timeout)
    try:
        params = [p for _, p in cap.params]
        bufs = [b for _, b in cap.fbufs]
        if dp > 1:
            ranks, report = prog.run_ranks(
                [cap.inputs(params, bufs, [], 0.0, 0.0, _dp.shard(batch, dp, r),
                            cap.draw_masks()) for r in range(dp)], cap.run_outputs)
            outs = dict(ranks[0])
            outs["loss"] = np.sum([float(np.asarray(o["loss"]).reshape(())) for o in ranks])
        else:
            outs, report = prog.run(cap.inputs(params, bufs, [], 0.0, 0.0, batch,
                                               cap.draw_masks()), cap.run_outputs)
    finally:
        prog.close()
    grads = {n: torch.from_numpy(np.array(outs[f"grad_{k}"])).reshape(p.shape).to(p.dtype)
             for k, (n, p) in enumerate(cap.params)}
    return float(np.asarray(outs["loss"]).reshape(())), grads, report


def _with_rounding(set, stochastic_rounding, seed):
    """`set` (dict, list of "K=V" or of pairs) plus the core.rounding keys: stochastic
    rounding of the engines' bf16/fp16/fp8 results, seeded."""
    items = [] if set is None else (list(set.items()) if isinstance(set, dict) else list(set))
    if stochastic_rounding:
        items += [("core.rounding.stochastic", "true"),
                  ("core.rounding.seed", str(int(seed) % 2**32))]
    return items


def train(model, loss_fn, optimizer, batches, config="trn2", precision="fp32", steps=None,
          set=None, timeout=None, tokens_per_batch=None, phase_times=True,
          stochastic_rounding=False, seed=0, recompute=False, trace=None, dp=1,
          bucket_cap_mb=_dp.DEFAULT_BUCKET_CAP_MB):
    """Trains `model` for `steps` steps on the simulator; each step is one device program
    (forward, backward, optimizer) compiled once.

    loss_fn(model(batch[0]), *batch[1:]) is the loss; batches: a list (or iterable) of
    batches, cycled when shorter than steps; optimizer: torch.optim.SGD (momentum,
    weight decay), Adam or AdamW over the model's parameters, any param groups (their lr
    is read every step, so a scheduler stepped between calls applies). The model's
    parameters and float buffers (BatchNorm statistics) and the optimizer's state are
    updated in place at the end, as eager training would leave them. The model's mode is
    kept: call model.train() first for BatchNorm's batch statistics.
    tokens_per_batch: tokens per step for the 6 x params x tokens MFU (default: the
    number of elements of batch[0] for an integer batch (token ids), else its first dim).
    phase_times: also compile and simulate the forward, backward and optimizer parts as
    separate programs once (first step's inputs) to attribute time to them.
    stochastic_rounding: the engines round their bf16 (fp16, fp8) results stochastically
    (config core.rounding.stochastic; matmul operands at precision="bf16"); step s (from
    0) uses core.rounding.seed = seed + s, so a run repeats bit for bit and the steps
    draw different bits.
    recompute: activation recomputation (True or "selective": matmul and convolution
    outputs are kept for the backward, the other forward values it reads are computed
    again there; "full": every forward value is, from the step's inputs).
    trace: path of a Perfetto (Chrome JSON) trace of the first step's simulation, one
    track per engine and DMA queue (`trnsim run --trace`).
    dp: data parallel over dp ranks (an SPMD launch, rank r on core r): rank r takes
    the r-th slice of every batch (dp must divide the batch size) and differentiates
    its loss / dp; the gradients are summed over the ranks by all-reduces on buckets
    of bucket_cap_mb MiB filled in reverse parameter order (0: every gradient its own
    all-reduce, no copies into and out of a bucket buffer), each issued as soon as the
    backward has produced its gradients (trnsim._dp); losses are the mean of the
    ranks' losses. BatchNorm uses each rank's batch statistics and rank 0's running
    statistics are kept (DDP without SyncBatchNorm); dropout masks are drawn per rank.
    report["overlap"]: the all-reduces' time on rank 0's first step and how much of
    it compute hid.
    """
    batches = list(batches)
    if not batches:
        raise ValueError("train: no batches")
    steps = len(batches) if steps is None else int(steps)
    first = _as_batch(batches[0])
    # The program is compiled for the first batch's shapes: every batch must have them.
    for i, batch in enumerate(batches):
        batch = _as_batch(batch)
        if len(batch) != len(first):
            raise ValueError(f"train: batch {i} has {len(batch)} tensors, batch 0 {len(first)}")
        for j, (t, t0) in enumerate(zip(batch, first)):
            if t.shape != t0.shape or t.is_floating_point() != t0.is_floating_point():
                raise ValueError(f"train: batch {i} tensor {j} is {t.dtype} "
                                 f"{list(t.shape)}, batch 0's {t0.dtype} {list(t0.shape)}: "
                                 "the step is compiled for one shape")
    dp = _dp.check_dp(dp, [_as_batch(b) for b in batches])
    optim = _Optim(optimizer, [(n, p) for n, p in model.named_parameters() if p.requires_grad])
    cap = _Captured(model, _dp.scaled(loss_fn, dp), optim, _dp.shard(first, dp, 0),
                    with_grads=True, with_update=True, recompute=recompute)
    if dp > 1:
        cap.data_parallel(dp, bucket_cap_mb)
        phase_times = False  # the phases would need SPMD runs; the overlap says more
        trace_dir = tempfile.mkdtemp(prefix="trnsim-train-dp-")
        trace_path = trace or os.path.join(trace_dir, "step0.json")
    overlap = None
    prog = _Program(cap.onnx, config, precision, _with_rounding(set, stochastic_rounding, seed),
                    timeout)
    params = [p.detach().clone() for _, p in cap.params]
    bufs = [b.detach().clone() for _, b in cap.fbufs]
    states = [optim.initial_state(p) for _, p in cap.params]
    step0 = optim.step_count(cap.params[0][1]) if cap.params else 0.0
    losses, reports = [], []
    np_ = len(params)
    phases = {}
    hbm = hbm_breakdown(cap, prog.program) if prog.program else None
    try:
        for s in range(steps):
            batch = _as_batch(batches[s % len(batches)])
            inputs = cap.inputs(params, bufs, states, optim.lrs(), step0 + s + 1,
                                _dp.shard(batch, dp, 0), cap.draw_masks())
            step_set = _with_rounding(set, stochastic_rounding, seed + s)
            if phase_times and s == 0:  # the first step's inputs, its masks too
                phases = _phase_times(cap, inputs, config, precision, step_set, timeout)
            extra = {"trace": trace} if trace and s == 0 else {}
            if dp > 1:
                rank_inputs = [inputs] + [
                    cap.inputs(params, bufs, states, optim.lrs(), step0 + s + 1,
                               _dp.shard(batch, dp, r), cap.draw_masks())
                    for r in range(1, dp)]
                if s == 0:
                    extra = {"trace": trace_path}
                ranks, report = prog.run_ranks(rank_inputs, cap.run_outputs, set=step_set,
                                               **extra)
                if s == 0:
                    overlap = _dp.overlap(trace_path)
                outs = dict(ranks[0])  # every rank applies the same averaged gradients
                outs["loss"] = np.sum([float(np.asarray(o["loss"]).reshape(()))
                                       for o in ranks])  # each rank's loss / dp
            else:
                outs, report = prog.run(inputs, cap.run_outputs, set=step_set, **extra)

            def get(name, like):
                return torch.from_numpy(np.array(outs[name])).reshape(like.shape).to(like.dtype)

            losses.append(float(np.asarray(outs["loss"]).reshape(())))
            params = [get(f"new_param_{k}", p) for k, p in enumerate(params)]
            states = [[get(f"new_state_{k}_{j}", states[k][j]) for j in range(cap.nstate)]
                      for k in range(np_)]
            bufs = [get(f"new_buffer_{k}", b) for k, b in enumerate(bufs)]
            reports.append(StepReport(report))
    finally:
        compiled_once = prog.program is not None
        prog.close()
        if dp > 1:
            shutil.rmtree(trace_dir, ignore_errors=True)
    with torch.no_grad():
        for (name, p), new in zip(cap.params, params):
            p.copy_(new)
        for (name, b), new in zip(cap.fbufs, bufs):
            b.copy_(new)
        for name, b in cap.obufs:  # BatchNorm's num_batches_tracked
            if name.endswith("num_batches_tracked") and model.training:
                b.add_(steps)
    optim.write_back([p for _, p in cap.params], states, steps)

    n_params = sum(p.numel() for _, p in cap.params)
    x0 = first[0]
    tokens = tokens_per_batch or (x0.numel() if not x0.is_floating_point() else x0.shape[0])
    step_ns = [r.step_ns for r in reports]
    mean_ns = sum(step_ns) / len(step_ns)
    peak = _peak_flops(reports[-1].run)
    model_flops = 6.0 * n_params * tokens
    summary = {
        "config": str(config), "precision": str(precision), "steps": steps,
        "step_ns": step_ns, "step_ns_mean": mean_ns,
        "hbm_read_bytes_per_step": reports[-1].hbm_read_bytes,
        "hbm_write_bytes_per_step": reports[-1].hbm_write_bytes,
        "params": n_params, "tokens_per_step": int(tokens),
        "model_flops_per_step": model_flops,
        # An SPMD run's matmul peak is already that of every rank's core.
        "mfu_6nd_pct": (100.0 * model_flops / (mean_ns * 1e-9) / peak) if peak else None,
        "mfu_pct": reports[-1].mfu_pct,
        "fallback_ops": sorted({op for r in reports for op in r.fallback_ops}),
        "compiled": "once" if compiled_once else "per step (host fallback)",
        "stochastic_rounding": bool(stochastic_rounding),
        "recompute": recompute or False, "recomputed_nodes": cap.recomputed,
        # The compiled step's HBM allocation (None: compiled per step, host fallback).
        "hbm_peak_bytes": hbm[0] if hbm else None,
        "hbm_breakdown": hbm[1] if hbm else None,
        "hbm_live_peak_bytes": hbm[2] if hbm else None,
    }
    if trace:
        summary["trace"] = str(trace)
    if dp > 1:
        summary.update(_dp.summary(dp, cap.buckets, overlap, bucket_cap_mb))
    if phases:
        # Attributed, not measured inside the fused step: each phase is its own program
        # with HBM in between, so their sum differs from step_ns.
        summary["phase_ns_separate_programs"] = {k: v for k, v in phases.items()
                                                 if "_" not in k}
        summary["phase_hbm_bytes_separate_programs"] = {
            k[:-len("_hbm_bytes")]: v for k, v in phases.items() if k.endswith("_hbm_bytes")}
        summary["phase_fallback_ops"] = {k[:-len("_fallback_ops")]: v
                                         for k, v in phases.items()
                                         if k.endswith("_fallback_ops")}
    return TrainResult(losses, {n: p for (n, _), p in zip(cap.params, params)}, reports,
                       summary)


if __name__ == "__main__":  # `trnsim train SCRIPT.py` (python3 -m trnsim.train)
    import sys
    from trnsim.train_cli import main
    sys.exit(main())
