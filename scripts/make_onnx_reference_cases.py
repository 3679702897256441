#!/usr/bin/env python3
"""Writes ONNX test cases for STFT, MelWeightMatrix and QLinearConv (and one DFT, and Cast /
(De)QuantizeLinear with the FP6 element types) at shapes
beyond ONNX's node tests (odd lengths, symbolic batch, onesided / two-sided, complex signals,
per-channel scales, groups, dilations, auto_pad, int8 / uint8, run-time mel edges), with the expected
outputs of ONNX's reference evaluator (onnx.reference.ReferenceEvaluator), in the layout
`kiln onnx-test OUT` reads. tests/frontends/onnx_reference_cases holds its output (the ctest
onnx_reference_cases).

Data generation only, never part of the build or CI. Run (numpy 2, onnx 1.23):
  python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx numpy
  /tmp/onnx-venv/bin/python scripts/make_onnx_reference_cases.py tests/frontends/onnx_reference_cases
"""
import os
import shutil
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
for old in os.listdir(out) if os.path.isdir(out) else []:
    if os.path.isdir(os.path.join(out, old)):
        shutil.rmtree(os.path.join(out, old))  # the cases, not the README
rng = np.random.default_rng(7)

def case(name, node, inputs, opset, out_type, pre_nodes=()):
    """Writes OUT/name: a model of pre_nodes + node over `inputs` ((name, array, dims) each;
    a dim "b" symbolic) and the reference's output for those arrays."""
    graph_inputs = []
    for (iname, arr, dims) in inputs:
        graph_inputs.append(helper.make_tensor_value_info(iname, helper.np_dtype_to_tensor_dtype(arr.dtype), dims))
    def model(shape):
        y = helper.make_tensor_value_info(node.output[0], out_type, shape)
        g = helper.make_graph(list(pre_nodes) + [node], name, graph_inputs, [y])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m
    res = ReferenceEvaluator(model(None)).run(None, {k: v for k, v, _ in inputs})
    shape = list(res[0].shape)
    if inputs[0][2] and inputs[0][2][0] == "b":
        shape[0] = "b"
    m = model(shape)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (k, v, _) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, r in enumerate(res):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(r), node.output[i]).SerializeToString())

