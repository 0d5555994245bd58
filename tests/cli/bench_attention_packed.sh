#!/bin/bash
# dietcode bench --workload modules on a model's attention module (Q, K, V packed in one
# input, the QKV projection's output): ours reads the packed input and the peers'
# composition separate copies of the same values; each is checked against float64 in its
# own output layout (a wrong one would be excluded and its row missing here). A module
# with a mask is refused with the reason.
# Usage: bench_attention_packed.sh DIETCODE PEERS_DIR
set -euo pipefail
tool=$1
peers_dir=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tool" tune --op attention --packed-qkv --batch 1 --N 4 --K 16 --M 1..8 --trials 8 --no-bench \
  --quiet --out "$dir/attention.module.json" > "$dir/tune.txt"
"$tool" bench --workload modules --module "$dir/attention.module.json" --M 1,3,7,11 \
  --seconds 0.001 --quiet --peers-dir "$peers_dir" --csv "$dir/bench.csv" > "$dir/table.txt"
ours=$(grep -c "^[^,]*,dietcode,1,\(1,1\|3,3\|7,7\|11,11\),16,.*,GFLOP/s$" "$dir/bench.csv" || true)
[ "$ours" = 4 ] || { echo "FAIL: $ours dietcode rows, expected 4"; cat "$dir/bench.csv"; exit 1; }
if [ -f "$peers_dir/libdietcode_peer_onednn.so" ]; then
  theirs=$(grep -c "^[^,]*,composition,1,.*,GFLOP/s$" "$dir/bench.csv" || true)
  [ "$theirs" = 4 ] || { echo "FAIL: $theirs composition rows, expected 4"; cat "$dir/table.txt"; exit 1; }
fi
grep -q "WRONG RESULT" "$dir/table.txt" && { echo "FAIL: a wrong result"; cat "$dir/table.txt"; exit 1; }
"$tool" tune --op attention --packed-qkv --mask --batch 1 --N 4 --K 16 --M 1..4 --trials 4 \
  --no-bench --quiet --out "$dir/masked.module.json" > /dev/null
if "$tool" bench --workload modules --module "$dir/masked.module.json" --M 2 --quiet \
  --peers-dir "$peers_dir" > /dev/null 2> "$dir/err"; then
  echo "FAIL: a masked attention module was benched"; exit 1
fi
grep -q "mask true: the peers' composition computes one sequence without a mask" "$dir/err" ||
  { echo "FAIL: no reason given"; cat "$dir/err"; exit 1; }
echo "attention with packed Q, K, V: ours and the composition measured, each checked in its layout"
