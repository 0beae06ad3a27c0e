"""The twin of bench/dist/fashion_mnist_epoch_bench.cpp: one epoch of the main job's CNN
(bench/fashion_mnist_twin.py) with PyTorch's DistributedDataParallel on its Gloo backend, N
processes on the loopback, each its DistributedSampler shard with batches of 128 / N, Adam at lr
1e-3, three warm-up steps, the epoch timed from a barrier to the slowest rank's end. Like
kiln-launch --split-cpus, process r gets the r-th of N equal slices of the CPUs this script may
use, and as many torch threads, so every count runs on the same cores. The images sit in memory as
one tensor, as the single-process twin (bench/torch_twin.py fashion_mnist_epoch) keeps them.

    /usr/bin/python3 bench/dist/fashion_mnist_ddp_twin.py --processes 2      # one JSON line
    {"processes": 2, "seconds": 38.2, "torch_version": "..."}
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fashion_mnist_twin as twin  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def run(rank, world, cpus, init_file, out):
    per = max(1, len(cpus) // world)
    os.sched_setaffinity(0, {cpus[(rank * per + k) % len(cpus)] for k in range(per)})
    torch.set_num_threads(per)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
    torch.manual_seed(0)
    x, y = twin.load(DATA, "train")
    model = torch.nn.parallel.DistributedDataParallel(twin.SmallCNN())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(x)), num_replicas=world, rank=rank, seed=0)
    batch = 128 // world

    def step(idx):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        return loss

    sampler.set_epoch(0)
    warm = torch.tensor(list(sampler))
    for i in range(3):
        step(warm[i * batch:(i + 1) * batch])
    sampler.set_epoch(1)
    order = torch.tensor(list(sampler))
    dist.barrier()
    start = time.perf_counter()
    for i in range(0, len(order), batch):
        step(order[i:i + batch])
    dist.barrier()  # the epoch ends when the slowest rank's does
    if rank == 0:
        out.put(time.perf_counter() - start)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--processes", type=int, default=2)
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    init_file = os.path.join(tempfile.mkdtemp(prefix="torch-rendezvous-"), "init")
    out = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(a.processes, cpus, init_file, out), nprocs=a.processes)
    print(json.dumps({"processes": a.processes, "seconds": out.get(), "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
