#!/usr/bin/env bash
# Prepares and runs the ONNX Runtime twin of the onnx_* workloads (onnx_resnet18 at batch 1 and
# 16, onnx_encoder): the runtime from bench/ort/get_onnxruntime.sh, ort_twin.cpp compiled with g++
# (ONNX's protobuf classes from Debian's libonnx-dev) when missing or older than its sources,
# both under build-bench/onnxruntime/ (git-ignored), run on the files that kiln imports (bench/run
# writes them with make_models.py into MODELS_DIR).
#   bench/onnx/twin.sh MODELS_DIR [--only id,id] [--seconds S]  -> JSON lines (ort_twin.cpp)
#   bench/onnx/twin.sh --prepare                               -> only prepare; exit 0 when it can run
# When it cannot prepare it prints one line on stderr saying why and exits with status 3, so that
# bench/run can go on without it.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=build-bench/onnxruntime
unavailable() { echo "$*" >&2; exit 3; }

prepare_only=0 models="" only="onnx_resnet18,onnx_encoder" seconds=3
if [ "${1:-}" = "--prepare" ]; then prepare_only=1; shift; else models=${1:?MODELS_DIR}; shift; fi
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "bench/onnx/twin.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

lib=$(bench/ort/get_onnxruntime.sh "$dir" 2>&1) || unavailable "$lib"
twin=$dir/onnx_ort_twin
if [ ! -x "$twin" ] || [ bench/onnx/ort_twin.cpp -nt "$twin" ] || [ bench/ort/ort_api.h -nt "$twin" ]; then
  command -v g++ >/dev/null || unavailable "g++ is missing"
  g++ -std=c++20 -O2 -Wall -Wextra -pthread -Ibench -DONNX_ML=1 -DONNX_NAMESPACE=onnx bench/onnx/ort_twin.cpp \
    -o "$twin.tmp" -ldl -lonnx_proto -lprotobuf >&2 || unavailable "bench/onnx/ort_twin.cpp does not compile (libonnx-dev?)"
  mv "$twin.tmp" "$twin"
fi
[ "$prepare_only" = 1 ] && exit 0

run() { "$twin" --lib "$lib" --seconds "$seconds" "$@"; }
IFS=, read -ra ids <<<"$only"
for id in "${ids[@]}"; do
  case "$id" in
    onnx_resnet18)
      run --model "$models/resnet18.onnx" --input input --shape 1,3,224,224 --id "$id"
      run --model "$models/resnet18.onnx" --input input --shape 16,3,224,224 --id "$id" --field ort_b16 ;;
    onnx_encoder) run --model "$models/encoder.onnx" --input x --shape 1,128,256 --id "$id" ;;
    *) echo "bench/onnx/twin.sh: no twin for '$id'" >&2; exit 2 ;;
  esac
done
