#!/usr/bin/python3
"""Writes the ONNX backend node tests (onnx/backend/test/data/node) from Debian's python3-onnx.

Usage: gen_onnx_node_tests.py OUT_DIR [OP_TYPE]

Each case becomes OUT_DIR/<case>/model.onnx and test_data_set_N/{input,output}_K.pb, the layout
that `kiln-onnx test` reads. onnx 1.12's generators still use NumPy's aliases np.float, np.int,
np.bool and np.object, which NumPy 1.24 removed: they are put back before the generators load.
Cases are generated into the build tree by the test run (a few MB, not committed).
"""
import os
import shutil
import sys

import numpy as np

for alias, target in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, target)

import onnx.backend.test.case.node as node_test  # noqa: E402  (after the aliases)
from onnx import numpy_helper  # noqa: E402


def write_case(case, out_dir):
    case_dir = os.path.join(out_dir, case.name)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(set_dir)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                if not infos[j].type.HasField("tensor_type"):
                    # Sequences, maps and optionals: kiln's loader takes tensors only; the
                    # model itself then reports the case as unsupported.
                    continue
                with open(os.path.join(set_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(value), infos[j].name).SerializeToString())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    op_type = sys.argv[2] if len(sys.argv) > 2 else None
    os.makedirs(out_dir, exist_ok=True)
    count = 0
    for case in node_test.collect_testcases(op_type):
        if case.model is None or not case.data_sets:
            continue
        write_case(case, out_dir)
        count += 1
    print(f"{count} ONNX node test cases in {out_dir}")


if __name__ == "__main__":
    main()
