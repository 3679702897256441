#!/usr/bin/env python3
"""Writes test cases for what ONNX proposes after 1.23 (open pull requests of onnx/onnx, not
in onnx 1.23.2): GeGLU (#8266), MeanVarianceNormalization's `epsilon` (#8281) and
LinearAttention's `erase_gate` input (#8064), at shapes and settings beyond those pull
requests' own node cases, in the layout `kiln onnx-test OUT` reads.
tests/frontends/onnx_proposed_cases holds its output (the ctest onnx_proposed_cases).

onnx 1.23.2's reference evaluator does not know these operators, so the expected outputs
come from the naive float64 numpy evaluators below, written from the pull requests'
operator specifications. Data generation only, never part of the build or CI. Run:
  /work/venv-peer/bin/python scripts/make_onnx_proposed_cases.py tests/frontends/onnx_proposed_cases
"""
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPSET = 28  # the opset those pull requests add the operators at
out = sys.argv[1]
for old in os.listdir(out) if os.path.isdir(out) else []:
    if os.path.isdir(os.path.join(out, old)) and not old.startswith("test_"):
        shutil.rmtree(os.path.join(out, old))  # this script's cases, not the README or ONNX's
rng = np.random.default_rng(28)


def case(name, node, inputs, outputs):
    """OUT/name: one node over `inputs` and `outputs` ((name, array, dims) each; a dim given
    as a string is symbolic)."""
    def info(n, a, dims):
        return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), dims)
    graph = helper.make_graph([node], name, [info(*i) for i in inputs], [info(*o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    d = os.path.join(out, name, "test_data_set_0")
    os.makedirs(d)
    onnx.save(model, os.path.join(out, name, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, (n, a, _) in enumerate(values):
            with open(os.path.join(d, f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


# --- GeGLU: Gelu(A, approximate) * B, A and B of one shape.
def gelu(a, approximate):
    a = a.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


for name, shape, dims, approximate, dtype in [
    ("geglu_symbolic_batch_4d", (3, 2, 5, 7), ["b", 2, 5, 7], None, np.float32),
    ("geglu_tanh_float64", (4, 9), [4, 9], "tanh", np.float64),
    ("geglu_tanh_wide_range", (2, 64), [2, 64], "tanh", np.float32),
]:
    scale = 6.0 if "wide" in name else 2.0
    a = (rng.standard_normal(shape) * scale).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    attrs = {"approximate": approximate} if approximate else {}
    y = (gelu(a, approximate) * b).astype(dtype)
    case(name, helper.make_node("GeGLU", ["A", "B"], ["Y"], **attrs),
         [("A", a, dims), ("B", b, dims)], [("Y", y, dims)])

# --- MeanVarianceNormalization with epsilon: (x - mean) / (sqrt(variance) + epsilon).
for name, shape, axes, epsilon in [
    ("mvn_epsilon_large_default_axes", (2, 3, 4, 5), None, 0.5),
    ("mvn_epsilon_axes_1_2", (3, 4, 6), [1, 2], 0.25),
]:
    x = rng.standard_normal(shape).astype(np.float32) * 0.3
    red = tuple(axes if axes else (0, 2, 3))
    x64 = x.astype(np.float64)
    y = (x64 - x64.mean(axis=red, keepdims=True)) / (np.sqrt(x64.var(axis=red, keepdims=True)) + epsilon)
    attrs = {"epsilon": epsilon}
    if axes:
        attrs["axes"] = axes
    case(name, helper.make_node("MeanVarianceNormalization", ["X"], ["Y"], **attrs),
         [("X", x, list(shape))], [("Y", y.astype(np.float32), list(shape))])


# --- LinearAttention with erase_gate: the recurrence token by token, in float64.
def linear_attention(q, k, v, past, decay, beta, erase, hq, hkv, rule):
    bsz, t, _ = q.shape
    dk = q.shape[2] // hq
    dv = v.shape[2] // hkv
    group = hq // hkv
    state = np.zeros((bsz, hkv, dk, dv)) if past is None else past.astype(np.float64).copy()
    y = np.zeros((bsz, t, hq * dv))
    for n in range(bsz):
        for h in range(hkv):
            s = state[n, h]
            for i in range(t):
                kt = k[n, i, h * dk:(h + 1) * dk].astype(np.float64)
                vt = v[n, i, h * dv:(h + 1) * dv].astype(np.float64)
                if rule in ("gated", "gated_delta"):
                    g = decay[n, i]
                    g = g[h] if g.shape[0] == hkv else g[h * dk:(h + 1) * dk]
                    s = s * np.exp(np.asarray(g, np.float64)).reshape(-1, 1)
                if rule in ("delta", "gated_delta"):
                    bt = beta[n, i, h if beta.shape[2] == hkv else 0]
                    ke = kt if erase is None else erase[n, i, h * dk:(h + 1) * dk] * kt
                    vt = bt * (vt - s.T @ ke)
                s = s + np.outer(kt, vt)
                for g_ in range(group):
                    qh = h * group + g_
                    qt = q[n, i, qh * dk:(qh + 1) * dk].astype(np.float64)
                    y[n, i, qh * dv:(qh + 1) * dv] = (qt @ s) / math.sqrt(dk)
            state[n, h] = s
    return y, state


for name, bsz, t, hq, hkv, dk, dv, rule, decay_last, beta_last, with_past in [
    ("linear_attention_gated_delta_erase_gate_gqa_past", 2, 5, 4, 2, 3, 4, "gated_delta", "keys", "one", True),
    ("linear_attention_delta_erase_gate", 1, 6, 2, 2, 4, 3, "delta", None, "heads", False),
]:
    f32 = np.float32
    q = rng.standard_normal((bsz, t, hq * dk)).astype(f32)
    k = rng.standard_normal((bsz, t, hkv, dk))
    k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).reshape(bsz, t, hkv * dk).astype(f32)
    v = rng.standard_normal((bsz, t, hkv * dv)).astype(f32)
    erase = rng.uniform(0, 1, (bsz, t, hkv * dk)).astype(f32)
    beta = rng.uniform(0.2, 0.9, (bsz, t, hkv if beta_last == "heads" else 1)).astype(f32)
    decay = None
    if decay_last:
        decay = -rng.uniform(0.05, 0.5, (bsz, t, hkv * dk if decay_last == "keys" else hkv)).astype(f32)
    past = rng.standard_normal((bsz, hkv, dk, dv)).astype(f32) * 0.5 if with_past else None
    y, state = linear_attention(q, k, v, past, decay, beta, erase, hq, hkv, rule)
    inputs = [("query", q), ("key", k), ("value", v), ("past_state", past), ("decay", decay),
              ("beta", beta), ("erase_gate", erase)]
    node = helper.make_node("LinearAttention", [n if a is not None else "" for n, a in inputs],
                            ["output", "present_state"], update_rule=rule, q_num_heads=hq, kv_num_heads=hkv)
    case(name, node, [(n, a, list(a.shape)) for n, a in inputs if a is not None],
         [("output", y.astype(f32), [bsz, t, hq * dv]), ("present_state", state.astype(f32), [bsz, hkv, dk, dv])])
