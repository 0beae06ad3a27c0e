#!/usr/bin/env bash
# kiln's data-parallel workloads (shared/WORKLOADS.md) on this machine, from prebuilt binaries (no
# compiler needed): dist_fashion_mnist_epoch, the main job's epoch at 1, 2 and 4 processes over the
# same cores, dist_fashion_mnist_epoch_no_exchange (not run by default), the same epoch with each
# rank stepping on its own gradients: the probe of what the cores allow with no communication, and allreduce, the process group's all-reduce of 1 to 256 MiB f32 at 2 and 4
# processes on the loopback. --compare adds PyTorch's figures: DistributedDataParallel on the
# same cores (fashion_mnist_ddp_twin.py) and its Gloo all-reduce (allreduce_twin.py).
#
#   KILN_LAUNCH=build/kiln-launch KILN_DIST_BENCH=build/bench bench/dist/run_scaling.sh [--only ids] [--compare]
#
# KILN_LAUNCH          the kiln-launch binary (default: kiln-launch on the PATH)
# KILN_DIST_BENCH      the folder holding kiln_dist_fashion_mnist_bench and kiln_dist_allreduce_bench
# KILN_DIST_PROCESSES  the process counts, "1,2,4" by default (allreduce takes those above 1)
# KILN_DIST_REPS       runs of each epoch, taking turns across the counts (default 3): the median
#                      and the spread (min, max) are reported
# KILN_DIST_OUT        where the raw Google Benchmark results go (default: a fresh temporary folder)
# KILN_PYTHON          the Python with torch for --compare (default /usr/bin/python3)
#
# A table goes to stderr, the JSON lines of bench/run's contract to stdout (one per workload and
# process count, "processes" naming it).
#
# Scaling efficiency at N processes = t1 / tN, t = the median seconds per epoch. Every run does
# the same work (the same 60,000 images, the same global batch of 128: 128 / N per process) on the
# same cores (kiln-launch --split-cpus gives each of the N processes 1/N of the CPUs this script
# may use, and as many BLAS threads), so perfect scaling keeps tN = t1 and the efficiency 1.0. (The
# t1 / (N tN) of the usual definition applies when each added process brings cores of its own.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "run_scaling.sh: $*" >&2; exit 1; }

only="dist_fashion_mnist_epoch,allreduce" compare=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || usage; only="$2"; shift 2 ;;
    --only=*) only="${1#*=}"; shift ;;
    --compare) compare=1; shift ;;
    -h|--help) usage ;;
    *) echo "run_scaling.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
launch="${KILN_LAUNCH:-kiln-launch}"
bench_dir="${KILN_DIST_BENCH:-.}"
python="${KILN_PYTHON:-/usr/bin/python3}"
reps="${KILN_DIST_REPS:-3}"
IFS=', ' read -ra counts <<<"${KILN_DIST_PROCESSES:-1,2,4}"
command -v "$launch" >/dev/null || die "no kiln-launch at '$launch': set KILN_LAUNCH"
for n in "${counts[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "KILN_DIST_PROCESSES holds '$n', not a process count"
done
if [ "$compare" = 1 ] && ! "$python" -c 'import torch' 2>/dev/null; then
  die "--compare needs PyTorch for $python (set KILN_PYTHON, or apt-get install python3-torch)"
fi
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "KILN_DIST_REPS must be a positive count, not '$reps'"
run_epoch=0 run_allreduce=0 epoch_ids=()
IFS=, read -ra ids <<<"$only"
for id in "${ids[@]}"; do
  case "$id" in
    dist_fashion_mnist_epoch | dist_fashion_mnist_epoch_no_exchange) run_epoch=1; epoch_ids+=("$id") ;;
    allreduce) run_allreduce=1 ;;
    *) die "unknown workload '$id'; known: dist_fashion_mnist_epoch,dist_fashion_mnist_epoch_no_exchange,allreduce" ;;
  esac
done
out="${KILN_DIST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-dist-bench-XXXXXX")}"
mkdir -p "$out"
rm -f "$out"/epoch_*.json "$out"/epoch_torch_*.jsonl "$out"/allreduce_*.json "$out"/allreduce_torch_*.jsonl
echo "run_scaling.sh: $(nproc) CPUs; raw results in $out" >&2

if [ "$run_epoch" = 1 ]; then
  epoch_bench="$bench_dir/kiln_dist_fashion_mnist_bench"
  [ -x "$epoch_bench" ] || die "no $epoch_bench: set KILN_DIST_BENCH to the folder of the bench binaries"
  # Repetitions take turns across the counts, so that a slow spell of a shared machine does not
  # fall on one count alone.
  for ((r = 1; r <= reps; ++r)); do
    for n in "${counts[@]}"; do
      echo "run_scaling.sh: dist_fashion_mnist_epoch, $n processes, run $r of $reps" >&2
      filter="^($(IFS='|'; echo "${epoch_ids[*]}"))(/|\$)"  # names go on with /iterations:1...
      "$launch" -n "$n" --split-cpus --timeout 600 -- "$epoch_bench" --benchmark_filter="$filter" \
        --benchmark_out="$out/epoch_n${n}_r$r.json" --benchmark_out_format=json >&2
      if [ "$compare" = 1 ] && [[ " ${epoch_ids[*]} " == *" dist_fashion_mnist_epoch "* ]]; then
        "$python" "$here/fashion_mnist_ddp_twin.py" --processes "$n" >"$out/epoch_torch_n${n}_r$r.jsonl" ||
          die "the PyTorch twin failed (above)"
      fi
    done
  done
fi

if [ "$run_allreduce" = 1 ]; then
  allreduce_bench="$bench_dir/kiln_dist_allreduce_bench"
  [ -x "$allreduce_bench" ] || die "no $allreduce_bench: set KILN_DIST_BENCH to the folder of the bench binaries"
  for n in "${counts[@]}"; do
    [ "$n" -gt 1 ] || continue
    echo "run_scaling.sh: allreduce, $n processes" >&2
    "$launch" -n "$n" --timeout 600 -- "$allreduce_bench" \
      --benchmark_out="$out/allreduce_n$n.json" --benchmark_out_format=json >&2
    if [ "$compare" = 1 ]; then
      "$python" "$here/allreduce_twin.py" --processes "$n" --json >"$out/allreduce_torch_n$n.jsonl" ||
        die "the PyTorch twin failed (above)"
    fi
  done
fi

python3 "$here/report.py" "$out"
