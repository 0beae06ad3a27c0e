#!/usr/bin/env bash
# ONNX Runtime 1.30 runs the files onnx::export_model writes (bench/onnx/export_models.cpp) and
# compares its outputs with kiln's on the same input, at the batch each was recorded with and at
# one more (the files have a dynamic batch): one JSON line per model and batch from ort_twin.cpp,
# with "max_abs_diff". Needs a build configured with -DKILN_BUILD_BENCH=ON; fetches the runtime
# with bench/ort/get_onnxruntime.sh and compiles the twin with g++.
#   bench/onnx/export_check.sh [BUILD_DIR]     (default build-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-bench}
out=$build/onnx-export
mkdir -p "$out"
ninja -C "$build" kiln_onnx_export_models >&2
lib=$(bench/ort/get_onnxruntime.sh "$build/onnxruntime")
twin=$out/ort_twin
if [ ! -x "$twin" ] || [ bench/onnx/ort_twin.cpp -nt "$twin" ]; then
  g++ -std=c++20 -O2 -Ibench -DONNX_ML=1 -DONNX_NAMESPACE=onnx bench/onnx/ort_twin.cpp -o "$twin" \
    -ldl -lonnx_proto -lprotobuf >&2
fi
"$build/bench/kiln_onnx_export_models" "$out" | while read -r name expected shape; do
  "$twin" --lib "$lib" --model "$out/$name.onnx" --input input --shape "$shape" --id "export_${name}_b${shape%%,*}" \
    --seconds 0.5 --expect "$out/$expected"
done
