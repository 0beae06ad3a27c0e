#!/usr/bin/python3
"""The PyTorch twin of kiln's benchmarks: the workloads of bench/*.cpp with the same shapes and
the same timing policy (a warm-up call, then the median of repetitions of at least min_time
seconds each, iteration counts grown as Google Benchmark grows them). On the CPU each workload
runs with 1 and with 2 threads and reports the better figure, naming the thread count.

The serving workloads (SERVING: mlp_infer_b1, concurrent_infer) time each request instead: the
model in eval mode under torch.inference_mode(), the input taken from a host numpy array and the
result written back to one, as a service handler does; p50/p99 latency (µs) or requests/s, each
thread count measured for a bounded time after a warm-up.

    torch_twin.py [--device cpu|cuda] [--only id,id]    -> one JSON line per workload
"""
import argparse
import collections
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

import torch

BIG_N = 16_777_216
SMALL_OPS = 64

# Mirrors kiln::bench::Policy (bench/bench_common.h) and the numbers each benchmark registers.
Policy = collections.namedtuple("Policy", "min_time repetitions iterations", defaults=(0.1, 5, 0))
MATMUL_POLICY = {512: Policy(), 1024: Policy(0.2, 5), 2048: Policy(0.2, 3), 4096: Policy(0.0, 3, 1)}
GPU_MATMUL_POLICY = Policy(0.2, 5)  # every matmul workload on cuda, as kiln's on a GPU
# Workloads that kiln runs on a GPU only (f16/bf16 live on Vulkan devices).
GPU_ONLY = {"fashion_mnist_first_epoch", "grad_threads_streams", "conv2d_f16", "gelu_fused_f16", "attention_softmax_f16", "linear_relu_4096_f16", "matmul_4096_f16", "matmul_4096_bf16", "matmul_4000_f16", "matmul_4000_bf16",
            "matmul_batched_f16", "matmul_batched_bf16"}


def gelu_fused(dev):
    x = torch.randn(BIG_N, device=dev)
    return lambda: x * (torch.erf(x / math.sqrt(2.0)) + 1) / 2


def gelu_fused_f16(dev):
    x = torch.randn(BIG_N, device=dev).half()
    return lambda: x * (torch.erf(x / math.sqrt(2.0)) + 1) / 2


def gelu_native(dev):
    x = torch.randn(BIG_N, device=dev)
    return lambda: torch.nn.functional.gelu(x)


def add_inplace(dev):
    held = [torch.zeros(BIG_N, device=dev)]

    def ten_adds():
        x = held.pop()  # the only reference, as in kiln's std::move
        for _ in range(10):
            x = x + 1
        held.append(x)
    return ten_adds


