#!/usr/bin/env python3
"""Turns kiln_bench's Google Benchmark JSON, and the PyTorch twin's lines when given, into the
output contract of shared/WORKLOADS.md: one JSON object per workload per line.

    report.py --device cpu KILN_JSON [TWIN_JSONL]

The kiln figure is the median of the repetitions. A benchmark named "<id>/<variant>" is a
baseline of workload <id> and becomes a field of its line (VARIANTS), with "vs_<field>" = how
many times better kiln is. Needs only the standard library.
"""
import argparse
import json

SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
KILN_EXTRAS = ("kernels_per_iter", "fused_per_iter", "compiles_per_iter", "inplace_per_iter", "batches_per_iter",
               "waits_per_iter", "peak_mib", "one_thread_ms", "two_threads_ms")
VARIANTS = {"openblas": "openblas", "unfused": "kiln_unfused"}  # variant -> field


def rounded(x):
    return float(f"{x:.4g}")


def figure(run):
    """(unit, better, value) of one run, from the work counter its benchmark recorded."""
    if "speedup" in run:  # grad_threads: the figure is a ratio of two timings
        return "x", "higher", run["speedup"]
    seconds = run["real_time"] * SECONDS[run["time_unit"]]
    if "bytes_per_iter" in run:
        return "GB/s", "higher", run["bytes_per_iter"] / seconds / 1e9
    if "flops_per_iter" in run:
        return "GFLOP/s", "higher", run["flops_per_iter"] / seconds / 1e9
    if "steps_per_iter" in run:
        return "ms/step", "lower", seconds * 1e3 / run["steps_per_iter"]
    if "ops_per_iter" in run:
        return "us/op", "lower", seconds * 1e6 / run["ops_per_iter"]
    raise SystemExit(f"report.py: {run['name']} records no work counter")


def advantage(better, kiln, other):
    """How many times better kiln is than `other` (> 1: kiln wins), whichever way is better."""
    if not kiln or not other:
        return None
    return rounded(kiln / other if better == "higher" else other / kiln)


def median_runs(path):
    """run_name -> its median aggregate, or its only run when it had a single repetition."""
    with open(path) as f:
        benchmarks = json.load(f)["benchmarks"]
    runs = {}
    for run in benchmarks:
        if run.get("error_occurred"):
            raise SystemExit(f"report.py: {run['name']} failed: {run.get('error_message')}")
        if run["run_type"] == "aggregate" and run["aggregate_name"] == "median":
            runs[run["run_name"]] = run
        elif run["run_type"] == "iteration":
            runs.setdefault(run["run_name"], run)
    return runs


def kiln_lines(path, device):
    lines, baselines = {}, []
    for run_name, run in median_runs(path).items():
        parts = run_name.split("/")
        unit, better, value = figure(run)
        if len(parts) > 1 and parts[1] in VARIANTS:
            baselines.append((parts[0], VARIANTS[parts[1]], value))
            continue
        line = {"id": parts[0], "device": device, "unit": unit, "better": better, "kiln": rounded(value),
                "torch": None, "kiln_reps": run.get("repetitions", 1)}
        line.update({k: rounded(run[k]) for k in KILN_EXTRAS if k in run})
        lines[parts[0]] = line
    for wid, field, value in baselines:
        if wid in lines:
            lines[wid][field] = rounded(value)
            lines[wid]["vs_" + field] = advantage(lines[wid]["better"], lines[wid]["kiln"], value)
    return lines


def merge_twin(lines, path):
    with open(path) as f:
        for text in f:
            if not text.strip():
                continue
            twin = json.loads(text)
            line = lines.get(twin["id"])
            if line is None:
                continue
            if twin["unit"] != line["unit"]:
                raise SystemExit(f"report.py: {twin['id']}: kiln reports {line['unit']}, the twin {twin['unit']}")
            line.update({k: v for k, v in twin.items() if k.startswith("torch")})
            line["vs_torch"] = advantage(line["better"], line["kiln"], line["torch"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True)
    parser.add_argument("kiln_json")
    parser.add_argument("twin_jsonl", nargs="?")
    args = parser.parse_args()
    lines = kiln_lines(args.kiln_json, args.device)
    if args.twin_jsonl:
        merge_twin(lines, args.twin_jsonl)
    for line in lines.values():
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