f32 = np.float32
# --- STFT
for (name, batch, length, parts, step, fl, window, onesided, dims0) in [
    ("stft_odd_length_window", 2, 101, 1, 7, 12, True, 1, "b"),
    ("stft_odd_frame_twosided", 3, 64, 1, 5, 15, False, 0, "b"),
    ("stft_complex_twosided", 2, 50, 2, 4, 10, True, 0, 2),
    ("stft_complex_onesided", 1, 33, 2, 3, 8, False, 1, 1),
    ("stft_step_larger_than_frame", 1, 40, 1, 9, 6, True, 1, 1),
    ("stft_float64", 2, 30, 1, 2, 7, True, 1, "b"),
]:
    dtype = np.float64 if "float64" in name else f32
    x = rng.standard_normal((batch, length, parts)).astype(dtype)
    inputs = [("signal", x, [dims0, length, parts]), ("frame_step", np.array(step, np.int64), [])]
    node_inputs = ["signal", "frame_step"]
    if window:
        w = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(fl) / fl)).astype(dtype)
        inputs.append(("window", w, [fl]))
        node_inputs.append("window")
    else:
        node_inputs.append("")
        inputs.append(("frame_length", np.array(fl, np.int64), []))
        node_inputs.append("frame_length")
    node = helper.make_node("STFT", node_inputs, ["y"], onesided=onesided)
    case(name, node, inputs, 17, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

# --- MelWeightMatrix
for (name, mel, dft, sr, lo, hi, odt) in [
    ("melweightmatrix_speech", 10, 64, 16000, 20.0, 8000.0, None),
    ("melweightmatrix_odd_dft_double", 7, 45, 8000, 100.0, 3900.0, TensorProto.DOUBLE),
    ("melweightmatrix_narrow_band", 5, 128, 22050, 300.0, 600.0, None),
    ("melweightmatrix_many_bins", 40, 512, 16000, 0.0, 8000.0, TensorProto.FLOAT16),
    ("melweightmatrix_float16_edges", 12, 100, 11025, 50.0, 5000.0, None),
]:
    edge_t = np.float16 if "float16_edges" in name else (np.float64 if "double" in name else f32)
    inputs = [("num_mel_bins", np.array(mel, np.int32), []), ("dft_length", np.array(dft, np.int64), []),
              ("sample_rate", np.array(sr, np.int32), []), ("lower_edge_hertz", np.array(lo, edge_t), []),
              ("upper_edge_hertz", np.array(hi, edge_t), [])]
    kw = {} if odt is None else {"output_datatype": odt}
    node = helper.make_node("MelWeightMatrix", [i[0] for i in inputs], ["y"], **kw)
    case(name, node, inputs, 17, TensorProto.FLOAT if odt is None else odt)
    # sample_rate and the edges computed from run-time data (Identity): Kiln's run-time path.
    pre = [helper.make_node("Identity", [n], [n + "_run_time"]) for n in ("sample_rate", "lower_edge_hertz", "upper_edge_hertz")]
    node = helper.make_node("MelWeightMatrix", ["num_mel_bins", "dft_length"] + [p.output[0] for p in pre], ["y"], **kw)
    case(name + "_run_time", node, inputs, 17, TensorProto.FLOAT if odt is None else odt, pre_nodes=pre)

# --- QLinearConv
def qconv(name, xt, wt, yt, xshape, wshape, per_channel, bias, **attrs):
    lo = lambda t: -128 if t == np.int8 else 0
    hi = lambda t: 127 if t == np.int8 else 255
    x = rng.integers(lo(xt), hi(xt) + 1, xshape).astype(xt)
    w = rng.integers(lo(wt), hi(wt) + 1, wshape).astype(wt)
    m = wshape[0]
    x_scale = np.array(0.02, f32); y_scale = np.array(0.7 if bias else 0.5, f32)
    x_zp = np.array(3 if xt == np.int8 else 128, xt)
    if per_channel:
        w_scale = rng.uniform(0.005, 0.03, m).astype(f32)
        w_zp = (rng.integers(-5, 6, m) if wt == np.int8 else rng.integers(120, 136, m)).astype(wt)
    else:
        w_scale = np.array(0.01, f32); w_zp = np.array(0 if wt == np.int8 else 127, wt)
    y_zp = np.array(-2 if yt == np.int8 else 120, yt)
    inputs = [("x", x, list(xshape)), ("x_scale", x_scale, []), ("x_zero_point", x_zp, []),
              ("w", w, list(wshape)), ("w_scale", w_scale, list(w_scale.shape)),
              ("w_zero_point", w_zp, list(w_zp.shape)), ("y_scale", y_scale, []), ("y_zero_point", y_zp, [])]
    if bias:
        inputs.append(("B", rng.integers(-20000, 20000, m).astype(np.int32), [m]))
    node = helper.make_node("QLinearConv", [i[0] for i in inputs], ["y"], **attrs)
    case(name, node, inputs, 10, helper.np_dtype_to_tensor_dtype(np.dtype(yt)))

qconv("qlinearconv_int8_per_channel_bias", np.int8, np.int8, np.int8, (2, 4, 9, 8), (6, 4, 3, 3), True, True,
      pads=[1, 0, 2, 1], strides=[2, 1])
qconv("qlinearconv_uint8_groups_dilations", np.uint8, np.uint8, np.uint8, (1, 6, 11, 10), (4, 3, 3, 2), True, False,
      group=2, dilations=[2, 3], pads=[1, 1, 1, 1])
qconv("qlinearconv_uint8_int8w_per_tensor", np.uint8, np.int8, np.uint8, (1, 3, 7, 7), (5, 3, 3, 3), False, True,
      strides=[2, 2], auto_pad="SAME_UPPER")
qconv("qlinearconv_int8_depthwise", np.int8, np.int8, np.int8, (1, 4, 6, 6), (4, 1, 3, 3), True, True,
      group=4, pads=[1, 1, 1, 1])

# --- DFT with a symbolic batch (the axis transformed, the other dims symbolic)
x = rng.standard_normal((3, 5, 12, 2)).astype(f32)
node = helper.make_node("DFT", ["x", "", "axis"], ["y"], onesided=0)
case("dft_symbolic_batch_axis2", node, [("x", x, ["b", 5, 12, 2]), ("axis", np.array(2, np.int64), [])], 20,
     TensorProto.FLOAT)

# --- The FP6 element types (Cast, QuantizeLinear, DequantizeLinear 28): round to nearest
# even, saturate (no infinities or NaN), subnormals; 25 and 7 elements, so the 6-bit packing
# (4 elements in 3 bytes) ends mid-group. Their own generator, so the cases above stay as they were.
fp6_rng = np.random.default_rng(6)
edges = np.array([0, 0.1, 0.3, 1.3, 2.6, 7.4, 7.6, 100, -3.2, -0.06, -1000, 0.0624], f32)
x25 = np.concatenate([edges, fp6_rng.standard_normal(13).astype(f32) * 4]).reshape(5, 5)
x7 = (fp6_rng.standard_normal(7) * 10).astype(f32)
for fp6 in ("FLOAT6E2M3", "FLOAT6E3M2"):
    t = getattr(TensorProto, fp6)
    node = helper.make_node("Cast", ["x"], ["y"], to=t)
    case(f"cast_float_to_{fp6.lower()}", node, [("x", x25, [5, 5])], 28, t)
    y = ReferenceEvaluator(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("y", t, [7])]), opset_imports=[helper.make_opsetid("", 28)])).run(None, {"x": x7})[0]
    case(f"cast_{fp6.lower()}_to_float_7", helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT),
         [("y", y, [7])], 28, TensorProto.FLOAT)
    scale = np.array(0.5, f32)
    case(f"quantizelinear_{fp6.lower()}", helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=t),
         [("x", x25, [5, 5]), ("s", scale, [])], 28, t)
    case(f"dequantizelinear_{fp6.lower()}_7", helper.make_node("DequantizeLinear", ["q", "s"], ["y"]),
         [("q", y, [7]), ("s", scale, [])], 28, TensorProto.FLOAT)
