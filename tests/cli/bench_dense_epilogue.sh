#!/bin/bash
# dietcode bench with fused epilogues: the bert-dense-epilogue workload has our rows for
# every layer and T and, when the oneDNN plugin was built, oneDNN's own fused layer
# (post-ops) and the composition of the peers' GEMM and oneDNN's epilogue pass (each checked against float64 by the harness: a wrong
# result would be excluded, and its row missing here); a module tuned with an epilogue
# is measured through its dispatcher against the same composition.
# Usage: bench_dense_epilogue.sh DIETCODE PEERS_DIR DATA_DIR
set -euo pipefail
tool=$1
peers_dir=$2
data=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
onednn=0
[ -f "$peers_dir/libdietcode_peer_onednn.so" ] && onednn=1
expect_rows() {  # expect_rows CSV LAYER IMPL COUNT
  local n
  n=$(grep -c "^$2,$3,1,.*,GFLOP/s$" "$1" || true)
  [ "$n" = "$4" ] || { echo "FAIL: $n $3 rows for $2, expected $4"; cat "$1"; exit 1; }
}
"$tool" bench --workload bert-dense-epilogue --M 1,17 --kernels "$data/one_kernel.txt" \
  --seconds 0.001 --quiet --peers-dir "$peers_dir" --csv "$dir/bench.csv" > "$dir/table.txt"
head -1 "$dir/bench.csv"
for layer in bert-dense-768x768-bias+residual bert-dense-3072x768-bias+gelu \
  bert-dense-768x3072-bias+residual; do
  expect_rows "$dir/bench.csv" "$layer" dietcode 2
  if [ $onednn = 1 ]; then
    expect_rows "$dir/bench.csv" "$layer" composition 2
    expect_rows "$dir/bench.csv" "$layer" onednn 2  # oneDNN's matmul with post-ops
  fi
done
"$tool" tune --op dense --N 96 --K 64 --M 1..16 --epilogue bias+residual --trials 16 \
  --out "$dir/tuned.module.json" 2> "$dir/tune.log" > /dev/null
module=$dir/tuned.module.json
"$tool" bench --module "$module" --M 1,5,16 --seconds 0.001 --quiet --peers-dir "$peers_dir" \
  --csv "$dir/module.csv" > "$dir/module.txt"
layer=$(sed -n 2p "$dir/module.csv" | cut -d, -f1)
expect_rows "$dir/module.csv" "$layer" dietcode 3
[ $onednn = 1 ] && expect_rows "$dir/module.csv" "$layer" composition 3
# A bias-only module (BERT's QKV projection) against the peers' GEMM plus oneDNN's bias pass.
"$tool" tune --op dense --N 96 --K 64 --M 1..16 --epilogue bias --trials 16 \
  --out "$dir/bias.module.json" 2> "$dir/tune-bias.log" > /dev/null
"$tool" bench --module "$dir/bias.module.json" --M 1,5,16 --seconds 0.001 --quiet \
  --peers-dir "$peers_dir" --csv "$dir/bias.csv" > "$dir/bias.txt"
bias_layer=$(sed -n 2p "$dir/bias.csv" | cut -d, -f1)
expect_rows "$dir/bias.csv" "$bias_layer" dietcode 3
if [ $onednn = 1 ]; then
  expect_rows "$dir/bias.csv" "$bias_layer" composition 3
  grep -q "composition = .*onednn\[binary_add\]$" "$dir/bias.txt" ||
    { echo "FAIL: the bias composition does not end in oneDNN's binary add"; cat "$dir/bias.txt"; exit 1; }
fi
# With cold weights (the caches swept before each timed call): the same rows, checked
# against float64 all the same, the table saying so, the roofline from DRAM on every row.
"$tool" bench --module "$module" --M 1,5,16 --seconds 0.001 --quiet --peers-dir "$peers_dir" \
  --cold-weights --csv "$dir/cold.csv" > "$dir/cold.txt"
expect_rows "$dir/cold.csv" "$layer" dietcode 3
[ $onednn = 1 ] && expect_rows "$dir/cold.csv" "$layer" composition 3
grep -q "^$layer (1 thread, weights cold), GFLOP/s$" "$dir/cold.txt" ||
  { echo "FAIL: no cold-weights table"; cat "$dir/cold.txt"; exit 1; }
rows=$(grep -cE "^ +[0-9]+ +96 +64 " "$dir/cold.txt" || true)
dram=$(grep -cE "^ +[0-9]+ +96 +64 .* DRAM +[0-9]+%( +disturbed)?$" "$dir/cold.txt" || true)
[ "$rows" = 3 ] && [ "$dram" = 3 ] ||
  { echo "FAIL: $dram of $rows cold rows placed against DRAM, expected 3 of 3"; cat "$dir/cold.txt"; exit 1; }
if grep -q "WRONG RESULT" "$dir/table.txt" "$dir/module.txt" "$dir/bias.txt" "$dir/cold.txt"; then
  echo "FAIL: a wrong result"
  cat "$dir/table.txt" "$dir/module.txt" "$dir/bias.txt" "$dir/cold.txt"
  exit 1
fi
echo "bert-dense-epilogue, a tuned bias+residual module (warm and cold) and a bias module: our rows and the composition's present"
