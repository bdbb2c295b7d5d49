#!/usr/bin/env bash
# Installs every Debian package trnsim needs. Idempotent: does nothing (and needs no
# network) when all are present. Runs apt as root, or through sudo when available.
set -euo pipefail

PACKAGES=(
  # toolchain and build
  g++ cmake ninja-build pkg-config clang-format
  # simulator
  libsystemc-dev libyaml-cpp-dev libblis-serial-dev
  # tests; clang's libFuzzer for the parser fuzz targets
  libgtest-dev libgmock-dev clang libclang-rt-dev
  # compiler front end and conformance data
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # Python side (PyTorch export, numpy references, plots)
  python3-numpy python3-torch python3-torchvision python3-onnx python3-matplotlib python3-yaml
  # design-space sweeps: Dask scale-out, adaptive search
  python3-distributed python3-optuna
  # RTL co-simulation
  verilator
  # scripts/bench_models.py: peak RSS of each trnsim process (GNU time)
  time
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "bootstrap: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
