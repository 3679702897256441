#!/usr/bin/env python3
"""Writes ONNX's backend node test cases from the installed `onnx` package's case definitions.

Debian's libonnx-testdata (ONNX 1.12, CI's set) stops at opset 17; newer ONNX releases add
operators and opset versions. The PyPI wheel ships the case definitions but not their data:
this writes OUT/<case>/model.onnx and OUT/<case>/test_data_set_<i>/{input,output}_<j>.pb
for every node case, the layout `kiln onnx-test OUT` reads (docs/onnx.md, "Current results").

Data generation only, never part of the build or CI. Run:
  python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx numpy
  /tmp/onnx-venv/bin/python scripts/make_onnx_node_tests.py /tmp/onnx-node-new
"""
import argparse
import os

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def proto_of(value, info):
    """A TensorProto, or for the graph's sequence / optional values a SequenceProto /
    OptionalProto (what ONNX's own test data holds; `kiln onnx-test` reads them by the
    model's declared type)."""
    kind = info.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(list(value), info.name, onnx.SequenceProto.TENSOR)
    if kind == "optional_type":
        inner = info.type.optional_type.elem_type.WhichOneof("value")
        elem_type = onnx.OptionalProto.SEQUENCE if inner == "sequence_type" else onnx.OptionalProto.TENSOR
        return numpy_helper.from_optional(value, info.name, elem_type)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, info.name)


def write(path, value, info):
    with open(path, "wb") as f:
        f.write(proto_of(value, info).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output folder")
    args = parser.parse_args()
    cases = node.collect_testcases(None)
    skipped = 0
    for case in cases:
        folder = os.path.join(args.out, case.name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_set = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data_set, exist_ok=True)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    try:  # maps (no node case has one) and anything else unwritable: left out
                        write(os.path.join(data_set, f"{kind}_{j}.pb"), value, infos[j])
                    except Exception:
                        skipped += 1
    print(f"onnx {onnx.__version__}: {len(cases)} node cases in {args.out} "
          f"({skipped} values left out)")


if __name__ == "__main__":
    main()
