#!/usr/bin/env bash
# Fuzzes the ONNX model parser for a bounded time:
#   tests/fuzz/run_fuzz_onnx.sh <seconds> [extra libFuzzer flags]
# Builds tests/fuzz/fuzz_onnx_model.cpp with clang (libFuzzer, ASan and UBSan on kiln's code;
# Debian's libonnx_proto and libprotobuf as they are) from the parser's sources alone, seeds it
# with the small models of tests/data/onnx (valid and broken) and runs it. Exits non-zero on a crash, a
# memory error, undefined behaviour, a leak or a time-out; the input is left in the work
# directory ($KILN_FUZZ_DIR, default build-fuzz-onnx/) as crash-*, leak-* or timeout-*.
set -euo pipefail

seconds=${1:?usage: tests/fuzz/run_fuzz_onnx.sh <seconds> [libFuzzer flags]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${KILN_FUZZ_DIR:-$root/build-fuzz-onnx}
cxx=${KILN_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [[ -z "$cxx" ]]; then
  echo "run_fuzz_onnx.sh: clang++ not found (Debian packages: clang, libclang-rt-14-dev)" >&2
  exit 2
fi

mkdir -p "$work/corpus" "$work/include/kiln"
for folder in base ops engine streams scheduler memory devices autograd nn optim io onnx; do
  ln -sfn "$root/$folder" "$work/include/kiln/$folder"
done
binary="$work/fuzz_onnx_model"
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DONNX_NAMESPACE=onnx -DONNX_ML=1 -I"$work/include" \
  "$root/tests/fuzz/fuzz_onnx_model.cpp" \
  "$root/onnx/graph_parser.cpp" "$root/onnx/graph.cpp" "$root/onnx/tensor_proto.cpp" "$root/onnx/host_tensor.cpp" \
  "$root/ops/vocabulary.cpp" \
  -lonnx_proto -lprotobuf -o "$binary"

cp "$root"/tests/data/onnx/*.onnx "$root"/tests/data/onnx/broken/*.onnx "$work/corpus/"

exec "$binary" "$work/corpus" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$work/" -print_final_stats=1 "$@"
