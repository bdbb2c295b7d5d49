#!/usr/bin/env bash
# The main job: install what is missing, build, then run the example PyTorch models
# (examples/models.py: an MLP, a small CNN, a transformer encoder block) on the
# default trn2 config in bf16 through the Python front door (trnsim.torch.run) and
# print a report per model; a Perfetto trace per model goes to out/demo/.
# Extra arguments go to scripts/demo.py (e.g. `--config trn1 mlp`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh" "$root/build"
export TRNSIM_BIN="$root/build/runtime/trnsim"
export PYTHONPATH="$root/runtime/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 "$root/scripts/demo.py" --out "$root/out/demo" "$@"
