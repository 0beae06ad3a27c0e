"""The PyTorch twin of kiln's main job (examples/fashion_mnist.cpp): the same CNN, loader
settings and optimizer on Fashion-MNIST, read from the same IDX files, timed per epoch.

    /usr/bin/python3 bench/fashion_mnist_twin.py [--epochs 1] [--threads N] [--root DIR]

Prints one JSON line per epoch to stdout: {"id": "fashion_mnist_epoch", "epoch": e, "seconds": s,
"test_accuracy": a}, and the settings to stderr. The model: conv 1->32 (3x3, pad 1), batch norm,
ReLU; conv 32->64 (stride 2), batch norm, ReLU; conv 64->64 (stride 2), batch norm, ReLU;
linear 3136->128, ReLU; linear 128->10. Inputs scaled to [0, 1] and normalized with Fashion-MNIST's mean and std (0.2860,
0.3530); batches of 128, shuffled each epoch; Adam, lr 1e-3; cross entropy.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def load(root, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (images.float() / 255 - MEAN) / STD
    return x.unsqueeze(1), labels.long()


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(32)
        self.conv2 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(64)
        self.conv3 = torch.nn.Conv2d(64, 64, 3, stride=2, padding=1)
        self.bn3 = torch.nn.BatchNorm2d(64)
        self.fc1 = torch.nn.Linear(64 * 7 * 7, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.relu(self.bn3(self.conv3(x)))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    train_x, train_y = load(args.root, "train")
    test_x, test_y = load(args.root, "test")
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(f"fashion_mnist_twin: PyTorch {torch.__version__}, {args.threads} thread(s)", file=sys.stderr)
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.train()
        order = torch.randperm(len(train_x))
        for i in range(0, len(order), 128):
            idx = order[i:i + 128]
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum())
                          for i in range(0, len(test_x), 1000))
        print(json.dumps({"id": "fashion_mnist_epoch", "epoch": epoch + 1, "seconds": round(seconds, 2),
                          "test_accuracy": correct / len(test_x), "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