def small_ops(dev):
    x = torch.randn(64, device=dev)

    def chain():
        y = x
        for _ in range(SMALL_OPS // 4):
            y = y + 0.5
            y = y * 1.001
            y = y - 0.25
            y = y / 1.001
        return y.cpu().numpy().copy()
    return chain


def softmax_rows(dev):
    x = torch.randn(4096, 1024, device=dev)
    return lambda: torch.softmax(x, -1)


def attention_softmax(dev):
    x = torch.randn(4096, 1024, device=dev)
    mask = torch.randn(1024, device=dev)
    return lambda: torch.softmax(x * 0.125 + mask, -1)


def attention_softmax_f16(dev):
    x = torch.randn(4096, 1024, device=dev).half()
    mask = torch.randn(1024, device=dev).half()
    return lambda: torch.softmax(x * 0.125 + mask, -1)


def sum_all(dev):
    x = torch.randn(BIG_N, device=dev)
    return lambda: x.sum().item()


def sum_squares(dev):
    x = torch.randn(BIG_N, device=dev)
    return lambda: (x * x).sum().item()


def matmul(n, dtype=torch.float32, batches=None, k=None):
    """n x n @ n x n, or with batches: batches x (n x k @ k x n)."""
    def setup(dev):
        # Inputs drawn in f32 and cast (outside the timed loop), as kiln's benchmark does.
        lead = () if batches is None else (batches,)
        kk = n if k is None else k
        a = torch.randn(*lead, n, kk, device=dev).to(dtype)
        b = torch.randn(*lead, kk, n, device=dev).to(dtype)
        return lambda: a @ b
    return setup


def linear_relu(n, dtype):
    """relu(a @ b + bias): a linear layer on n x n matrices."""
    def setup(dev):
        a = torch.randn(n, n, device=dev).to(dtype)
        b = torch.randn(n, n, device=dev).to(dtype)
        bias = torch.randn(n, device=dev).to(dtype)
        return lambda: torch.relu(a @ b + bias)
    return setup


CONV_N, CONV_C, CONV_HW = 8, 64, 56
CONV_FLOPS = 2 * CONV_N * CONV_C * CONV_C * CONV_HW * CONV_HW * 9


def conv_inputs(dev, grad):
    x = torch.randn(CONV_N, CONV_C, CONV_HW, CONV_HW, device=dev, requires_grad=grad)
    w = (torch.randn(CONV_C, CONV_C, 3, 3, device=dev) * 0.05).requires_grad_(grad)
    return x, w


def conv2d(dev, dtype=torch.float32):
    x, w = conv_inputs(dev, False)
    x, w = x.to(dtype), w.to(dtype)
    return lambda: torch.nn.functional.conv2d(x, w, padding=1)


def conv2d_backward(dev):
    """The input's and the weight's gradients; each iteration runs the forward backward needs."""
    x, w = conv_inputs(dev, True)
    seed = torch.randn(CONV_N, CONV_C, CONV_HW, CONV_HW, device=dev)
    return lambda: torch.autograd.grad(torch.nn.functional.conv2d(x, w, padding=1), [x, w], seed)


class ResidualBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + x)


def resnet_block(dev):
    """Forward and backward of one residual block in training mode (input and weight gradients)."""
    block = ResidualBlock(CONV_C).to(dev)
    x = torch.randn(CONV_N, CONV_C, CONV_HW, CONV_HW, device=dev, requires_grad=True)
    seed = torch.randn(CONV_N, CONV_C, CONV_HW, CONV_HW, device=dev)
    params = [x] + list(block.parameters())
    return lambda: torch.autograd.grad(block(x), params, seed)


def max_pool2d(dev):
    """A ResNet stem's pooling: [8, 64, 112, 112], kernel 3, stride 2, padding 1, forward and the
    input's gradient."""
    x = torch.randn(CONV_N, CONV_C, 2 * CONV_HW, 2 * CONV_HW, device=dev, requires_grad=True)
    seed = torch.randn(CONV_N, CONV_C, CONV_HW, CONV_HW, device=dev)
    return lambda: torch.autograd.grad(torch.nn.functional.max_pool2d(x, 3, 2, 1), [x], seed)


def train_step(model, opt, loss_fn):
    """One training step as a PyTorch loop writes it: zero_grad, forward, backward, step."""
    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp_train_step(dev):
    """MLP 784-512-512-10, ReLU, cross entropy, Adam(lr 1e-3), batch 128."""
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    x = torch.randn(128, 784, device=dev)
    target = torch.randint(0, 10, (128,), device=dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return train_step(model, opt, lambda m: torch.nn.functional.cross_entropy(m(x), target))


def transformer_train_step(dev):
    """One encoder layer (d_model 256, 4 heads, ff 1024, dropout 0.1, post-norm, batch-first) on
    [8, 128, 256], MSE against a fixed target, AdamW(lr 1e-4)."""
    layer = torch.nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.1, batch_first=True).to(dev)
    layer.train()
    x = torch.randn(8, 128, 256, device=dev)
    target = torch.randn(8, 128, 256, device=dev)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-4)
    return train_step(layer, opt, lambda m: torch.nn.functional.mse_loss(m(x), target))


