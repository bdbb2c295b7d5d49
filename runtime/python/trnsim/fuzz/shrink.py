"""Greedy shrinking of a failing ONNX model (works on any model, not only generated ones).

shrink(model, still_fails) tries smaller variants in turn and keeps each one for which
still_fails(variant) holds (the caller checks that the failure class is unchanged):

  outputs   keep one output, or drop one;
  retarget  an output becomes an input of the node that computes it;
  cut       a value some node computes becomes a graph input (everything that only
            fed it goes away);
  bypass    a node whose output has the type of one of its inputs is removed and its
            readers read that input;
  unbroadcast  an operand that broadcasts becomes an input of the full shape;
  dims      every occurrence of one dimension size in inputs, weights and shape
            arguments becomes 1, half of it, or a small size (weights are cropped).

Each variant is pruned (dead nodes, unused inputs and initializers dropped) and must
pass the ONNX checker and strict shape inference, and run in the oracle's numpy
evaluator to its declared output shapes, before it is tried.
"""

from __future__ import annotations

import copy
import time
from typing import Callable, Iterator, List, Optional

import numpy as np

import onnx
from onnx import helper, numpy_helper

# Ops whose inputs after the first are shape-like int64 arguments, not data.
_SHAPE_ARGS = {"Reshape", "Expand", "Tile", "Slice", "Pad", "Split", "ReduceSum", "Squeeze",
               "Unsqueeze"}
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum", "Mean", "PRelu",
                "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
                "Where"}


def _infer(m: onnx.ModelProto) -> Optional[onnx.ModelProto]:
    try:
        return onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    except Exception:  # noqa: BLE001 -- any inference failure rejects the variant
        return None


def _types(m: onnx.ModelProto) -> dict:
    """Value name -> TypeProto, for every value shape inference knows."""
    inf = _infer(m) or m
    t = {}
    for vi in list(inf.graph.input) + list(inf.graph.value_info) + list(inf.graph.output):
        t[vi.name] = vi.type
    for init in m.graph.initializer:
        t.setdefault(init.name, helper.make_tensor_type_proto(init.data_type, list(init.dims)))
    return t


def prune(m: onnx.ModelProto) -> onnx.ModelProto:
    """Drops nodes no output needs, then inputs and initializers nothing reads."""
    g = m.graph
    need = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(i for i in n.input if i)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    ins = [i for i in g.input if i.name in need]
    del g.input[:]
    g.input.extend(ins)
    inits = [i for i in g.initializer if i.name in need]
    del g.initializer[:]
    g.initializer.extend(inits)
    return m


def finalize(m: onnx.ModelProto) -> Optional[onnx.ModelProto]:
    """Prunes m, re-derives its output shapes; None unless it is a valid model."""
    m = prune(m)
    g = m.graph
    if not g.node or not g.output:
        return None
    del g.value_info[:]
    for o in g.output:  # forget the old shapes; inference fills them in again
        o.type.tensor_type.ClearField("shape")
    inf = _infer(m)
    if inf is None:
        return None
    shapes = {vi.name: vi.type for vi in list(inf.graph.value_info) + list(inf.graph.output)}
    for o in g.output:
        t = shapes.get(o.name)
        if t is None or not t.tensor_type.HasField("shape"):
            return None
        o.type.CopyFrom(t)
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception:  # noqa: BLE001
        return None
    return m if _runs(m) else None


def _runs(m) -> bool:
    """Whether the oracle's evaluator runs m to the declared output shapes (shape
    inference lets a Reshape to the wrong element count or an index past the end
    through); ops it does not know pass."""
    from trnsim.fuzz import oracle

    try:
        outs = oracle.evaluate(m, oracle.make_inputs(m, 0), np.float32)
    except oracle.Unsupported:
        return True
    except Exception:  # noqa: BLE001 -- any failure means an invalid variant
        return False
    for o in m.graph.output:
        want = [d.dim_value for d in o.type.tensor_type.shape.dim]
        if list(np.shape(outs[o.name])) != want:
            return False
    return True


def _producers(m):
    return {o: n for n in m.graph.node for o in n.output}


def _new_input_name(m, base):
    used = {v for n in m.graph.node for v in list(n.input) + list(n.output)}
    used |= {i.name for i in m.graph.input} | {i.name for i in m.graph.initializer}
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    return name


def _dims(t: onnx.TypeProto) -> List[int]:
    return [d.dim_value for d in t.tensor_type.shape.dim]


# --- the variants ----------------------------------------------------------------
def _outputs(m) -> Iterator[onnx.ModelProto]:
    outs = list(m.graph.output)
    if len(outs) < 2:
        return
    for keep in outs:
        v = copy.deepcopy(m)
        del v.graph.output[:]
        v.graph.output.append(keep)
        yield v
    for k in range(len(outs)):
        v = copy.deepcopy(m)
        del v.graph.output[k]
        yield v


def _retargets(m) -> Iterator[onnx.ModelProto]:
    """An output is replaced by a computed input of the node that makes it (the
    tail of the graph goes)."""
    types = _types(m)
    prod = _producers(m)
    outs = [o.name for o in m.graph.output]
    for k, o in enumerate(outs):
        n = prod.get(o)
        if n is None:
            continue
        for i in n.input:
            if not i or i not in prod or i in outs or i not in types:
                continue
            if not types[i].tensor_type.HasField("shape"):
                continue
            v = copy.deepcopy(m)
            v.graph.output[k].CopyFrom(helper.make_value_info(i, types[i]))
            yield v


