"""Python side of trnsim: drive the `trnsim` command line from Python.

`trnsim.run_model` runs an ONNX file on the simulator and returns its outputs and a
`Report`; `trnsim.torch` (imported on demand, needs torch) exports a PyTorch module
to ONNX and runs it the same way. Nothing here links against the simulator: every
call goes through the `trnsim` binary found by `find_binary`.
"""

from trnsim._cli import TrnsimError, find_binary, run_model
from trnsim.report import Report

__all__ = ["Report", "TrnsimError", "find_binary", "run_model"]