def grad_threads_pair(dev, streams=False, threads=2):
    """grad_threads: per-module gradients of the MLP 784-512-512-10, batch 128 split in two, on one
    Python thread (the halves in turn) and on two (one half each; PyTorch releases the GIL in
    its kernels and in backward). Returns (one_thread, on_threads) functions. With `streams`
    (grad_threads_streams, CUDA) each of the two threads works on a CUDA stream of its own;
    grad_threads_4 splits the batch in four, on four threads."""
    import threading
    g = torch.Generator().manual_seed(3)
    sizes = (784, 512, 512, 10)
    params = []
    for i, o in zip(sizes, sizes[1:]):
        params += [(torch.randn(i, o, generator=g) / i ** 0.5).to(dev), torch.zeros(o, device=dev)]
    shards = torch.randn(128, 784, generator=g).to(dev).chunk(threads)
    side = [torch.cuda.Stream() for _ in shards] if streams else []

    def shard_grads(x):
        ps = [p.detach().requires_grad_() for p in params]
        for l in range(0, len(ps), 2):
            x = x @ ps[l] + ps[l + 1]
            if l + 2 < len(ps):
                x = torch.relu(x)
        return torch.autograd.grad((x * x).sum(1).mean(), ps)

    def one_thread():
        total = [torch.zeros_like(p) for p in params]
        for s in shards:
            total = [t + g for t, g in zip(total, shard_grads(s))]
        return total

    def on_threads():
        out = [None] * len(shards)

        def work(i):
            if streams:
                with torch.cuda.stream(side[i]):
                    out[i] = shard_grads(shards[i])
            else:
                out[i] = shard_grads(shards[i])
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(shards))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if streams:
            for st in side:
                torch.cuda.current_stream().wait_stream(st)
        return [sum(gs) for gs in zip(*out)]
    return one_thread, on_threads


# The figure is a ratio: speedup of several Python threads over one, with torch's intra-op threads
# at 1 so that the threads are the only parallelism.
SPEEDUPS = {"grad_threads": (Policy(0.5, 5), grad_threads_pair),
            "grad_threads_4": (Policy(0.5, 5), lambda dev: grad_threads_pair(dev, threads=4)),
            "grad_threads_streams": (Policy(0.5, 5), lambda dev: grad_threads_pair(dev, streams=True))}

# id -> (unit, work per iteration, policy, setup(device) returning the function one iteration calls)
WORKLOADS = {
    "gelu_fused": ("GB/s", 8 * BIG_N, Policy(), gelu_fused),
    "gelu_native": ("GB/s", 8 * BIG_N, Policy(), gelu_native),
    "gelu_fused_f16": ("GB/s", 4 * BIG_N, Policy(), gelu_fused_f16),
    "add_inplace": ("GB/s", 10 * 8 * BIG_N, Policy(), add_inplace),
    "small_ops": ("us/op", SMALL_OPS, Policy(), small_ops),
    "softmax_rows": ("GB/s", 8 * 4096 * 1024, Policy(), softmax_rows),
    "sum_all": ("GB/s", 4 * BIG_N, Policy(), sum_all),
    "sum_squares": ("GB/s", 4 * BIG_N, Policy(), sum_squares),
    "attention_softmax": ("GB/s", 8 * 4096 * 1024, Policy(), attention_softmax),
    "attention_softmax_f16": ("GB/s", 4 * 4096 * 1024, Policy(), attention_softmax_f16),
    **{f"matmul_{n}": ("GFLOP/s", 2 * n**3, p, matmul(n)) for n, p in MATMUL_POLICY.items()},
    "matmul_4096_f16": ("GFLOP/s", 2 * 4096**3, GPU_MATMUL_POLICY, matmul(4096, torch.float16)),
    "matmul_4096_bf16": ("GFLOP/s", 2 * 4096**3, GPU_MATMUL_POLICY, matmul(4096, torch.bfloat16)),
    "linear_relu_4096_f16": ("GFLOP/s", 2 * 4096**3, GPU_MATMUL_POLICY, linear_relu(4096, torch.float16)),
    "matmul_4000_f16": ("GFLOP/s", 2 * 4000**3, GPU_MATMUL_POLICY, matmul(4000, torch.float16)),
    "matmul_4000_bf16": ("GFLOP/s", 2 * 4000**3, GPU_MATMUL_POLICY, matmul(4000, torch.bfloat16)),
    "conv2d": ("GFLOP/s", CONV_FLOPS, Policy(0.5, 3), conv2d),
    "conv2d_f16": ("GFLOP/s", CONV_FLOPS, Policy(0.5, 3), lambda dev: conv2d(dev, torch.float16)),
    "conv2d_backward": ("GFLOP/s", 2 * CONV_FLOPS, Policy(0.5, 3), conv2d_backward),
    "resnet_block": ("ms/step", 1, Policy(0.5, 3), resnet_block),
    "max_pool2d": ("ms/step", 1, Policy(0.5, 3), max_pool2d),
    "mlp_train_step": ("ms/step", 1, Policy(0.5, 3), mlp_train_step),
    "transformer_train_step": ("ms/step", 1, Policy(0.5, 3), transformer_train_step),
    "matmul_batched_f16": ("GFLOP/s", 2 * 16 * 2000 * 1000 * 2000, GPU_MATMUL_POLICY,
                           matmul(2000, torch.float16, batches=16, k=1000)),
    "matmul_batched_bf16": ("GFLOP/s", 2 * 16 * 2000 * 1000 * 2000, GPU_MATMUL_POLICY,
                            matmul(2000, torch.bfloat16, batches=16, k=1000)),
}


