"""Workloads: ONNX files as given, bundled example models exported once per sweep.

Examples (examples/models.py) are exported in a child Python (torch is slow to import
and should not be loaded into the runner before it forks its workers) to
OUTDIR/workloads/NAME-ARGSHASH.onnx, reused when present. The export is deterministic
(fixed seeds), so a fresh output folder gets the same content hash and point ids.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from trnsim.sweep.identity import canonical_json, sha256_file

_REPO = Path(__file__).resolve().parents[4]

_EXPORT = r"""
import json, sys
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
from examples.models import EXAMPLES
from trnsim.torch import _export
for job in json.loads(sys.argv[3]):
    if job["example"] not in EXAMPLES:
        sys.exit(f"unknown example model '{job['example']}' (have {', '.join(EXAMPLES)})")
    module, inputs = EXAMPLES[job["example"]].build(**job["args"])
    names = [f"input_{i}" for i in range(len(inputs))] if len(inputs) > 1 else ["x"]
    _export(module, inputs, job["path"] + ".tmp", names, ["output"])
    import os; os.replace(job["path"] + ".tmp", job["path"])
"""


class WorkloadError(ValueError):
    pass


def prepare(workloads, outdir, python=sys.executable):
    """Spec workload entries -> [{name, path, hash, kind}], exporting examples as needed."""
    wdir = os.path.join(outdir, "workloads")
    jobs, out = [], []
    for w in workloads:
        if w["kind"] == "onnx":
            if not os.path.isfile(w["path"]):
                raise WorkloadError(f"workload '{w['name']}': no file {w['path']}")
            out.append({"name": w["name"], "path": os.path.abspath(w["path"]), "kind": "onnx"})
            continue
        tag = hashlib.sha256(canonical_json(w["args"]).encode()).hexdigest()[:10]
        path = os.path.abspath(os.path.join(wdir, f"{w['example']}-{tag}.onnx"))
        if not os.path.isfile(path):
            jobs.append({"example": w["example"], "args": w["args"], "path": path})
        out.append({"name": w["name"], "path": path, "kind": "example",
                    "example": w["example"], "args": w["args"]})
    if jobs:
        os.makedirs(wdir, exist_ok=True)
        p = subprocess.run([python, "-c", _EXPORT, str(_REPO), str(_REPO / "runtime" / "python"),
                            json.dumps(jobs)], capture_output=True, text=True)
        if p.returncode != 0:
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            raise WorkloadError("exporting example models failed: "
                                + (lines[-1] if lines else f"exit {p.returncode}"))
    for w in out:
        w["hash"] = sha256_file(w["path"])
    return out
