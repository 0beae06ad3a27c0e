#!/usr/bin/env python3
"""Turns bench/dist/run_scaling.sh's raw results into bench/run's JSON lines (shared/WORKLOADS.md),
one per workload and process count, and a table on stderr.

    report.py RESULTS_DIR

RESULTS_DIR holds epoch_n<N>_r<run>.json (kiln_dist_fashion_mnist_bench), allreduce_n<N>.json
(kiln_dist_allreduce_bench) and, with --compare, epoch_torch_n<N>_r<run>.jsonl
(fashion_mnist_ddp_twin.py) and allreduce_torch_n<N>.jsonl (allreduce_twin.py).

dist_fashion_mnist_epoch: "kiln" is the median seconds per epoch over the runs ("kiln_min",
"kiln_max" their spread), "efficiency" = t1 / tN of the medians: the same epoch on the same cores,
so 1.0 is perfect scaling (the same of dist_fashion_mnist_epoch_no_exchange, the probe: each rank
on its own gradients); "torch", "torch_min", "torch_max", "torch_efficiency" the same of
PyTorch's DistributedDataParallel. allreduce: "kiln" and "torch" are the bus GB/s at 256 MiB (algorithm
bandwidth * 2 (N - 1) / N), "kiln_<M>MiB" / "torch_<M>MiB" every size's. Needs only the standard
library.
"""
import glob
import json
import os
import re
import statistics
import sys


def rounded(x):
    return None if x is None else float(f"{x:.4g}")


def benchmarks(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    for run in runs:
        if run.get("error_occurred"):
            raise SystemExit(f"report.py: {run['name']} failed in {path}: {run.get('error_message')}")
    return [r for r in runs if r.get("run_type", "iteration") == "iteration"]


def seconds(run):
    return run["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[run["time_unit"]]


def epoch_lines(out):
    times = {}  # workload -> processes -> seconds per epoch of each run
    for path in glob.glob(os.path.join(out, "epoch_n*_r*.json")):
        n = int(re.search(r"epoch_n(\d+)_r", path).group(1))
        for r in benchmarks(path):
            if r["name"].startswith("dist_fashion"):
                times.setdefault(r["name"].split("/")[0], {}).setdefault(n, []).append(seconds(r))
    lines = []
    for workload in sorted(times):
        lines += workload_lines(workload, times[workload], out if workload == "dist_fashion_mnist_epoch" else None)
    return lines


def workload_lines(workload, times, twin_dir):
    twin = {}  # the same of PyTorch's DDP
    for path in glob.glob(os.path.join(twin_dir, "epoch_torch_n*_r*.jsonl")) if twin_dir else []:
        with open(path) as f:
            for text in f:
                if text.strip():
                    row = json.loads(text)
                    twin.setdefault(row["processes"], []).append(row["seconds"])
    t1 = statistics.median(times[1]) if times.get(1) else None
    twin1 = statistics.median(twin[1]) if twin.get(1) else None
    lines = []
    for n in sorted(times):
        t = statistics.median(times[n])
        line = {"id": workload, "device": "cpu", "processes": n, "unit": "s/epoch",
                "better": "lower", "kiln": rounded(t), "torch": None, "kiln_min": rounded(min(times[n])),
                "kiln_max": rounded(max(times[n])), "kiln_reps": len(times[n]),
                "efficiency": rounded(t1 / t) if t1 else None, "cpus": os.cpu_count()}
        if twin.get(n):
            tt = statistics.median(twin[n])
            line.update({"torch": rounded(tt), "torch_min": rounded(min(twin[n])), "torch_max": rounded(max(twin[n])),
                         "torch_efficiency": rounded(twin1 / tt) if twin1 else None, "vs_torch": rounded(tt / t)})
        lines.append(line)
    return lines


def allreduce_lines(out):
    lines = []
    paths = glob.glob(os.path.join(out, "allreduce_n*.json"))
    for path in sorted(paths, key=lambda p: int(re.search(r"allreduce_n(\d+)", p).group(1))):
        n = int(re.search(r"allreduce_n(\d+)", path).group(1))
        line = {"id": "allreduce", "device": "cpu", "processes": n, "unit": "GB/s", "better": "higher", "kiln": None,
                "torch": None}
        for run in benchmarks(path):
            name, mib = run["name"].split("/")[:2]
            if name == "dist_allreduce":
                line[f"kiln_{mib}MiB"] = rounded(run["bus_GB"])
            elif name == "dist_allreduce_tensor":  # through ProcessGroup::all_reduce of a tensor
                line[f"kiln_tensor_{mib}MiB"] = rounded(run["bus_GB"])
        twin = os.path.join(out, f"allreduce_torch_n{n}.jsonl")
        if os.path.exists(twin):
            with open(twin) as f:
                for text in f:
                    if text.strip():
                        row = json.loads(text)
                        line[f"torch_{row['mib']}MiB"] = rounded(row["bus_GB"])
                        line["torch_version"] = row["torch_version"]
        line["kiln"], line["torch"] = line.get("kiln_256MiB"), line.get("torch_256MiB")
        if line["kiln"] and line["torch"]:
            line["vs_torch"] = rounded(line["kiln"] / line["torch"])
        lines.append(line)
    return lines


def table(lines):
    for line in lines:
        if line["id"].startswith("dist_fashion_mnist_epoch"):
            eff, torch = line["efficiency"], line["torch"]
            print(f"{line['id']}  {line['processes']} processes  {line['kiln']:.2f} s/epoch "
                  f"(min {line['kiln_min']:.2f}, max {line['kiln_max']:.2f}, {line['kiln_reps']} runs)  "
                  f"efficiency t1/tN {'-' if eff is None else f'{eff:.3f}'}"
                  + ("" if torch is None else f"   torch DDP {torch:.2f} s/epoch (min {line['torch_min']:.2f}, max "
                     f"{line['torch_max']:.2f}), efficiency {line['torch_efficiency'] or '-'}"), file=sys.stderr)
        else:
            sizes = sorted(int(k[5:-3]) for k in line if re.fullmatch(r"kiln_\d+MiB", k))
            for mib in sizes:
                torch = line.get(f"torch_{mib}MiB")
                print(f"allreduce  {line['processes']} processes  {mib:>4} MiB  kiln {line[f'kiln_{mib}MiB']:.3f} bus GB/s"
                      f"{'' if torch is None else f'   torch gloo {torch:.3f}'}", file=sys.stderr)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    lines = epoch_lines(sys.argv[1]) + allreduce_lines(sys.argv[1])
    table(lines)
    for line in lines:
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
