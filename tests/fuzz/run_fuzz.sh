#!/usr/bin/env bash
# Fuzzes the safetensors header parser for a bounded time:
#   tests/fuzz/run_fuzz.sh <seconds> [extra libFuzzer flags]
# Builds tests/fuzz/fuzz_safetensors_header.cpp with clang (libFuzzer, ASan and UBSan) from only
# the sources it needs — a few seconds, no library build — seeds it with the malformed corpus and
# the valid files of tests/data/io, and runs it. Exits non-zero when it finds a crash, a memory
# error, undefined behavior, a leak or a time-out; the input that did it is left in the work
# directory ($KILN_FUZZ_DIR, default build-fuzz/) as crash-*, leak-* or timeout-*.
set -euo pipefail

seconds=${1:?usage: tests/fuzz/run_fuzz.sh <seconds> [libFuzzer flags]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${KILN_FUZZ_DIR:-$root/build-fuzz}
cxx=${KILN_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [[ -z "$cxx" ]]; then
  echo "run_fuzz.sh: clang++ not found (Debian packages: clang, libclang-rt-14-dev)" >&2
  exit 2
fi

mkdir -p "$work/corpus" "$work/include/kiln"
# kiln's headers are spelled "kiln/<folder>/...": a view of the folders, as the build makes one.
for folder in base ops engine streams scheduler memory devices autograd nn optim io; do
  ln -sfn "$root/$folder" "$work/include/kiln/$folder"
done
binary="$work/fuzz_safetensors_header"
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$work/include" \
  "$root/tests/fuzz/fuzz_safetensors_header.cpp" \
  "$root/io/safetensors_header.cpp" "$root/io/header_json.cpp" "$root/io/dtype_conversion.cpp" \
  "$root/ops/vocabulary.cpp" \
  -o "$binary"

# The seeds are copied: libFuzzer adds what it finds to its first corpus directory.
cp "$root"/tests/data/io/*.safetensors "$root"/tests/data/io/malformed/*.safetensors "$work/corpus/"

exec "$binary" "$work/corpus" \
  -dict="$root/tests/fuzz/safetensors.dict" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$work/" -print_final_stats=1 "$@"
