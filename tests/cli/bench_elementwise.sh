#!/bin/bash
# dietcode bench --workload bert-elementwise: the CSV has our rows for every row operator
# and T, and, when the oneDNN plugin was built, oneDNN's too (each checked against float64
# by the harness: a wrong result would be excluded, and its row missing here).
# Usage: bench_elementwise.sh DIETCODE PEERS_DIR
set -euo pipefail
tool=$1
peers_dir=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tool" bench --workload bert-elementwise --M 1,17 --seconds 0.001 --quiet --peers-dir "$peers_dir" \
  --csv "$dir/bench.csv" > "$dir/table.txt"
head -1 "$dir/bench.csv"
for layer in bert-layer_norm-768 bert-add_layer_norm-768 bert-softmax-12xTxT bert-gelu-3072; do
  ours=$(grep -c "^$layer,dietcode,1,.*,GB/s$" "$dir/bench.csv" || true)
  [ "$ours" = 2 ] || { echo "FAIL: $ours dietcode rows for $layer, expected 2"; cat "$dir/bench.csv"; exit 1; }
  if [ -f "$peers_dir/libdietcode_peer_onednn.so" ]; then
    theirs=$(grep -c "^$layer,onednn,1,.*,GB/s$" "$dir/bench.csv" || true)
    [ "$theirs" = 2 ] || { echo "FAIL: $theirs onednn rows for $layer, expected 2"; cat "$dir/table.txt"; exit 1; }
  fi
done
grep -q "WRONG RESULT" "$dir/table.txt" && { echo "FAIL: a wrong result"; cat "$dir/table.txt"; exit 1; }
echo "bert-elementwise: our rows and oneDNN's (if built) present"
