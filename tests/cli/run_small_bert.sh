#!/bin/bash
# dietcode tune + dietcode run end to end on a small BERT encoder (hidden 64, 4 heads of
# 16, FFN 136, T tuned over 1..16): a workload spec names the model's six operators as
# bert-base does, `tune` writes the model directory, `weights --random` the weights, and
# `run --check` runs the encoder at T inside and past the tuned range against the float64
# encoder (it exits 1 beyond tolerance). Bad input is refused with a message.
# Usage: run_small_bert.sh DIETCODE
set -euo pipefail
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/small.json" <<'JSON'
{"name": "small-bert", "operators": [
  {"name": "qkv", "op": "dense", "N": 192, "K": 64, "M": [1, 16], "epilogue": "bias"},
  {"name": "attention", "op": "attention", "N": 4, "K": 16, "M": [1, 16], "packed_qkv": true},
  {"name": "out", "op": "dense", "N": 64, "K": 64, "M": [1, 16], "epilogue": "bias+residual"},
  {"name": "ln", "op": "layer_norm", "N": 64, "M": [1, 16], "eps": 1e-12},
  {"name": "ffn1", "op": "dense", "N": 136, "K": 64, "M": [1, 16], "epilogue": "bias+gelu"},
  {"name": "ffn2", "op": "dense", "N": 64, "K": 136, "M": [1, 16], "epilogue": "bias+residual"}
]}
JSON
# --refine: the model's dispatch decided again inside it once tuned (its report in the output).
"$tool" tune "$dir/small.json" --trials 12 --out "$dir/model" --refine --no-bench --quiet \
  > "$dir/tune.out" 2>&1 || { cat "$dir/tune.out"; exit 1; }
# Refinement loads the model first: every kernel compiled (into the model's code cache).
grep -q "^refined inside the model: model loaded in [0-9.]* s (modules read + JIT, kernels and dispatchers: [1-9][0-9]* compiled, 0 from the code cache)$" "$dir/tune.out" &&
  grep -q "^[0-9]* comparisons inside the model (20 pairs of calls each; [0-9]* stopped after 8 pairs" "$dir/tune.out" ||
  { echo "FAIL: tune --refine"; cat "$dir/tune.out"; exit 1; }
if "$tool" tune --op dense --N 64 --K 64 --M 1..8 --trials 4 --out "$dir/op.json" --refine \
  > "$dir/err.out" 2>&1 || ! grep -q "refine decides a model's dispatch" "$dir/err.out"; then
  echo "FAIL: tune --op --refine"; cat "$dir/err.out"; exit 1
fi
"$tool" weights "$dir/w.st" --random --layers 2 --hidden 64 --heads 4 --ffn 136 > /dev/null
for t in 1 7 16 45; do
  "$tool" run "$dir/model" --weights "$dir/w.st" --seq $t --repeat 2 --check > "$dir/run.out" ||
    { cat "$dir/run.out"; exit 1; }
  grep -q "^T = $t, 1 thread: median" "$dir/run.out" || { cat "$dir/run.out"; exit 1; }
  grep -q "^check: relative error" "$dir/run.out" || { cat "$dir/run.out"; exit 1; }
done
"$tool" run "$dir/model" --weights "$dir/w.st" --seq 3 --layers 1 --threads 2 --check > "$dir/run.out"
grep -q "^model .*: 1 layers, hidden 64, 4 heads, ffn 136" "$dir/run.out" || { cat "$dir/run.out"; exit 1; }
# Two model directories side by side (--against): the same modules in a copy, so the outputs
# agree exactly; the ratio and its interval, and one row per distinct operator (six).
cp -r "$dir/model" "$dir/model2"
"$tool" run "$dir/model" --weights "$dir/w.st" --seq 9 --repeat 6 --profile --against "$dir/model2" \
  > "$dir/ab.out" || { cat "$dir/ab.out"; exit 1; }
grep -q "^T = 9, 1 thread, 6 pairs of calls (ABBA): A .* median [0-9.]* ms, B .*model2 median [0-9.]* ms$" "$dir/ab.out" &&
  grep -q "^time B / A: [0-9.]* (95% interval [0-9.]* to [0-9.]*; < 1: B faster); outputs differ by at most 0.0e+00 of the largest$" "$dir/ab.out" &&
  [ "$(grep -c "^  [0-9.]* ([0-9.]* to [0-9.]*) " "$dir/ab.out")" = 6 ] ||
  { echo "FAIL: --against"; cat "$dir/ab.out"; exit 1; }
