#!/usr/bin/env python3
"""Turns kiln_bench's Google Benchmark JSON, and the twins' lines when given (the PyTorch twin's,
the ONNX Runtime twin's), into the output contract of shared/WORKLOADS.md: one JSON object per
workload per line.

    report.py --device cpu KILN_JSON [TWIN_JSONL ...]

The kiln figure is the median of the repetitions. A benchmark named "<id>/<variant>" is a
baseline of workload <id> and becomes a field of its line (VARIANTS), with "vs_<field>" = how
many times better kiln is. A twin's fields start with its name ("torch", "ort"), and its line
gets "vs_<name>" the same way. Serving workloads record counters instead of a work count:
p50_us (+ p99_us) makes a latency workload, requests_per_s (+ p99_us) a throughput one; the p99
goes to "kiln_p99" (or "<field>_p99" for a variant). p50_ms (+ p99_ms) is a latency in ms (the
onnx_* workloads, whose runs take milliseconds). A variant of another batch size ("b16") is a
field of its own, compared with the twin's field of that batch ("ort_b16": "vs_ort_b16"), not
with kiln's figure. Needs only the standard library.
"""
import argparse
import json

SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
KILN_EXTRAS = ("kernels_per_iter", "fused_per_iter", "compiles_per_iter", "inplace_per_iter", "batches_per_iter",
               "waits_per_iter", "peak_mib", "one_thread_ms", "two_threads_ms", "mean_batch", "warm_s", "first_over_warm",
               # serve_http: the batcher in-process beside it, and an open-loop run at half its rate
               "in_process_requests_per_s", "in_process_p99_us", "http_over_in_process", "paced_rate",
               "paced_p50_us", "paced_p99_us")
# Serving counters that follow a figure, as "<field>_<suffix>": the p99 of a latency or throughput
# run, the p50 of a throughput run (its figure being requests/s), the batcher's mean batch.
# onnx_*: also the process's CPU time a run (cpu_ms: both cores' work), beside the twin's ort_cpu_ms.
SERVING_EXTRAS = {"p99_us": "p99", "p50_us": "p50", "p99_ms": "p99", "cpu_ms": "cpu_ms", "mean_batch": "mean_batch"}
# variant -> field. module: the MLP as an nn module rather than raw ops; recorded / module_recorded:
# either as a RecordedPass (one message a request); apart: its requests 300 us apart; batcher /
# futures: concurrent_infer through the dynamic request batcher / through plain futures.
VARIANTS = {"openblas": "openblas", "unfused": "kiln_unfused", "module": "kiln_module", "apart": "kiln_apart",
            "recorded": "kiln_recorded", "module_recorded": "kiln_module_recorded", "batcher": "kiln_batcher",
            "futures": "kiln_futures", "b16": "kiln_b16"}
# Variants that run another batch size: no ratio to kiln's own figure (the twin's is theirs).
BATCH_VARIANTS = {"b16"}
TWINS = ("torch", "ort")  # the twins' names, which prefix their fields


def rounded(x):
    return float(f"{x:.4g}")


def figure(run):
    """(unit, better, value) of one run, from the work counter its benchmark recorded."""
    if "speedup" in run:  # grad_threads: the figure is a ratio of two timings
        return "x", "higher", run["speedup"]
    # Serving workloads measure each request themselves: the figure is a counter, not a timing.
    if "requests_per_s" in run:
        return "req/s", "higher", run["requests_per_s"]
    if "p50_us" in run:
        return "us", "lower", run["p50_us"]
    if "p50_ms" in run:
        return "ms", "lower", run["p50_ms"]
    seconds = run["real_time"] * SECONDS[run["time_unit"]]
    if "epochs_per_iter" in run:
        return "s/epoch", "lower", seconds / run["epochs_per_iter"]
    if "bytes_per_iter" in run:
        return "GB/s", "higher", run["bytes_per_iter"] / seconds / 1e9
    if "flops_per_iter" in run:
        return "GFLOP/s", "higher", run["flops_per_iter"] / seconds / 1e9
    if "steps_per_iter" in run:
        return "ms/step", "lower", seconds * 1e3 / run["steps_per_iter"]
    if "ops_per_iter" in run:
        return "us/op", "lower", seconds * 1e6 / run["ops_per_iter"]
    raise SystemExit(f"report.py: {run['name']} records no work counter")


def serving_extras(run, unit):
    """{suffix: value} of a serving run's counters besides its figure (a latency run's p50 is it)."""
    return {suffix: rounded(run[k]) for k, suffix in SERVING_EXTRAS.items()
            if k in run and not (k == "p50_us" and unit == "us")}


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
            baselines.append((parts[0], parts[1], value, serving_extras(run, unit)))
            continue
        line = {"id": parts[0], "device": device, "unit": unit, "better": better, "kiln": rounded(value),
                "torch": None, "kiln_reps": run.get("repetitions", 1)}
        line.update({"kiln_" + k: v for k, v in serving_extras(run, unit).items() if k != "mean_batch"})
        line.update({k: rounded(run[k]) for k in KILN_EXTRAS if k in run})
        lines[parts[0]] = line
    for wid, variant, value, extras in baselines:
        if wid in lines:
            field = VARIANTS[variant]
            lines[wid][field] = rounded(value)
            lines[wid].update({f"{field}_{k}": v for k, v in extras.items()})
            if variant not in BATCH_VARIANTS:
                lines[wid]["vs_" + field] = advantage(lines[wid]["better"], lines[wid]["kiln"], value)
    # The Learner's epoch beside the bare loop's of the same run: what the Learner itself costs.
    learner, bare = lines.get("fashion_mnist_learner_epoch"), lines.get("fashion_mnist_epoch")
    if learner and bare and bare["kiln"]:
        learner["per_bare_epoch"] = rounded(learner["kiln"] / bare["kiln"])
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
            if twin.get("unit", line["unit"]) != line["unit"]:
                raise SystemExit(f"report.py: {twin['id']}: kiln reports {line['unit']}, the twin ({path}) {twin['unit']}")
            line.update({k: v for k, v in twin.items() if k.startswith(TWINS)})
            for name in TWINS:
                if name in twin:
                    line["vs_" + name] = advantage(line["better"], line["kiln"], twin[name])
                # A batch variant's figure beside kiln's of that batch: "ort_b16" and "kiln_b16".
                for variant in BATCH_VARIANTS:
                    theirs, ours = f"{name}_{variant}", f"kiln_{variant}"
                    if theirs in twin and ours in line:
                        line["vs_" + theirs] = advantage(line["better"], line[ours], twin[theirs])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True)
    parser.add_argument("kiln_json")
    parser.add_argument("twin_jsonl", nargs="*")
    args = parser.parse_args()
    lines = kiln_lines(args.kiln_json, args.device)
    for path in args.twin_jsonl:
        merge_twin(lines, path)
    for line in lines.values():
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