SERVE_SECONDS = 1.0  # measured per thread count, after a warm-up: about 2.5 s per workload
SERVE_CLIENTS = 8


def mlp_model(dev):
    """The serving workloads' MLP 784-512-512-10 with ReLU, ready to serve (eval mode)."""
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev).eval()


def request_handler(model, dev):
    """One batch-1 request as a service handles it: the input arrives in a host numpy array, the
    result leaves in one. Returns handle() and its (input, output) host buffers."""
    host_in = np.random.default_rng(0).standard_normal((1, 784), dtype=np.float32)
    host_out = np.empty((1, 10), dtype=np.float32)

    def handle():
        with torch.inference_mode():
            y = model(torch.from_numpy(host_in).to(dev))
        host_out[:] = y.cpu().numpy()
    return handle


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (as the ORT twin computes it)."""
    rank = math.ceil(q * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def serve_latency(dev, seconds):
    """mlp_infer_b1: requests one after another; (p50 µs, p99 µs)."""
    handle = request_handler(mlp_model(dev), dev)
    warm_until = time.perf_counter() + min(0.2, seconds / 5)
    while time.perf_counter() < warm_until:
        handle()
    us = []
    clock = time.perf_counter_ns
    until = clock() + int(seconds * 1e9)
    t0 = clock()
    while t0 < until:
        handle()
        t1 = clock()
        us.append((t1 - t0) / 1e3)
        t0 = t1
    us.sort()
    return percentile(us, 0.50), percentile(us, 0.99)


def serve_concurrent(dev, seconds):
    """concurrent_infer: SERVE_CLIENTS Python threads sharing one model, each sending requests back
    to back (PyTorch releases the GIL inside its ops). Requests that finish within the window after
    the warm-up count; (requests/s, p99 µs)."""
    model = mlp_model(dev)
    clock = time.perf_counter_ns
    stop = threading.Event()
    spans = [[] for _ in range(SERVE_CLIENTS)]

    def client(mine):
        handle = request_handler(model, dev)
        while not stop.is_set():
            t0 = clock()
            handle()
            mine.append((t0, clock()))
    warm = min(0.3, seconds / 4)
    start = clock()
    window = (start + int(warm * 1e9), start + int((warm + seconds) * 1e9))
    threads = [threading.Thread(target=client, args=(mine,)) for mine in spans]
    for t in threads:
        t.start()
    time.sleep(max(0.0, (window[1] - clock()) / 1e9))
    stop.set()
    for t in threads:
        t.join()
    us = sorted((t1 - t0) / 1e3 for mine in spans for t0, t1 in mine if window[0] <= t1 <= window[1])
    return len(us) / seconds, percentile(us, 0.99)


# id -> (unit, better, measure(device, seconds) returning (figure, p99 µs))
SERVING = {
    "mlp_infer_b1": ("us", "lower", serve_latency),
    "concurrent_infer": ("req/s", "higher", serve_concurrent),
}


def fashion_mnist_epoch(dev, metrics=False, warm_up=3, epochs=1):
    """Seconds of one training epoch of the main job's CNN (bench/fashion_mnist_twin.py), its
    loader included, after three warm-up steps. With metrics (the twin of
    fashion_mnist_learner_epoch): the loss and accuracy summed on the device each step and read
    every 250 ms, as the Learner keeps and reads its metrics."""
    import fashion_mnist_twin as twin
    train_x, train_y = twin.load("/usr/share/datasets/fashion-mnist", "train")
    train_x, train_y = train_x.to(dev), train_y.to(dev)
    model = twin.SmallCNN().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    sums = {"loss": torch.zeros((), device=dev), "correct": torch.zeros((), device=dev), "read": time.perf_counter()}

    def step(idx):
        opt.zero_grad(set_to_none=True)
        logits = model(train_x[idx])
        loss = torch.nn.functional.cross_entropy(logits, train_y[idx])
        loss.backward()
        opt.step()
        if metrics:
            with torch.no_grad():
                sums["loss"] += loss.detach() * len(idx)
                sums["correct"] += (logits.argmax(1) == train_y[idx]).sum()
            if time.perf_counter() - sums["read"] >= 0.25:
                sums["read"] = time.perf_counter()
                float(sums["loss"]), float(sums["correct"])

    order = torch.randperm(len(train_x), device=dev)
    for i in range(warm_up):
        step(order[i * 128:(i + 1) * 128])
    seconds = []
    for _ in range(epochs):
        start = time.perf_counter()
        order = torch.randperm(len(train_x), device=dev)
        for i in range(0, len(order), 128):
            step(order[i:i + 128])
        if dev == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    return seconds[0] if epochs == 1 else seconds


def fashion_mnist_first_epoch(dev):
    """The twin of kiln's fashion_mnist_first_epoch: a fresh Python process (CUDA context and
    cuDNN made anew; PyTorch keeps no kernel cache between processes) times its first epoch with
    no warm-up step, and its second. The data and the model are on the device before the clock
    starts, as kiln's child opens its device before its epoch."""
    code = ("import json, sys, torch; sys.path.insert(0, %r); import torch_twin; "
            "torch.backends.cudnn.benchmark = True; torch.backends.cudnn.allow_tf32 = False; "
            "torch.backends.cuda.matmul.allow_tf32 = False; torch.manual_seed(0); "
            "print(json.dumps(torch_twin.fashion_mnist_epoch(%r, warm_up=0, epochs=2)))") % (
                os.path.dirname(os.path.abspath(__file__)), dev)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    first, warm = json.loads(out.strip().splitlines()[-1])
    print(f"torch_twin: fashion_mnist_first_epoch: first {first:.2f} s, warm {warm:.2f} s", file=sys.stderr)
    return first