# The interval brackets the ratio.
awk '/^time B \/ A:/ { r = $5; lo = $8; hi = $10; sub(";", "", hi); if (!(lo <= r && r <= hi)) { print "FAIL: interval: " $0; exit 1 } }' \
  "$dir/ab.out" || exit 1
if "$tool" run "$dir/model" --weights "$dir/w.st" --against "$dir/none" > "$dir/err.out" 2>&1 ||
  ! grep -q "$dir/none" "$dir/err.out"; then
  echo "FAIL: --against a missing directory"; cat "$dir/err.out"; exit 1
fi
if "$tool" run "$dir/model" --weights "$dir/w.st" --against "$dir/model2" --check > "$dir/err.out" 2>&1 ||
  ! grep -q "one at a time" "$dir/err.out"; then
  echo "FAIL: --against with --check"; cat "$dir/err.out"; exit 1
fi
# refine: the dispatch decided again inside the model (a copy); the summary line, each move
# in its form, and the refined model still matches float64.
"$tool" refine "$dir/model2" --weights "$dir/w.st" --lengths 2,9,16 --pairs 4 --accept-below 1 \
  --quiet > "$dir/refine.out" || { cat "$dir/refine.out"; exit 1; }
# (The copy's code cache came with it: nothing compiled.)
grep -q "^model loaded in [0-9.]* s (modules read + JIT, kernels and dispatchers: 0 compiled, [1-9][0-9]* from the code cache)$" "$dir/refine.out" &&
  grep -q "^[0-9]* comparisons inside the model (4 pairs of calls each; 0 stopped after 8 pairs, the kernel ruled out; 1 thread) in [0-9.]* s$" "$dir/refine.out" &&
  ! grep -v "^model loaded in \|^[0-9]* comparisons\|^no length moved\|^[a-z0-9]* T = [0-9]*\.\.[0-9]*: kernel [0-9]* -> [0-9]* (at T = [0-9]*: time [0-9.]*, 95% interval [0-9.]* to [0-9.]*)$\|^wrote .*\.module\.json (the old one kept as .*\.before-refine)$" "$dir/refine.out" ||
  { echo "FAIL: refine output"; cat "$dir/refine.out"; exit 1; }
"$tool" run "$dir/model2" --weights "$dir/w.st" --seq 9 --repeat 2 --check > "$dir/run.out" ||
  { echo "FAIL: the refined model"; cat "$dir/run.out"; exit 1; }
for bad in "--pairs 1" "--accept-below 1.5" "--modules qkv,ffn3" "--screen-pairs 3"; do
  if "$tool" refine "$dir/model2" --weights "$dir/w.st" $bad --quiet > "$dir/err.out" 2>&1; then
    echo "FAIL: refine $bad accepted"; exit 1
  fi
done
rm "$dir/model2/random-12-layers.safetensors"  # written by tune --refine, copied with the model
if "$tool" refine "$dir/model2" --quiet > "$dir/err.out" 2>&1 ||
  ! grep -q "random-12-layers.safetensors: missing" "$dir/err.out"; then
  echo "FAIL: refine without weights"; cat "$dir/err.out"; exit 1
fi
# The encoder benchmark on this model: our rows for every (layers, T), and each peer that
# is installed (libtorch's plugin, ONNX Runtime's node_modules) with outputs matching ours.
"$tool" bench --workload bert-base-encoder --model "$dir/model" --weights "$dir/w.st" \
  --layers 1,2 --M 1,5,20 --repeat 2 --quiet --csv "$dir/enc.csv" --plot "$dir/enc.svg" \
  > "$dir/enc.txt" || { cat "$dir/enc.txt"; exit 1; }
# The plot: a panel per layer count, our line with its roofline beside it (each title in
# the SVG once per panel).
[ "$(grep -c "BERT encoder, [12] layers, 1 threads" "$dir/enc.svg")" = 2 ] &&
  grep -q ">roofline<" "$dir/enc.svg" && grep -q ">dietcode<" "$dir/enc.svg" ||
  { echo "FAIL: plot"; exit 1; }
