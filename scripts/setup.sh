#!/usr/bin/env bash
# Installs what dietcode needs to build, test and benchmark on Debian 12.
# Every package, and why it is here, is listed in README.md ("Dependencies").
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  g++ cmake ninja-build pkg-config \
  llvm-19-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev \
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev \
  libxgboost-dev chromium fonts-dejavu-core clang-19 libclang-rt-19-dev libomp-19-dev \
  libopenblas-dev libdnnl-dev libblis-dev libxsmm-dev gnuplot-nox stress-ng \
  libtorch-dev >/dev/null
# Node.js runs the ONNX Runtime peer of the encoder benchmark (bench/peers/ort/). A
# machine that already has node and npm (e.g. from another repository) keeps them.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# onnxruntime-node 1.30.0 (its CPU libonnxruntime is inside the package; bench/peers/ort/
# .npmrc skips its install script, which only fetches GPU providers). Without the npm
# registry the encoder benchmark runs without ONNX Runtime and says so.
root=$(cd "$(dirname "$0")/.." && pwd)
if ! npm ci --prefix "$root/bench/peers/ort" --no-audit --no-fund --loglevel=error >/dev/null; then
  echo "setup: npm ci in bench/peers/ort failed; the encoder benchmark will skip ONNX Runtime" >&2
fi
