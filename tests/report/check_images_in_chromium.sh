#!/usr/bin/env bash
# Opens DIR/index.html in headless Chromium and checks that the page loaded every one of
# its images: the page's own script marks <html data-images="ok N"> once every <img> is
# complete with naturalWidth > 0 (or "broken <files>"), and --dump-dom prints the DOM
# after the load. N must be the number of <img> tags in the file, and at least one.
# Exits 77 (CTest's SKIP_RETURN_CODE) when Chromium is not installed.
set -euo pipefail
dir="$1"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium)"
  exit 77
fi
page="$(cd "$dir" && pwd)/index.html"
[ -f "$page" ] || { echo "FAIL: no $page"; exit 1; }
expected=$(grep -o '<img ' "$page" | wc -l)
[ "$expected" -ge 1 ] || { echo "FAIL: $page has no images"; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
url="file://$(printf '%s' "$page" | sed 's/%/%25/g; s/ /%20/g; s/#/%23/g; s/?/%3F/g')"
# --virtual-time-budget lets the load event (and its script) run before the DOM is dumped.
if ! timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$profile" --virtual-time-budget=10000 --dump-dom "$url" \
    >"$profile/dom.html" 2>"$profile/stderr.txt"; then
  echo "FAIL: chromium did not render $url"
  grep -v dbus "$profile/stderr.txt" | tail -20 || true
  exit 1
fi
mark=$(grep -o 'data-images="[^"]*"' "$profile/dom.html" | head -1 || true)
if [ "$mark" != "data-images=\"ok $expected\"" ]; then
  echo "FAIL: expected data-images=\"ok $expected\", the page says: ${mark:-nothing (did its script run?)}"
  grep -v dbus "$profile/stderr.txt" | tail -20 || true
  exit 1
fi
echo "PASS: all $expected images of $page loaded in $($browser --version 2>/dev/null || echo chromium)"