grep -q "^geomean ratio to the best peer\|^BERT encoder, 2 layers, 1 thread" "$dir/enc.txt" ||
  { cat "$dir/enc.txt"; exit 1; }
[ "$(grep -c ',dietcode,' "$dir/enc.csv")" = 6 ] || { cat "$dir/enc.csv"; exit 1; }
# Our share of the roofline on geomean, the read rate the fastest of a loop before the three
# rounds and one after each, and the FMA peak the fastest probe so far (one after each round).
[ "$(grep -c "^geomean share of the roofline [0-9]*% (min [0-9]*%) over 3 lengths, each at most 100%" "$dir/enc.txt")" = 2 ] &&
  [ "$(grep -c "the fastest of 4 read loops, one before the rounds and one after each" "$dir/enc.txt")" = 2 ] &&
  [ "$(grep -c "FMA peak [0-9.]* GFLOP/s (the fastest probe so far: [0-9.]* before these rounds, then after each: [0-9.]*, [0-9.]*, [0-9.]*)" "$dir/enc.txt")" = 2 ] ||
  { echo "FAIL: roofline summary"; cat "$dir/enc.txt"; exit 1; }
# Three rounds (the default): every row carries three round medians, and its median is the
# middle one of them.
awk -F, 'NR > 1 { n = split($10, r, " "); if (n != 3) { print "FAIL: rounds: " $0; bad = 1; next }
  lo = r[1] + 0; hi = lo; for (i = 2; i <= 3; i++) { v = r[i] + 0; if (v < lo) lo = v; if (v > hi) hi = v }
  mid = r[1] + r[2] + r[3] - lo - hi; d = mid - $5; if (d < 0) d = -d
  if (d > 1e-3) { print "FAIL: median: " $0; bad = 1 } }
  END { exit bad }' "$dir/enc.csv" || exit 1
peers_dir=$(dirname "$tool")/peers
src=$(cd "$(dirname "$0")/../.." && pwd)
expect_peer() {  # expect_peer ENGINE: 6 rows, each output within 1e-4 of ours
  [ "$(grep -c ",$1," "$dir/enc.csv")" = 6 ] || { echo "FAIL: $1 rows"; cat "$dir/enc.csv" "$dir/enc.txt"; exit 1; }
  awk -F, -v e="$1" '$4 == e && !($8 < 1e-4) { print "FAIL: " $0; bad = 1 } END { exit bad }' \
    "$dir/enc.csv" || exit 1
}
if [ -f "$peers_dir/libdietcode_model_peer_torch.so" ]; then
  expect_peer libtorch
  expect_peer libtorch-script
fi
if [ -d "$src/bench/peers/ort/node_modules/onnxruntime-node" ] && command -v node >/dev/null; then
  expect_peer onnxruntime-standard
  expect_peer onnxruntime-fused
  # An ONNX Runtime process that fails, at its start or on a request: noted with its error
  # output, once (not asked again), and the other engines still timed.
  for fake in start request; do
    mkdir -p "$dir/fake-$fake/node_modules/onnxruntime-node"
  done
  echo 'process.stderr.write("fake: no session\n"); process.exit(1);' \
    > "$dir/fake-start/bert_encoder.mjs"
  cat > "$dir/fake-request/bert_encoder.mjs" <<'JS'
console.log(JSON.stringify({ engine: 'onnxruntime', version: 'fake', session_ms: 1 }));
process.stdin.once('data', () => { process.stderr.write('fake: died on a request\n'); process.exit(3); });
JS
  for fake in start request; do
    "$tool" bench --workload bert-base-encoder --model "$dir/model" --weights "$dir/w.st" \
      --layers 1 --M 1,5 --repeat 2 --rounds 2 --peers onnxruntime \
      --ort-script "$dir/fake-$fake/bert_encoder.mjs" > "$dir/fake-$fake.txt" 2>&1 ||
      { cat "$dir/fake-$fake.txt"; exit 1; }
    grep -q "^ *5 .*%" "$dir/fake-$fake.txt" || { echo "FAIL: no row"; cat "$dir/fake-$fake.txt"; exit 1; }
  done
  grep -q "onnxruntime (standard graph): skipped: exit status 1: fake: no session" \
    "$dir/fake-start.txt" || { cat "$dir/fake-start.txt"; exit 1; }
  grep -q "onnxruntime (standard graph) T = 1: exit status 3: fake: died on a request" \
    "$dir/fake-request.txt" && ! grep -q "graph) T = 5" "$dir/fake-request.txt" ||
    { echo "FAIL: fake-request"; cat "$dir/fake-request.txt"; exit 1; }
