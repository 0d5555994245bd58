#!/usr/bin/env bash
# A tuning run killed with SIGKILL part-way, then started again with the same records
# file, finishes the budget without losing or repeating a finished trial.
set -euo pipefail
dietcode="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(tune --op dense --N 96 --K 64 --M 1..32 --trials 96 --measure-per-round 8
      --population 64 --records "$dir/r.jsonl" --out "$dir/m.json" --no-bench)
"$dietcode" "${args[@]}" --quiet &
pid=$!
# Kill it once a few records are on disk (the header is line 1).
for _ in $(seq 1 600); do
  if [ -f "$dir/r.jsonl" ] && [ "$(wc -l < "$dir/r.jsonl")" -ge 12 ]; then break; fi
  sleep 0.05
done
kill -9 "$pid"
wait "$pid" || true
before=$(( $(wc -l < "$dir/r.jsonl") - 1 ))
echo "killed after $before records"
[ "$before" -ge 11 ] && [ "$before" -lt 96 ] || { echo "FAIL: unexpected record count $before"; exit 1; }
[ ! -f "$dir/m.json" ] || { echo "FAIL: a module was written by the killed run"; exit 1; }
# Simulate a write torn by the kill, too.
printf '{"schedule": {"target": "cpu", "is' >> "$dir/r.jsonl"
out=$("$dietcode" "${args[@]}" 2>&1)
echo "$out" | grep -q "resuming: $before trials already" || { echo "FAIL: no resume line"; echo "$out"; exit 1; }
echo "$out" | grep -q "dropping an incomplete last record" || { echo "FAIL: torn record not reported"; echo "$out"; exit 1; }
echo "$out" | grep -qF "96 trials in total ($((96 - before)) this run" || { echo "FAIL: wrong totals"; echo "$out"; exit 1; }
# 96 trials, then the finalists' side-by-side records ("origin":"final", not trials), the
# selected kernels' crosscheck ("origin":"crosscheck") and the dispatch check between the
# sampled shapes ("origin":"dispatch-check", not trials either).
finals=$(grep -c '"origin":"final"' "$dir/r.jsonl" || true)
checks=$(grep -c '"origin":"crosscheck"' "$dir/r.jsonl" || true)
between=$(grep -c '"origin":"dispatch-check"' "$dir/r.jsonl" || true)
total=$(( $(wc -l < "$dir/r.jsonl") - 1 - finals - checks - between ))
[ "$total" -eq 96 ] || { echo "FAIL: $total trial records, expected 96"; exit 1; }
[ "$finals" -gt 0 ] || { echo "FAIL: no final records"; exit 1; }
[ -f "$dir/m.json" ] || { echo "FAIL: no module"; exit 1; }
echo "PASS: resumed from $before records, finished with $total"
