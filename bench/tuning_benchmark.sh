#!/usr/bin/env bash
# The tuning benchmark (issue 4): DietCode's joint tuning against per-shape
# (Ansor-style) tuning of the same space, on the BERT dense layer N=2304, K=768,
# seq 1..128 at batch 1; then both modules, the best-per-shape sweep (the oracle)
# and the vendor libraries measured side by side in one `dietcode bench` run.
#
#   bench/tuning_benchmark.sh [OUT_DIR]     (default docs/bench/tuning)
#   env: TRIALS (1000), TRIALS_PER_SHAPE (1000), THREADS (1), DIETCODE (build/dietcode)
set -euo pipefail
out=${1:-docs/bench/tuning}
trials=${TRIALS:-1000}
per_shape=${TRIALS_PER_SHAPE:-1000}
threads=${THREADS:-1}
dietcode=${DIETCODE:-build/dietcode}
sampled=5,24,43,62,81,100,119,128
mkdir -p "$out"
rm -f "$out/joint.records.jsonl" "$out/per-shape.records.jsonl"
op=(--op dense --N 2304 --K 768 --threads "$threads")

echo "== joint tuning: $trials trials over M = 1..128" >&2
start=$(date +%s.%N)
"$dietcode" tune "${op[@]}" --M 1..128 --trials "$trials" \
  --records "$out/joint.records.jsonl" --out "$out/joint.module.json" --no-bench > "$out/joint.log"
joint_s=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')

echo "== per-shape tuning: $per_shape trials for each M in $sampled" >&2
start=$(date +%s.%N)
"$dietcode" tune "${op[@]}" --M "$sampled" --range 1..128 --per-shape \
  --trials-per-shape "$per_shape" --records "$out/per-shape.records.jsonl" \
  --out "$out/per-shape.module.json" --no-bench > "$out/per-shape.log"
per_shape_s=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')

echo "== cost model on the joint records" >&2
"$dietcode" tune "${op[@]}" --M 1..128 --records "$out/joint.records.jsonl" \
  --evaluate-model > "$out/model.txt"

echo "== dietcode bench: both modules, the sweep and the peers, M = 1..128" >&2
"$dietcode" bench --workload bert-dense-2304x768 --M 1..128 --threads "$threads" \
  --module "$out/joint.module.json" --module "$out/per-shape.module.json" --sweep \
  --csv "$out/bench.csv" --plot "$out/bench.svg" > "$out/bench.txt"

{
  echo "tuning benchmark: dense N=2304 K=768, M = 1..128, $threads thread(s), $(date -u +%F)"
  echo "joint:     $trials trials, wall $(printf %.1f "$joint_s") s"
  echo "per-shape: $per_shape trials x 8 shapes ($sampled), wall $(printf %.1f "$per_shape_s") s;" \
       "extrapolated to 128 shapes: $(awk -v p="$per_shape_s" 'BEGIN { printf "%.0f", p * 16 }') s"
  echo "tuning time ratio (per-shape over 128 shapes / joint):" \
       "$(awk -v p="$per_shape_s" -v j="$joint_s" 'BEGIN { printf "%.1f", p * 16 / j }')x"
  grep -E "pairwise" "$out/model.txt"
  grep -E "geomean|speed ratio" "$out/bench.txt"
  # Over the 8 sampled shapes only (where per-shape tuning has its own kernels).
  awk -F, -v s=",$sampled," 'NR > 1 && index(s, "," $4 ",") {
      t[$2] += log($7); n[$2]++ }
    END { for (i in t) printf "sampled shapes geomean time %-20s %.4g ms\n", i, 1e3 * exp(t[i] / n[i]) }' \
    "$out/bench.csv" | sort
} | tee "$out/summary.txt"
