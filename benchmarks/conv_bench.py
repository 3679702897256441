#!/usr/bin/env python3
"""Kiln next to ONNX Runtime on single float32 Conv and ConvTranspose layers, measured in the same run.

Each layer is a one-node ONNX model (the weight an initializer, no bias) with a symbolic
batch and constant image size. It is compiled once with `kiln compile`; for each thread count `kiln run --warmup W
--repeat R` and an ONNX Runtime session with the same thread count time it on the same
input, and the script prints both latencies, the ratio ONNX Runtime / Kiln (above 1: Kiln is
faster) and the largest difference between their outputs.

Run it through benchmarks/conv_bench.sh, which makes the virtual environment with onnx,
onnxruntime and numpy (never the set-up's). Python is only the driver: Kiln's time is what
`kiln run` measures inside one process, per call, after warm-up calls.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime
from kiln_run_timer import kiln_time
from onnx import TensorProto, helper, numpy_helper

# name: (in channels, out channels, kernel, stride, pad, spatial size, groups, op) of a square
# Conv or ConvTranspose: ResNet's layers and stem, MobileNet's depthwise 3 x 3 (early and
# late, stride 1 and 2), a ResNeXt grouped 3 x 3 (32 groups of 4 channels), ConvNeXt's 7 x 7
# depthwise and a U-Net style 2 x 2 stride-2 upsampling ConvTranspose.
LAYERS = {
    "resnet3x3": (64, 64, 3, 1, 1, 56, 1, "Conv"),
    "resnet1x1": (256, 64, 1, 1, 0, 56, 1, "Conv"),
    "stem7x7s2": (3, 64, 7, 2, 3, 224, 1, "Conv"),
    # Ragged position counts: 14 x 14 = 196 = 6 x 32 + 4 and 7 x 7 = 49 = 32 + 17 leave a
    # column-edge tile (56 x 56 = 3136 is 98 whole 32-column tiles).
    "resnet3x3_14": (256, 256, 3, 1, 1, 14, 1, "Conv"),
    "resnet3x3_7": (512, 512, 3, 1, 1, 7, 1, "Conv"),
    "dw3x3": (32, 32, 3, 1, 1, 112, 32, "Conv"),
    "dw3x3s2": (32, 32, 3, 2, 1, 112, 32, "Conv"),
    "dw3x3late": (512, 512, 3, 1, 1, 14, 512, "Conv"),
    "dw3x3lates2": (512, 512, 3, 2, 1, 14, 512, "Conv"),
    "resnext3x3": (128, 128, 3, 1, 1, 56, 32, "Conv"),
    "convnext7x7": (96, 96, 7, 1, 3, 56, 96, "Conv"),
    "upconv2x2": (64, 32, 2, 2, 0, 28, 1, "ConvTranspose"),
}


def conv_model(channels, out_channels, kernel, stride, pad, size, groups, op, rng):
    if op == "ConvTranspose":
        out = (size - 1) * stride - 2 * pad + kernel
        weight_shape = (channels, out_channels // groups, kernel, kernel)
    else:
        out = (size + 2 * pad - kernel) // stride + 1
        weight_shape = (out_channels, channels // groups, kernel, kernel)
    weight = rng.standard_normal(weight_shape).astype(np.float32) * 0.1
    node = helper.make_node(op, ["x", "w"], ["y"], kernel_shape=[kernel, kernel],
                            strides=[stride, stride], pads=[pad] * 4, group=groups)
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", out_channels, out, out])],
        initializer=[numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def ort_time(model_path, x, threads, warmup, repeat):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        y = session.run(None, {"x": x})[0]
    start = time.perf_counter()
    for _ in range(repeat):
        y = session.run(None, {"x": x})[0]
    return (time.perf_counter() - start) * 1e3 / repeat, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", default="build/kiln")
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--mcpu", default="host", help="kiln compile --mcpu (haswell: AVX2 code)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"Kiln: kiln run per call after {args.warmup} warm-up calls, mean of {args.repeat}; "
          f"ONNX Runtime {onnxruntime.__version__} the same; batch {args.batch}; --mcpu {args.mcpu}")
    print(f"{'layer':>12} {'threads':>7} {'kiln ms':>9} {'ort ms':>9} {'ort/kiln':>8} {'max |diff|':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.layers.split(","):
            channels, out_channels, kernel, stride, pad, size, groups, op = LAYERS[name]
            model_path = os.path.join(folder, f"{name}.onnx")
            onnx.save(conv_model(channels, out_channels, kernel, stride, pad, size, groups, op, rng), model_path)
            executable = os.path.join(folder, f"{name}.kx")
            compiled = subprocess.run([args.kiln, "compile", model_path, "-o", executable, "--mcpu", args.mcpu],
                                      capture_output=True, text=True)
            if compiled.returncode != 0:
                sys.exit(f"conv_bench: kiln compile failed:\n{compiled.stderr}")
            x = rng.standard_normal((args.batch, channels, size, size)).astype(np.float32)
            for threads in (int(t) for t in args.threads.split(",")):
                kiln_ms, (kiln_y,) = kiln_time(args.kiln, executable, [x], threads, args.warmup,
                                            args.repeat, folder)
                ort_ms, ort_y = ort_time(model_path, x, threads, args.warmup, args.repeat)
                diff = float(np.max(np.abs(kiln_y - ort_y)))
                print(f"{name:>12} {threads:>7} {kiln_ms:>9.3f} {ort_ms:>9.3f} "
                      f"{ort_ms / kiln_ms:>8.2f} {diff:>10.2e}", flush=True)


if __name__ == "__main__":
    main()
