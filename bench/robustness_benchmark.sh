#!/usr/bin/env bash
# Tuning robustness on a shared machine (issue 13): the same 250-trial joint tuning of
# the BERT 768x768 dense layer (M = 1..128, the main job's budget) with three seeds, and
# once more while a neighbour keeps one core busy (stress-ng --cpu 1) during tuning; then
# the four modules, the sweep oracle and the vendor libraries measured side by side in
# one quiet `dietcode bench` run.
#
#   bench/robustness_benchmark.sh [OUT_DIR]     (default docs/bench/robustness)
#   env: TRIALS (250), THREADS (1), N (768), K (768), DIETCODE (build/dietcode)
set -euo pipefail
out=${1:-docs/bench/robustness}
trials=${TRIALS:-250}
threads=${THREADS:-1}
n=${N:-768}
k=${K:-768}
dietcode=${DIETCODE:-build/dietcode}
mkdir -p "$out"
op=(--op dense --N "$n" --K "$k" --M 1..128 --threads "$threads" --trials "$trials" --no-bench)

tune_one() {  # tune_one NAME SEED
  rm -f "$out/$1.records.jsonl"
  local start=$SECONDS
  "$dietcode" tune "${op[@]}" --seed "$2" --records "$out/$1.records.jsonl" \
    --out "$out/$1.module.json" > "$out/$1.log"
  echo "$1: tuned in $((SECONDS - start)) s" >&2
}

for seed in 1 2 3; do tune_one "seed$seed" "$seed"; done

command -v stress-ng >/dev/null || { echo "stress-ng not found (apt-get install stress-ng)" >&2; exit 2; }
stress-ng --cpu 1 --timeout 0 --quiet &
neighbour=$!
trap 'kill $neighbour 2>/dev/null || true' EXIT
tune_one busy 1
kill $neighbour
wait $neighbour 2>/dev/null || true

echo "== dietcode bench: the four modules, the sweep and the peers" >&2
"$dietcode" bench --M 1,2,3,5,8,13,16,23,32,37,48,64,77,96,100,113,127,128 --threads "$threads" \
  --sweep --module "$out/seed1.module.json" --module "$out/seed2.module.json" \
  --module "$out/seed3.module.json" --module "$out/busy.module.json" \
  --csv "$out/bench.csv" > "$out/bench.txt"
tail -n 30 "$out/bench.txt"
