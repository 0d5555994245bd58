#!/usr/bin/env bash
# `dietcode tune --report` end to end: a short joint tuning run of a small dense layer,
# benchmarked against whatever peers are installed, writes a report whose page names
# every plot file beside it, and (when Chromium is installed) every image loads.
set -euo pipefail
dietcode="$1"
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$dietcode" tune --op dense --N 64 --K 48 --M 1..12 --trials 24 --measure-per-round 8 \
  --population 64 --threads 1 --bench-seconds 0.001 --out "$dir/m.json" \
  --report "$dir/report" --quiet
page="$dir/report/index.html"
[ -f "$page" ] || { echo "FAIL: no $page"; exit 1; }
for img in $(grep -o '<img src="[^"]*"' "$page" | sed 's/<img src="//; s/"$//'); do
  [ -s "$dir/report/$img" ] || { echo "FAIL: $img is referenced but missing or empty"; exit 1; }
done
for plot in tuning gflops kernels; do
  grep -q "src=\"op1-operator-$plot.svg\"" "$page" || { echo "FAIL: no $plot plot"; exit 1; }
done
grep -q "dietcode (this module)" "$page" || { echo "FAIL: the benchmark is not on the page"; exit 1; }
bash "$here/check_images_in_chromium.sh" "$dir/report"
