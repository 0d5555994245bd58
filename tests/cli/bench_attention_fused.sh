#!/bin/bash
# dietcode bench --workload bert-attention: the CSV has the fused layer's rows, ours at
# every T and, when the oneDNN plugin (the softmax) was built, the composition of peers
# too (each checked against float64 by the harness: a wrong result would be excluded,
# and its row missing here), with a rate under the roofline in GFLOP/s.
# Usage: bench_attention_fused.sh DIETCODE PEERS_DIR
set -euo pipefail
tool=$1
peers_dir=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tool" bench --workload bert-attention --M 1,17 --seconds 0.001 --quiet --peers-dir "$peers_dir" \
  --csv "$dir/bench.csv" > "$dir/table.txt"
head -1 "$dir/bench.csv"
layer=bert-attention-fused-b12
ours=$(grep -c "^$layer,dietcode,1,\(1,1\|17,17\),64,.*,GFLOP/s$" "$dir/bench.csv" || true)
[ "$ours" = 2 ] || { echo "FAIL: $ours dietcode rows for $layer, expected 2"; cat "$dir/bench.csv"; exit 1; }
if [ -f "$peers_dir/libdietcode_peer_onednn.so" ]; then
  theirs=$(grep -c "^$layer,composition,1,.*,GFLOP/s$" "$dir/bench.csv" || true)
  [ "$theirs" = 2 ] || { echo "FAIL: $theirs composition rows for $layer, expected 2"; cat "$dir/table.txt"; exit 1; }
  grep -q "composition = .*onednn\[softmax\]" "$dir/table.txt" ||
    { echo "FAIL: the composition's peers are not named"; cat "$dir/table.txt"; exit 1; }
fi
# rate (column 8) positive and at most the roofline (column 9)
awk -F, -v l="$layer" '$1 == l && !($8 > 0 && $8 <= $9) { print "FAIL: rate " $8 " vs roofline " $9; exit 1 }' "$dir/bench.csv"
grep -q "WRONG RESULT" "$dir/table.txt" && { echo "FAIL: a wrong result"; cat "$dir/table.txt"; exit 1; }
echo "bert-attention: the fused layer's rows (ours, and the composition if oneDNN is built) present"