fi
if command -v node >/dev/null; then
  # A peer at least twice the fastest peer's time at a length in the first round is timed
  # with one call a round after it: a fake ONNX Runtime whose standard graph reports 40 ms
  # and fused graph 1 ms, logging each request (T and the number of timed runs). Its
  # standard graph's first answer at T = 5 is an error: without a first round there, it
  # is timed in full in every later round at T = 5.
  mkdir -p "$dir/fake-speeds/node_modules/onnxruntime-node"
  cat > "$dir/fake-speeds/bert_encoder.mjs" <<'JS'
import fs from 'fs';
const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const graph = arg('--graph'), io = arg('--io');
console.log(JSON.stringify({ engine: 'onnxruntime', version: 'fake', session_ms: 1 }));
let pending = '', failed = false;
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let i; (i = pending.indexOf('\n')) >= 0; pending = pending.slice(i + 1)) {
    const [t, r] = pending.slice(0, i).split(' ');
    fs.appendFileSync(`${process.env.FAKE_ORT_LOG}-${graph}`, `${t} ${r}\n`);
    fs.copyFileSync(`${io}/input-${t}.bin`, `${io}/ort-${graph}-output-${t}.bin`);
    const ms = graph === 'standard' ? 40 : 1;
    if (graph === 'standard' && t === '5' && !failed) {
      failed = true;
      console.log(JSON.stringify({ error: 'fake: failed once' }));
    } else {
      console.log(JSON.stringify({ median_ms: ms, best_ms: ms, worst_ms: ms }));
    }
  }
});
JS
  FAKE_ORT_LOG="$dir/requests" "$tool" bench --workload bert-base-encoder --model "$dir/model" \
    --weights "$dir/w.st" --layers 1 --M 1,5 --repeat 6 --rounds 3 --peers onnxruntime \
    --ort-script "$dir/fake-speeds/bert_encoder.mjs" > "$dir/fake-speeds.txt" 2>&1 ||
    { cat "$dir/fake-speeds.txt"; exit 1; }
  # Round 1 in order, round 2 reversed, round 3 in order; two timed runs a round (6 / 3).
  [ "$(tr '\n' ' ' < "$dir/requests-standard")" = "1 2 5 2 5 2 1 1 1 1 5 2 " ] &&
    [ "$(tr '\n' ' ' < "$dir/requests-fused")" = "1 2 5 2 5 2 1 2 1 2 5 2 " ] &&
    grep -q "onnxruntime (standard graph) T = 5: .*median_ms" "$dir/fake-speeds.txt" &&
    grep -q "1 layers, 1 threads: onnxruntime-standard at 1 of 2 lengths at least 2x the fastest peer's time in the first round, one call per later round there" \
      "$dir/fake-speeds.txt" ||
    { echo "FAIL: fake-speeds"; cat "$dir/requests-standard" "$dir/requests-fused" "$dir/fake-speeds.txt"; exit 1; }
fi
# Bad input: T = 0, no rounds, a missing module, weights of another size.
"$tool" bench --workload bert-base-encoder --model "$dir/model" --weights "$dir/w.st" \
  --layers 1 --M 1 --rounds 0 2> "$dir/err" && exit 1
grep -q "rounds 0: expected >= 1" "$dir/err" || { cat "$dir/err"; exit 1; }
"$tool" run "$dir/model" --weights "$dir/w.st" --seq 0 2> "$dir/err" && exit 1
grep -q "seq 0" "$dir/err" || { cat "$dir/err"; exit 1; }
"$tool" weights "$dir/big.st" --random --layers 1 --hidden 96 --heads 4 --ffn 136 > /dev/null
"$tool" run "$dir/model" --weights "$dir/big.st" --seq 3 2> "$dir/err" && exit 1
grep -q "qkv.module.json computes dense N=192 K=64" "$dir/err" || { cat "$dir/err"; exit 1; }
rm "$dir/model/ln.module.json"
"$tool" run "$dir/model" --weights "$dir/w.st" --seq 3 2> "$dir/err" && exit 1
grep -q "ln.module.json: missing" "$dir/err" || { cat "$dir/err"; exit 1; }
echo "ok"
