#!/usr/bin/env python3
"""Test data for the ONNX frontend: a small BERT-style transformer encoder exported by PyTorch.

Writes OUT/model.onnx (dynamic axes `batch` and `sequence`) and, for several shapes,
OUT/test_data_set_<i>/{input_*.pb,output_*.pb} with ONNX Runtime's outputs as the expected
values: the layout of ONNX's backend node tests, so `kiln onnx-test OUT` checks it.

Not part of the build: it needs PyTorch, onnx and onnxruntime from PyPI, in their own virtual
environment (never the set-up's). Run:
  python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install torch onnx onnxruntime numpy
  /tmp/onnx-venv/bin/python scripts/make_onnx_encoder.py tests/frontends/onnx_encoder
"""
import argparse
import math
import os
import shutil

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import numpy_helper

VOCAB, MAX_POSITIONS, HIDDEN, HEADS, FFN, LAYERS = 96, 256, 64, 4, 128, 2


class SelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, additive_mask):
        # Shapes come from x.size() at run time: the exporter writes Shape/Gather/Concat/Reshape.
        batch, sequence = x.size(0), x.size(1)
        q, k, v = self.qkv(x).split(HIDDEN, dim=-1)
        heads = lambda t: t.reshape(batch, sequence, HEADS, HIDDEN // HEADS).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS) + additive_mask
        context = torch.softmax(scores, dim=-1) @ v
        return self.out(context.transpose(1, 2).reshape(batch, sequence, HIDDEN))


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.norm1 = torch.nn.LayerNorm(HIDDEN, eps=1e-12)
        self.up = torch.nn.Linear(HIDDEN, FFN)
        self.down = torch.nn.Linear(FFN, HIDDEN)
        self.norm2 = torch.nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x, additive_mask):
        x = self.norm1(x + self.attention(x, additive_mask))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, HIDDEN)
        self.positions = torch.nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = torch.nn.ModuleList(EncoderLayer() for _ in range(LAYERS))
        self.pooler = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.size(1), dtype=torch.int64).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions))
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive_mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output folder (replaced)")
    parser.add_argument("--shapes", default="1x1,1x7,2x16,3x64,1x200",
                        help="batch x sequence of each test data set")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Encoder().eval()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    model_path = os.path.join(args.out, "model.onnx")
    example = (torch.zeros(2, 5, dtype=torch.int64), torch.ones(2, 5, dtype=torch.int64))
    dynamic = {0: "batch", 1: "sequence"}
    torch.onnx.export(model, example, model_path, opset_version=17, dynamo=False,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["hidden_states", "pooled"],
                      dynamic_axes={"input_ids": dynamic, "attention_mask": dynamic,
                                    "hidden_states": dynamic, "pooled": {0: "batch"}})
    onnx.checker.check_model(onnx.load(model_path))

    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for i, shape in enumerate(args.shapes.split(",")):
        batch, sequence = (int(s) for s in shape.split("x"))
        input_ids = rng.integers(0, VOCAB, size=(batch, sequence), dtype=np.int64)
        attention_mask = np.ones((batch, sequence), dtype=np.int64)
        for row in range(1, batch):  # later rows are padded at the end
            attention_mask[row, sequence - (row * sequence) // batch:] = 0
        outputs = session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        data_set = os.path.join(args.out, f"test_data_set_{i}")
        os.makedirs(data_set)
        write_tensor(os.path.join(data_set, "input_0.pb"), input_ids, "input_ids")
        write_tensor(os.path.join(data_set, "input_1.pb"), attention_mask, "attention_mask")
        for j, (name, value) in enumerate(zip(["hidden_states", "pooled"], outputs)):
            write_tensor(os.path.join(data_set, f"output_{j}.pb"), value, name)
    ops = sorted({node.op_type for node in onnx.load(model_path).graph.node})
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes), ops: {' '.join(ops)}")


if __name__ == "__main__":
    main()