# id -> (unit, measure(device) returning seconds): one long run, on the default thread count.
EPOCHS = {"fashion_mnist_epoch": ("s/epoch", fashion_mnist_epoch),
          "fashion_mnist_learner_epoch": ("s/epoch", lambda dev: fashion_mnist_epoch(dev, metrics=True)),
          "fashion_mnist_first_epoch": ("s/epoch", fashion_mnist_first_epoch)}


def next_count(n, seconds, min_time):
    """Google Benchmark's rule for the next iteration count while searching for min_time."""
    multiplier = min_time * 1.4 / max(seconds, 1e-9)
    if seconds / min_time <= 0.1:
        multiplier = min(multiplier, 10.0)
    if multiplier <= 1.0:
        multiplier = 2.0
    return max(round(multiplier * n), n + 1)


def seconds_per_iteration(fn, policy, sync):
    def run(n):
        start = time.perf_counter()
        for _ in range(n):
            fn()
            sync()
        return time.perf_counter() - start

    run(1)  # warm-up, as each kiln benchmark does
    times = []
    n = policy.iterations or 1
    if not policy.iterations:  # the search's last run is the first repetition, as in Google Benchmark
        while (t := run(n)) < policy.min_time:
            n = next_count(n, t, policy.min_time)
        times.append(t / n)
    while len(times) < policy.repetitions:
        times.append(run(n) / n)
    return statistics.median(times)


