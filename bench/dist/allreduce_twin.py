"""The twin of bench/dist/allreduce_bench.cpp: PyTorch's all-reduce on its Gloo backend (the same
library kiln's process group uses), N processes on the loopback, the same sizes and iteration
counts, the same bandwidth figures (bus = algorithm bandwidth * 2 (N - 1) / N).

    /usr/bin/python3 bench/dist/allreduce_twin.py --processes 2
    /usr/bin/python3 bench/dist/allreduce_twin.py --processes 4 --json   # one JSON line a size

With --json (what bench/dist/run_scaling.sh reads) each size is a line
{"mib": 256, "ms": ..., "alg_GB": ..., "bus_GB": ..., "processes": 4, "torch_version": "..."}.
"""
import argparse
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [(1, 10), (4, 10), (16, 10), (64, 10), (256, 10)]  # MiB, iterations


def run(rank, world, init_file, out):
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
    for mib, iters in SIZES:
        t = torch.ones(mib << 20 >> 2, dtype=torch.float32)
        dist.all_reduce(t)  # warm
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        seconds = (time.perf_counter() - start) / iters
        if rank == 0:
            alg = (mib << 20) / seconds / 1e9
            out.put((mib, seconds * 1e3, alg, alg * 2 * (world - 1) / world))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--json", action="store_true", help="one JSON line a size instead of a table")
    a = p.parse_args()
    torch.set_num_threads(1)
    init_file = os.path.join(tempfile.mkdtemp(prefix="torch-rendezvous-"), "init")
    out = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(a.processes, init_file, out), nprocs=a.processes)
    rows = []
    while not out.empty():
        rows.append(out.get())
    if a.json:
        for mib, ms, alg, bus in rows:
            print(json.dumps({"mib": mib, "ms": ms, "alg_GB": alg, "bus_GB": bus, "processes": a.processes,
                              "torch_version": torch.__version__}))
        return
    print(f"torch {torch.__version__} gloo all_reduce, {a.processes} processes")
    print(f"{'size':>8} {'ms':>10} {'alg GB/s':>10} {'bus GB/s':>10}")
    for mib, ms, alg, bus in rows:
        print(f"{mib:>5}MiB {ms:>10.3f} {alg:>10.3f} {bus:>10.3f}")


if __name__ == "__main__":
    main()
