#!/usr/bin/env bash
# Fetches ONNX Runtime 1.30.0's CPU library for the ORT twin (bench/ort/ort_twin.cpp) and prints
# its path. The library comes from the npm package onnxruntime-node@1.30.0, which ships it
# prebuilt (bin/napi-v6/linux/x64/libonnxruntime.so.1, no headers: ort_api.h declares what the
# twin calls). `npm pack` only downloads the package: none of its scripts run (--ignore-scripts),
# nothing is installed; only the library is kept. Idempotent: once fetched, it is reused.
#   bench/ort/get_onnxruntime.sh [CACHE_DIR]     (default build-bench/onnxruntime, git-ignored)
# On failure: one line on stderr saying why, exit status 1.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=1.30.0
dir=${1:-build-bench/onnxruntime}
lib=$dir/$version/libonnxruntime.so.1
member=package/bin/napi-v6/linux/x64/libonnxruntime.so.1
fail() { echo "get_onnxruntime.sh: $*" >&2; exit 1; }

if [ ! -s "$lib" ]; then
  [ "$(uname -sm)" = "Linux x86_64" ] || fail "the npm package has no library for $(uname -sm) that the twin uses"
  command -v npm >/dev/null || fail "npm is missing (apt-get install npm)"
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  npm pack --silent --ignore-scripts --pack-destination "$tmp" "onnxruntime-node@$version" >"$tmp/npm.log" 2>&1 ||
    fail "npm pack onnxruntime-node@$version failed: $(tail -n 1 "$tmp/npm.log")"
  tar -xzf "$tmp/onnxruntime-node-$version.tgz" -C "$tmp" "$member" ||
    fail "onnxruntime-node-$version.tgz lacks $member"
  mkdir -p "$dir/$version"
  mv "$tmp/$member" "$lib"  # whole or not at all: a cut-off fetch leaves no library behind
fi
realpath "$lib"
