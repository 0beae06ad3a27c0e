#!/usr/bin/python3
"""The GPU twin of the onnx_* workloads: the same models that bench/onnx/make_models.py exports
(torchvision's resnet18 at batch 1 and 16, the 4-layer transformer encoder at batch 1, the same
seed), run by PyTorch eager on CUDA, timed as kiln's onnx_latency times a run: from a host array
to a host array (the upload, the forward pass under torch.inference_mode, the copy back), the
p50 and p99 of runs over `--seconds` after 3 warm-up runs. TF32 stays off (PyTorch's default for
matmuls; cuDNN's convolutions are set to match), as kiln computes f32 products in f32.

    torch_gpu_twin.py [--seconds S] [--only onnx_resnet18,onnx_encoder]   -> one JSON line each
"""
import argparse
import json
import time

import numpy as np
import torch
import torchvision


def twin_input(shape):
    # x[i] = ((i * 37) % 101) / 101 - 0.5, as kiln's onnx_bench.cpp and ort_twin.cpp fill it.
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (((i * 37) % 101) / 101.0 - 0.5).astype(np.float32).reshape(shape)


def latency(model, shape, seconds):
    x = twin_input(shape)
    with torch.inference_mode():
        def run():
            return model(torch.from_numpy(x).cuda()).cpu().numpy()
        for _ in range(3):
            run()
        ms = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(ms) < 10:
            t0 = time.perf_counter()
            run()
            ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[len(ms) // 2], ms[min(len(ms) - 1, int(0.99 * len(ms)))], len(ms)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--only", default="onnx_resnet18,onnx_encoder")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18().eval().cuda()
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=4).eval().cuda()
    runs = {"onnx_resnet18": [("b1", resnet, (1, 3, 224, 224)), ("b16", resnet, (16, 3, 224, 224))],
            "onnx_encoder": [("b1", encoder, (1, 128, 256))]}
    for workload in args.only.split(","):
        line = {"id": workload, "device": "cuda", "unit": "ms", "torch_version": torch.__version__,
                "gpu": torch.cuda.get_device_name()}
        for name, model, shape in runs[workload]:
            p50, p99, n = latency(model, shape, args.seconds)
            key = "torch" if name == "b1" else f"torch_{name}"
            line.update({key: round(p50, 4), f"{key}_p99": round(p99, 4), f"{key}_runs": n})
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
