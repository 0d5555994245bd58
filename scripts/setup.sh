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
  libopenblas-dev libdnnl-dev libblis-dev libxsmm-dev gnuplot-nox stress-ng >/dev/null
