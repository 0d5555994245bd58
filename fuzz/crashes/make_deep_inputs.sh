#!/usr/bin/env bash
# Writes the deep-nesting reproducers (too large to keep in git) into DIR (default .):
# JSON nested 30000 levels deep inside a module's "machine", a records header's "workload",
# and a whole workload spec; each overflows the stack of its fuzz target. Also a 64 KB
# workload spec on which tune::parse_workload_spec takes ~1 GB and seconds (README.md).
set -euo pipefail
dir=${1:-.}
deep=$(python3 -c "print('[' * 30000 + ']' * 30000, end='')")
printf '{"format":"dietcode-module","version":1,"operator":{"op":"dense","N":64,"K":32,"M":[1,64]},"isa":"avx2","threads":1,"machine":{"cpu_model":"x","notes":%s},"kernels":[{"target":"cpu","isa":"avx2","mr":4,"nr":16,"kc":16,"mc":16,"nc":32,"loop_order":["n","k","m"],"parallel":"n","inner_tile_loop":"m","unroll_k":4,"pack_a":"packed","pack_b":"per_block"}],"dispatch":{"num_vars":1,"nodes":[{"kernel":0}]}}\n' \
  "$deep" >"$dir/module_file-deep-machine.json"
printf '{"format":"dietcode-records","version":1,"workload":%s}\n' "$deep" >"$dir/records-deep-header.jsonl"
printf '%s\n' "$deep" >"$dir/workload_spec-deep-nesting.json"
python3 -c "print('{\"' + 'k' * 30000 + '\": [' + ','.join(['0'] * 17000) + ']}')" \
  >"$dir/workload_spec-wide-keylines.json"
