#!/usr/bin/env bash
# Corrupt or foreign records and modules are refused with the file and the place named,
# and the records file is left untouched.
set -euo pipefail
dietcode="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(tune --op dense --N 64 --K 32 --M 1..8 --trials 8 --measure-per-round 8 --population 32
      --out "$dir/m.json" --quiet --no-bench)
"$dietcode" "${args[@]}" --records "$dir/r.jsonl" > /dev/null
expect() {  # expect <pattern> <command...>
  local pattern="$1"; shift
  local out
  if out=$("$@" 2>&1); then echo "FAIL: succeeded: $*"; exit 1; fi
  echo "$out" | grep -qF -- "$pattern" || { echo "FAIL: expected '$pattern' in: $out"; exit 1; }
}
# A corrupt record in the middle: error with byte offset; file unchanged.
cp "$dir/r.jsonl" "$dir/bad.jsonl"
offset=$(head -3 "$dir/bad.jsonl" | wc -c)
sed -i '4s/^{/#/' "$dir/bad.jsonl"
sum=$(md5sum < "$dir/bad.jsonl")
expect "$dir/bad.jsonl: byte offset $offset (line 4): not valid JSON" "$dietcode" "${args[@]}" --records "$dir/bad.jsonl"
[ "$(md5sum < "$dir/bad.jsonl")" = "$sum" ] || { echo "FAIL: the records file was modified"; exit 1; }
# Records of another workload.
other=(tune --op dense --N 64 --K 48 --M 1..8 --trials 8 --records "$dir/r.jsonl" --out "$dir/x.json" --no-bench)
expect "these records are for another workload" "$dietcode" "${other[@]}"
# Records of another machine.
sed '1s/"cpu_model":"[^"]*"/"cpu_model":"Elsewhere 9000"/' "$dir/r.jsonl" > "$dir/foreign.jsonl"
expect "measured on another machine (Elsewhere 9000" "$dietcode" "${args[@]}" --records "$dir/foreign.jsonl"
# Modules: truncated, wrong version, not a module.
head -c 200 "$dir/m.json" > "$dir/truncated.json"
expect "$dir/truncated.json: not a valid module file" "$dietcode" bench --module "$dir/truncated.json" --M 1 --quiet
sed 's/"version": 1/"version": 7/' "$dir/m.json" > "$dir/v7.json"
expect "module format version 7 is not supported" "$dietcode" bench --module "$dir/v7.json" --M 1 --quiet
echo '{"hello": 1}' > "$dir/other.json"
expect "missing field 'format'" "$dietcode" bench --module "$dir/other.json" --M 1 --quiet
echo PASS
