#!/usr/bin/env bash
# Modules of the same operator (here: two seeds) are measured side by side on one layer;
# a module of another operator gets a layer of its own.
set -euo pipefail
dietcode="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tune=(tune --op dense --K 64 --M 1..8 --trials 8 --measure-per-round 4 --population 32
      --no-bench --quiet)
"$dietcode" "${tune[@]}" --N 48 --seed 1 --records "$dir/a.jsonl" --out "$dir/seed1.json" >/dev/null
"$dietcode" "${tune[@]}" --N 48 --seed 2 --records "$dir/b.jsonl" --out "$dir/seed2.json" >/dev/null
"$dietcode" "${tune[@]}" --N 32 --seed 1 --records "$dir/c.jsonl" --out "$dir/other.json" >/dev/null
"$dietcode" bench --module "$dir/seed1.json" --module "$dir/seed2.json" --module "$dir/other.json" \
  --M 1,7 --peers none --seconds 0.001 --quiet --csv "$dir/bench.csv" > "$dir/bench.txt"
cat "$dir/bench.csv"
# workload,impl,threads,M,N,K,...: both seeds on the N=48 rows, the third alone on N=32.
for impl in dietcode-seed1 dietcode-seed2; do
  n=$(awk -F, -v i="$impl" '$2 == i && $5 == 48' "$dir/bench.csv" | wc -l)
  [ "$n" -eq 2 ] || { echo "FAIL: $impl has $n rows at N=48, expected 2 (M = 1, 7)"; exit 1; }
done
# (alone on its layer, the module is "dietcode")
n=$(awk -F, '$1 == "other" && $2 == "dietcode" && $5 == 32' "$dir/bench.csv" | wc -l)
[ "$n" -eq 2 ] || { echo "FAIL: the other module has $n rows at N=32, expected 2"; exit 1; }
n=$(awk -F, '$2 ~ /^dietcode-seed/ && $5 != 48' "$dir/bench.csv" | wc -l)
[ "$n" -eq 0 ] || { echo "FAIL: a seed module measured on another layer"; exit 1; }
echo "PASS: modules of one operator side by side"
