"""Runs generated cases through `trnsim validate` and classifies the outcome.

Classes: pass; inexact (outputs beyond validate's tolerance, but the float64 oracle
finds the simulator no further from the truth than rounding noise gets: not a
failure); refused (the lowering sent a node back: a generator bug, since the
generator should only emit what the chip runs, or a pass and the lowering that
disagree); and the failures -- mismatch (an output beyond tolerance and beyond
noise), race / poison (reported by validate's --check-races / --poison), error (the
compiler or simulator threw), crash (killed by a signal or an unexpected exit
status) and timeout.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[4]
FAILURES = ("mismatch", "race", "poison", "error", "crash", "timeout")


def find_binary() -> str:
    b = os.environ.get("TRNSIM_BIN")
    if b:
        return b
    for d in ("build", "build-fz"):
        p = REPO / d / "runtime" / "trnsim"
        if os.access(p, os.X_OK):
            return str(p)
    raise SystemExit("trnsim fuzz: no simulator binary: set TRNSIM_BIN or build "
                     "build/runtime/trnsim")


_checks_cache = {}


def check_flags(binary: str) -> List[str]:
    """--check-races / --poison when this build's `validate --help` lists them."""
    if binary not in _checks_cache:
        try:
            h = subprocess.run([binary, "validate", "--help"], capture_output=True, text=True,
                               timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            h = ""
        # Newer builds check by default and list --no-check-races / --no-poison.
        _checks_cache[binary] = [f for f in ("--check-races", "--poison") if f[2:] in h]
    return _checks_cache[binary]


@dataclass
class Outcome:
    cls: str  # pass, refused, or one of FAILURES
    message: str = ""  # the lines that say why
    seconds: float = 0.0
    output: str = ""  # stdout + stderr
    rc: Optional[int] = None

    @property
    def failed(self) -> bool:
        return self.cls in FAILURES

    def mismatch_stats(self) -> Tuple[float, bool]:
        """(fraction of elements outside tolerance, whether an error is inf/NaN) over
        the outputs of validate's table."""
        bad = total = 0
        nonfinite = False
        for ln in self.output.splitlines():
            m = _ROW.match(ln)
            if not m:
                continue
            total += int(m.group(1))
            nonfinite |= m.group(2) in ("inf", "nan", "-nan")
            if m.group(3):
                bad += int(m.group(3))
        return (bad / total if total else 0.0), nonfinite

    def same_failure(self, orig: "Outcome") -> bool:
        """Whether this (a shrunk variant's) outcome is still orig's failure: the same
        signature, and for a mismatch no inf/NaN errors unless orig had them and at
        least half orig's fraction of bad elements -- so that a shrink step which
        removed a guard (a denominator that can now be 0) does not pass for the bug."""
        if self.signature() != orig.signature():
            return False
        if self.cls != "mismatch":
            return True
        f, nf = self.mismatch_stats()
        f0, nf0 = orig.mismatch_stats()
        return (nf0 or not nf) and f >= 0.5 * f0

    def signature(self) -> str:
        """What the shrinker keeps constant: the class, and for errors and crashes the
        message with names and numbers blanked (so a different bug does not count)."""
        if self.cls in ("error", "crash", "refused"):
            m = " ".join(self.message.splitlines()[:2])
            m = re.sub(r"'[^']*'", "'_'", m)
            m = re.sub(r"\[[^\]]*\]", "[_]", m)
            m = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", m)
            return f"{self.cls}: {m[:200]}"
        return self.cls


# validate's summary of --check-races / --poison, and the report lines above it.
_CHECKS = re.compile(r"checks: (\d+) race\(s\).*?, (\d+) poisoned read\(s\)")
# A row of validate's output table: elements, max abs, ..., and the bad count.
_ROW = re.compile(r"^  \S+\s+(\d+)\s+(\S+)\s+\S+\s+\S+\s+(?:pass|FAIL)"
                  r"(?: \((\d+) elements outside)?")
# validate's last line (newer builds): "validate: FAIL (... ; N races; M poisoned reads)".
_VERDICT = re.compile(r"validate: \w+ \(.*?(\d+) races; (\d+) poisoned reads")
_RACE = re.compile(r"^race \(|access checks failed: [1-9]\d* race")
_POISON = re.compile(r"^poisoned read|access checks failed: \d+ race\(s\), [1-9]")
_REFUSAL = re.compile(r"cannot be lowered|not lowered|is lowered only|lowered on axis|"
                      r"unsupported op type|is not supported|not supported yet")


def _finding_lines(text: str) -> str:
    """The race / poisoned-read reports (each with its instruction lines) and the count."""
    lines, keep = [], False
    for ln in text.splitlines():
        if _RACE.search(ln) or _POISON.search(ln) or _CHECKS.search(ln):
            keep = True
        elif not ln.startswith("  "):
            keep = False
        if keep:
            lines.append(ln)
    return "\n".join(lines[:16])


def classify(rc: Optional[int], stdout: str, stderr: str, timed_out: bool = False) -> Outcome:
    """The outcome of one `trnsim validate` run from its exit status and output."""
    out = stdout + stderr
    if timed_out:
        return Outcome("timeout", "timed out", output=out, rc=rc)
    if rc is not None and rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = str(-rc)
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        return Outcome("crash", f"killed by {sig}" + (f"\n{tail}" if tail else ""), output=out,
                       rc=rc)
    if rc == 0:
        return Outcome("pass", output=out, rc=rc)
    if rc == 1:
        # Races and poisoned reads first: they explain a wrong value too.
        m = _CHECKS.search(out) or _VERDICT.search(out)
        races, poisons = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        lines = out.splitlines()
        if races or any(_RACE.search(ln) for ln in lines):
            return Outcome("race", _finding_lines(out), output=out, rc=rc)
        if poisons or any(_POISON.search(ln) for ln in lines):
            return Outcome("poison", _finding_lines(out), output=out, rc=rc)
        bad = [ln.strip() for ln in lines if _ROW.match(ln) and " FAIL" in ln]
        if bad or ("FAIL" in stdout and "validate " in stdout):
            return Outcome("mismatch", "\n".join(bad[:8]) or "outputs differ", output=out, rc=rc)
        lines = stderr.strip().splitlines()
        first = next((k for k, ln in enumerate(lines) if ln.startswith("trnsim")), 0)
        msg = "\n".join(lines[first:first + 8])
        return Outcome("error", msg, output=out, rc=rc)
    msg = stderr.strip()[-2000:] or f"exit status {rc}"
    return Outcome("crash", f"exit status {rc}: {msg}", output=out, rc=rc)


def run_validate(binary: str, model_path: str, args: Sequence[str], timeout: float) -> Outcome:
    """`trnsim validate model args`, in its own process group (killed whole on timeout)."""
    cmd = [binary, "validate", model_path] + list(args)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    timed_out = False
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        so, se = p.communicate()
    o = classify(p.returncode, so, se, timed_out)
    o.seconds = time.monotonic() - t0
    return o


def validate_model(binary: str, model, args: Sequence[str], timeout: float,
                   workdir: Optional[str] = None) -> Outcome:
    """Validates an in-memory ONNX model; an error whose model goes through with the
    host fallback was a refusal of the lowering."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="trnsim-fuzz-", dir=workdir) as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        o = run_validate(binary, path, args, timeout)
        if o.cls == "error" and "--no-fallback" in args:
            if _REFUSAL.search(o.message):
                o.cls = "refused"
            else:
                fb = run_validate(binary, path, [a for a in args if a != "--no-fallback"],
                                  timeout)
                if fb.cls not in ("error", "crash", "timeout"):
                    o.cls = "refused"  # an UnsupportedError: the fallback took the node
        if o.cls == "mismatch":
            o.cls, why = judge_mismatch(binary, model, path, args, timeout)
            o.message += f"\n[{why}]"
        return o


def judge_mismatch(binary: str, model, path: str, args: Sequence[str],
                   timeout: float) -> Tuple[str, str]:
    """'mismatch' or 'inexact' for a model validate found outside tolerance: the
    float64 oracle decides when it can (oracle.triage); else a failure within 10x
    the tolerance (100x atol) counts as rounding the graph amplified."""
    from trnsim.fuzz import oracle

    seed = int(_arg(args, "--random-inputs") or 0)
    verdict, why = oracle.triage(binary, model, args, timeout, seed, run_validate)
    if verdict == "mismatch":
        return "mismatch", "oracle: " + why
    if verdict == "noise":
        return "inexact", "oracle: rounding noise: " + why
    prec = _arg(args, "--precision") or "bf16"
    rtol, atol = LOOSE.get(prec, LOOSE["bf16"])
    lo = run_validate(binary, path, list(args) + ["--rtol", str(rtol), "--atol", str(atol)],
                      timeout)
    if lo.cls == "pass":
        return "inexact", f"within rtol {rtol:g}, atol {atol:g} ({why})"
    return "mismatch", f"beyond rtol {rtol:g}, atol {atol:g} ({why})"


# Default tolerances of `trnsim validate` x10 (atol x100) per precision.
LOOSE = {"fp32": (1e-3, 1e-3), "bf16": (1e-1, 1e-1), "fp8": (5e-1, 5e-1)}


def _arg(args: Sequence[str], flag: str) -> Optional[str]:
    for k, x in enumerate(args):
        if x == flag and k + 1 < len(args):
            return args[k + 1]
        if x.startswith(flag + "="):
            return x[len(flag) + 1:]
    return None


@dataclass
class Summary:
    cases: int = 0
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, cls: str):
        self.cases += 1
        self.counts[cls] = self.counts.get(cls, 0) + 1

    @property
    def failed(self) -> int:
        return sum(self.counts.get(c, 0) for c in FAILURES)

    def line(self) -> str:
        by = ", ".join(f"{c} {self.counts[c]}" for c in FAILURES if self.counts.get(c))
        rate = self.cases / self.seconds if self.seconds > 0 else 0.0
        return (f"fuzz: {self.cases} cases in {self.seconds:.1f} s ({rate:.2f} cases/s): "
                f"{self.counts.get('pass', 0)} passed, {self.counts.get('inexact', 0)} inexact, "
                f"{self.counts.get('refused', 0)} refused, "
                f"{self.failed} failed" + (f" ({by})" if by else ""))
