#!/usr/bin/env bash
# Prepares and runs the ONNX Runtime twin of the serving workloads (mlp_infer_b1, concurrent_infer):
# fetches the runtime (get_onnxruntime.sh), writes the MLP as ONNX (make_mlp_onnx.py, with
# Debian's python3-onnx for /usr/bin/python3) and compiles ort_twin.cpp with g++, each only when
# missing or older than its source, all under build-bench/onnxruntime/ (git-ignored).
#   bench/ort/twin.sh [--only id,id] [--seconds S]   -> one JSON line per workload (ort_twin.cpp)
#   bench/ort/twin.sh --prepare                      -> only prepare; exit 0 when the twin can run
# When it cannot prepare (no npm registry, no python3-onnx, no g++) it prints one line on stderr
# saying why and exits with status 3, so that bench/run can go on without it.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=build-bench/onnxruntime
unavailable() { echo "$*" >&2; exit 3; }

prepare_only=0
if [ "${1:-}" = "--prepare" ]; then prepare_only=1; shift; fi

lib=$(bench/ort/get_onnxruntime.sh "$dir" 2>&1) || unavailable "$lib"
model=$dir/mlp.onnx
if [ ! -s "$model.check" ] || [ bench/ort/make_mlp_onnx.py -nt "$model.check" ]; then
  /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null ||
    unavailable "python3-onnx is missing for /usr/bin/python3 (apt-get install python3-onnx)"
  rm -f "$model.check"  # written last: its presence marks a whole model
  /usr/bin/python3 bench/ort/make_mlp_onnx.py "$model" || unavailable "make_mlp_onnx.py failed"
fi
twin=$dir/ort_twin
if [ ! -x "$twin" ] || [ bench/ort/ort_twin.cpp -nt "$twin" ] || [ bench/ort/ort_api.h -nt "$twin" ] || [ bench/ort/ort_session.h -nt "$twin" ]; then
  command -v g++ >/dev/null || unavailable "g++ is missing"
  g++ -std=c++20 -O2 -Wall -Wextra -pthread bench/ort/ort_twin.cpp -o "$twin.tmp" -ldl >&2 ||
    unavailable "ort_twin.cpp does not compile"
  mv "$twin.tmp" "$twin"
fi
[ "$prepare_only" = 1 ] && exit 0
exec "$twin" --lib "$lib" --model "$model" "$@"