def figure(unit, work, seconds):
    if unit == "us/op":
        return seconds * 1e6 / work
    if unit == "ms/step":
        return seconds * 1e3 / work
    return work / seconds / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--only", default="", help="comma-separated workload ids")
    args = parser.parse_args()
    ids = [i for i in args.only.split(",") if i] or [
        i for i in list(WORKLOADS) + list(SPEEDUPS) + list(SERVING) + list(EPOCHS)
        if args.device == "cuda" or i not in GPU_ONLY]
    unknown = [i for i in ids if i not in WORKLOADS and i not in SPEEDUPS and i not in SERVING and i not in EPOCHS]
    if unknown:
        sys.exit(f"torch_twin.py: unknown workload {', '.join(unknown)}")
    if args.device == "cpu" and GPU_ONLY.intersection(ids):
        sys.exit(f"torch_twin.py: {', '.join(sorted(GPU_ONLY.intersection(ids)))} run on cuda only")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_twin.py: this PyTorch sees no CUDA device")
    if args.device == "cuda":
        # Plain f32 FMA (no TF32) for the f32 matmuls, f32 accumulation for f16/bf16: as kiln.
        torch.backends.cuda.matmul.allow_tf32 = False
        # The same for convolutions (cuDNN allows TF32 by default); let cuDNN pick its fastest
        # algorithm for each shape, as a tuned PyTorch program does.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    thread_counts = (1, 2) if args.device == "cpu" else (torch.get_num_threads(),)
    torch.manual_seed(0)
    print(f"torch_twin: PyTorch {torch.__version__}, device {args.device}", file=sys.stderr)

    for wid in ids:
        if wid in EPOCHS:
            unit, measure = EPOCHS[wid]
            seconds = measure(args.device)
            print(f"torch_twin: {wid}: {seconds:.1f} s on {torch.get_num_threads()} thread(s)", file=sys.stderr)
            print(json.dumps({"id": wid, "unit": unit, "better": "lower", "torch": float(f"{seconds:.4g}"),
                              "torch_threads": torch.get_num_threads()}), flush=True)
            continue
        if wid in SERVING:
            unit, better, measure = SERVING[wid]
            results = {}
            for threads in thread_counts:
                torch.set_num_threads(threads)
                results[threads] = measure(args.device, SERVE_SECONDS)
            pick = min if better == "lower" else max
            threads = pick(results, key=lambda t: results[t][0])
            value, p99 = results[threads]
            print(f"torch_twin: {wid} {unit}: " + ", ".join(
                f"{v:.4g} (p99 {p:.4g} us) on {t} thread(s)" for t, (v, p) in results.items()), file=sys.stderr)
            line = {"id": wid, "unit": unit, "better": better, "torch": float(f"{value:.4g}"),
                    "torch_p99": float(f"{p99:.4g}"), "torch_threads": threads}
            if wid == "concurrent_infer":
                line["torch_clients"] = SERVE_CLIENTS
            print(json.dumps(line), flush=True)
            continue
        if wid in SPEEDUPS:
            policy, setup = SPEEDUPS[wid]
            one, two = setup(args.device)
            torch.set_num_threads(1)
            speedup = seconds_per_iteration(one, policy, sync) / seconds_per_iteration(two, policy, sync)
            print(f"torch_twin: {wid}: speedup {speedup:.3g} of several Python threads over 1", file=sys.stderr)
            print(json.dumps({"id": wid, "unit": "x", "better": "higher", "torch": float(f"{speedup:.4g}"),
                              "torch_threads": 2}), flush=True)
            continue
        unit, work, policy, setup = WORKLOADS[wid]
        if args.device == "cuda" and wid.startswith("matmul_"):
            policy = GPU_MATMUL_POLICY
        fn = setup(args.device)
        results = {}
        for threads in thread_counts:
            torch.set_num_threads(threads)
            results[threads] = figure(unit, work, seconds_per_iteration(fn, policy, sync))
        better = "lower" if unit in ("us/op", "ms/step") else "higher"
        pick = min if better == "lower" else max
        threads = pick(results, key=results.get)
        print(f"torch_twin: {wid} {unit}: " + ", ".join(f"{v:.4g} on {t} thread(s)" for t, v in results.items()),
              file=sys.stderr)
        print(json.dumps({"id": wid, "unit": unit, "better": better, "torch": float(f"{results[threads]:.4g}"),
                          "torch_threads": threads}), flush=True)


if __name__ == "__main__":
    main()