def _cuts(m) -> Iterator[onnx.ModelProto]:
    """A computed value read by a node becomes a graph input (earliest values first:
    cutting there removes the most)."""
    types = _types(m)
    outs = {o.name for o in m.graph.output}
    prod = _producers(m)
    seen = set()
    for n in m.graph.node:
        for i in n.input:
            if not i or i not in prod or i in seen or i in outs or i not in types:
                continue
            seen.add(i)
            if not types[i].tensor_type.HasField("shape"):
                continue
            v = copy.deepcopy(m)
            name = _new_input_name(v, i + "_in")
            v.graph.input.append(helper.make_value_info(name, types[i]))
            for other in v.graph.node:
                for j, x in enumerate(other.input):
                    if x == i:
                        other.input[j] = name
            yield v


def _bypasses(m) -> Iterator[onnx.ModelProto]:
    """Removes a node whose readers can read one of its inputs instead."""
    types = _types(m)
    for k, n in enumerate(m.graph.node):
        if len(n.output) != 1 or n.output[0] not in types:
            continue
        out_t = types[n.output[0]]
        for i in n.input:
            if not i or i not in types or types[i] != out_t:
                continue
            v = copy.deepcopy(m)
            old = n.output[0]
            del v.graph.node[k]
            for other in v.graph.node:
                for j, x in enumerate(other.input):
                    if x == old:
                        other.input[j] = i
            is_out = [o for o in v.graph.output if o.name == old]
            if is_out:
                if any(gi.name == i for gi in v.graph.input) or \
                        any(t.name == i for t in v.graph.initializer):
                    continue  # an output must be computed
                for o in v.graph.output:
                    if o.name == old:
                        o.name = i
            yield v
            break


def _unbroadcasts(m) -> Iterator[onnx.ModelProto]:
    """An elementwise operand smaller than the result becomes a full-shape input."""
    types = _types(m)
    for k, n in enumerate(m.graph.node):
        if n.op_type not in _ELEMENTWISE or not n.output or n.output[0] not in types:
            continue
        out_t = types[n.output[0]]
        for j, i in enumerate(n.input):
            if not i or i not in types or _dims(types[i]) == _dims(out_t):
                continue
            if types[i].tensor_type.elem_type != onnx.TensorProto.FLOAT:
                continue
            v = copy.deepcopy(m)
            name = _new_input_name(v, i + "_full")
            v.graph.input.append(helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, _dims(out_t)))
            v.graph.node[k].input[j] = name
            yield v


def _shape_arg_inits(m) -> set:
    s = set()
    for n in m.graph.node:
        if n.op_type in _SHAPE_ARGS:
            s.update(i for i in list(n.input)[1:] if i)
    return s


def subst_dim(m, d: int, d2: int) -> onnx.ModelProto:
    """m with every dimension of size d (inputs, weights) made d2 < d: weights are
    cropped, shape arguments equal to d (or -d) rewritten."""
    v = copy.deepcopy(m)
    for i in v.graph.input:
        for dim in i.type.tensor_type.shape.dim:
            if dim.dim_value == d:
                dim.dim_value = d2
    args = _shape_arg_inits(v)
    new = []
    for t in v.graph.initializer:
        a = numpy_helper.to_array(t)
        if t.name in args and a.dtype == np.int64:
            a = a.copy()
            a[a == d] = d2
            a[a == -d] = -d2
        else:
            idx = tuple(slice(0, d2) if s == d else slice(None) for s in a.shape)
            a = a[idx]
        new.append(numpy_helper.from_array(np.ascontiguousarray(a), t.name))
    del v.graph.initializer[:]
    v.graph.initializer.extend(new)
    return v


def _dim_sizes(m) -> List[int]:
    sizes = set()
    for i in m.graph.input:
        sizes.update(_dims(i.type))
    for t in m.graph.initializer:
        sizes.update(t.dims)
    return sorted((s for s in sizes if s > 1), reverse=True)


def _dim_variants(m) -> Iterator[onnx.ModelProto]:
    for d in _dim_sizes(m):
        # Big steps first; d - 1 only for small d (else shrinking crawls).
        for d2 in sorted({1, 2, 3, d // 4, d // 2, (d + 1) // 2, (3 * d) // 4} |
                         ({d - 1} if d <= 16 else set())):
            if 1 <= d2 < d:
                yield subst_dim(m, d, d2)


PHASES = [("outputs", _outputs), ("retarget", _retargets), ("cut", _cuts), ("bypass", _bypasses),
          ("unbroadcast", _unbroadcasts), ("dims", _dim_variants)]


def size_of(m) -> tuple:
    """What shrinking minimises: nodes first, then elements of inputs and weights."""
    elems = sum(int(np.prod(_dims(i.type) or [1])) for i in m.graph.input)
    elems += sum(int(np.prod(list(t.dims) or [1])) for t in m.graph.initializer)
    return (len(m.graph.node), len(m.graph.output), elems)


def shrink(model: onnx.ModelProto, still_fails: Callable[[onnx.ModelProto], bool],
           budget_s: float = 600.0, max_tries: int = 2000,
           log: Callable[[str], None] = lambda s: None) -> onnx.ModelProto:
    """The smallest variant found for which still_fails holds (model itself if none)."""
    best = finalize(copy.deepcopy(model)) or model
    t0 = time.monotonic()
    tries = 0
    progress = True
    while progress:
        progress = False
        for name, phase in PHASES:
            for cand in phase(best):
                if time.monotonic() - t0 > budget_s or tries >= max_tries:
                    return best
                cand = finalize(cand)
                if cand is None or size_of(cand) >= size_of(best):
                    continue
                tries += 1
                if still_fails(cand):
                    log(f"shrink: {name}: {size_of(best)} -> {size_of(cand)}")
                    best = cand
                    progress = True
                    break  # restart the phase on the smaller model
            if progress:
                break
    return best
