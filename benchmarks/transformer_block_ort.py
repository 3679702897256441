"""ONNX Runtime's side of benchmarks/transformer_bench: the transformer encoder block of
examples/models/transformer_block.kir written as an ONNX graph (the same operations in the
same order), run on the weights and input transformer_bench wrote, timed the way
transformer_bench times Kiln (median of one call after a warm-up call).

    python transformer_block_ort.py --dir DIR --n N --threads T

DIR holds raw little-endian float32 files: w0.bin .. w11.bin (the block's parameters after
x, in the .kir's order) and x_N.bin (N x 64). Writes out_N.bin (ONNX Runtime's output, for
transformer_bench to check against Kiln's) and prints one line "ms=<median milliseconds>".
Weights are initializers, as an exported model ships them (ONNX Runtime may pre-pack them).
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

D, F = 64, 256
WEIGHT_NAMES = ["wq", "wk", "wv", "wo", "ln1_g", "ln1_b", "w1", "bias1", "w2", "bias2", "ln2_g", "ln2_b"]
WEIGHT_SHAPES = [(D, D), (D, D), (D, D), (D, D), (D,), (D,), (D, F), (F,), (F, D), (D,), (D,), (D,)]


def block_model(weights):
    """The .kir block as ONNX (opset 17): single-head attention with a residual, layer
    norm, an erf GELU MLP with a residual, layer norm."""
    def scalar(name, value):
        return numpy_helper.from_array(np.array(value, dtype=np.float32), name)

    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["attn"]),
        helper.make_node("MatMul", ["attn", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["res1"]),
        helper.make_node("LayerNormalization", ["res1", "ln1_g", "ln1_b"], ["norm1"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["norm1", "w1"], ["up"]),
        helper.make_node("Add", ["up", "bias1"], ["up_b"]),
        # gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), as Kiln legalizes R.gelu.
        helper.make_node("Mul", ["up_b", "inv_sqrt2"], ["gelu_in"]),
        helper.make_node("Erf", ["gelu_in"], ["gelu_erf"]),
        helper.make_node("Add", ["gelu_erf", "one"], ["gelu_1"]),
        helper.make_node("Mul", ["up_b", "gelu_1"], ["gelu_x"]),
        helper.make_node("Mul", ["gelu_x", "half"], ["act"]),
        helper.make_node("MatMul", ["act", "w2"], ["down"]),
        helper.make_node("Add", ["down", "bias2"], ["down_b"]),
        helper.make_node("Add", ["norm1", "down_b"], ["res2"]),
        helper.make_node("LayerNormalization", ["res2", "ln2_g", "ln2_b"], ["out"], axis=-1, epsilon=1e-5),
    ]
    initializers = [numpy_helper.from_array(w, name) for name, w in zip(WEIGHT_NAMES, weights)]
    initializers += [scalar("scale", 0.125), scalar("inv_sqrt2", 1 / math.sqrt(2)), scalar("one", 1.0),
                     scalar("half", 0.5)]
    graph = helper.make_graph(nodes, "transformer_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", D])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", D])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def read(path, shape):
    data = np.fromfile(path, dtype="<f4")
    if data.size != math.prod(shape):
        sys.exit(f"transformer_block_ort.py: {path} holds {data.size} floats, want {math.prod(shape)}")
    return data.reshape(shape)


def median_seconds(call, budget=0.25, min_samples=15):
    """Median seconds of one call after a warm-up call: samples until both `min_samples` and
    `budget` seconds are in (at most 5000), as transformer_bench samples Kiln."""
    call()
    samples, spent = [], 0.0
    while len(samples) < 5000 and (len(samples) < min_samples or spent < budget):
        t0 = time.perf_counter()
        call()
        s = time.perf_counter() - t0
        samples.append(s)
        spent += s
    samples.sort()
    return samples[len(samples) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    weights = [read(os.path.join(args.dir, f"w{i}.bin"), s) for i, s in enumerate(WEIGHT_SHAPES)]
    x = read(os.path.join(args.dir, f"x_{args.n}.bin"), (args.n, D))

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(block_model(weights).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feed = {"x": x}
    out = session.run(None, feed)[0]
    out.astype("<f4").tofile(os.path.join(args.dir, f"out_{args.n}.bin"))
    print(f"ms={1e3 * median_seconds(lambda: session.run(None, feed)):.6f}")


if __name__ == "__main__":
    main()
