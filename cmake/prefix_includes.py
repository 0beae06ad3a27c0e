#!/usr/bin/env python3
"""Rewrites kiln's own includes to the kiln/ prefix: "engine/tensor.h" -> "kiln/engine/tensor.h".

Run on files given as arguments (or every tracked C++ file when none are given). Idempotent: a
line already spelled with the prefix is left alone. Kept for branches made before the prefix.
"""
import re
import subprocess
import sys

FOLDERS = "engine|ops|streams|scheduler|memory|devices|autograd|nn|optim|io|data|train|serve|base|onnx|dist"
INCLUDE = re.compile(r'(#\s*include\s+)"(' + FOLDERS + r')/')
MOVED_TO_BASE = re.compile(r'"kiln/ops/(error|log|trace|nap)\.h"')


def rewrite(text):
    text = INCLUDE.sub(r'\1"kiln/\2/', text)
    return MOVED_TO_BASE.sub(r'"kiln/base/\1.h"', text)


def main(paths):
    if not paths:
        listed = subprocess.run(["git", "ls-files", "*.h", "*.cpp", "*.def", "*.in"],
                                capture_output=True, text=True, check=True).stdout
        paths = listed.split()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            old = f.read()
        new = rewrite(old)
        if new != old:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)


if __name__ == "__main__":
    main(sys.argv[1:])
