#!/usr/bin/env bash
# Exports a module and checks the library from C, as a user would see it:
#   export_test.sh DIETCODE MODULE NAME PROGRAM.c CC WORKDIR [CFLAGS...]
# 1. `dietcode export MODULE --name NAME $EXPORT_ARGS` writes libNAME.so and NAME.h;
# 2. the header compiles as C11 and C++ (-Wall -Wextra -Werror);
# 3. the library needs no LLVM, XGBoost or dietcode library, and exports only NAME_*;
# 4. PROGRAM.c, linked against the library and libm only, checks results and errors.
set -euo pipefail
dietcode=$1 module=$2 name=$3 program=$4 cc=$5 work=$6
shift 6
out=$work/$name
rm -rf "$out"
mkdir -p "$out"
# shellcheck disable=SC2086  # EXPORT_ARGS: words
"$dietcode" export "$module" --out "$out" --name "$name" ${EXPORT_ARGS:-}
lib=$out/lib$name.so
test -f "$lib" && test -f "$out/$name.h"

upper=$(tr '[:lower:]' '[:upper:]' <<<"$name")
"$cc" -std=c11 -pedantic -Wall -Wextra -Werror -O1 "$program" -o "$out/check" -I"$out" \
  -DEXPORT_HEADER="\"$name.h\"" "-DAPI(f)=${name}_##f" "-DCODE(c)=${upper}_##c" "$@" \
  -L"$out" -l"$name" -Wl,-rpath,"$out" -lm
echo "#include \"$name.h\"" | c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$out" -x c++ -

needed=$(readelf -d "$lib" | grep NEEDED || true)
echo "$needed"
if grep -Ei 'llvm|xgboost|dietcode|fmt|json' <<<"$needed"; then
  echo "FAIL: $lib depends on a library it must not need"
  exit 1
fi
leaked=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v "^${name}_" |
  grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' || true)
if [ -n "$leaked" ]; then
  echo "FAIL: $lib exports symbols beyond its C API:"
  echo "$leaked"
  exit 1
fi
if nm -u "$lib" | grep -q dietcode; then
  echo "FAIL: $lib leaves dietcode symbols undefined"
  exit 1
fi
"$out/check"
