#!/usr/bin/env python3
"""Kiln next to ONNX Runtime on the same ONNX encoder (issue 14), measured in the same run.

Compiles the model once with `kiln compile` (symbolic batch and sequence), then for each
thread count, batch and sequence length times `kiln run --warmup W --repeat R` and an ONNX
Runtime session with the same thread count on the same inputs, and prints both latencies and
the ratio ONNX Runtime / Kiln (above 1: Kiln is faster). It also checks that the two agree.

Run it through benchmarks/onnx_encoder_bench.sh, which makes the virtual environment with
onnxruntime and numpy (never the set-up's). Python is only the driver here: Kiln's time is
what `kiln run` measures inside one process, per call, after warm-up calls.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime
from kiln_run_timer import kiln_time


def ort_time(model, names, inputs, threads, warmup, repeat):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, inputs))
    for _ in range(warmup):
        outputs = session.run(None, feed)
    start = time.perf_counter()
    for _ in range(repeat):
        outputs = session.run(None, feed)
    return (time.perf_counter() - start) * 1e3 / repeat, outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", default="build/kiln")
    parser.add_argument("--model", default="tests/frontends/onnx_encoder/model.onnx")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--sequences", default="16,128")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        executable = os.path.join(folder, "encoder.kx")
        compiled = subprocess.run([args.kiln, "compile", args.model, "-o", executable],
                                  capture_output=True, text=True)
        if compiled.returncode != 0:
            sys.exit(f"onnx_encoder_bench: kiln compile failed:\n{compiled.stderr}")
        session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        print(f"model {args.model}; Kiln: kiln run per call after {args.warmup} warm-up calls, "
              f"mean of {args.repeat}; ONNX Runtime {onnxruntime.__version__} the same")
        print(f"{'threads':>7} {'batch':>5} {'seq':>5} {'kiln ms':>9} {'ort ms':>9} "
              f"{'ort/kiln':>8} {'max |diff|':>10}")
        rng = np.random.default_rng(0)
        for threads in (int(t) for t in args.threads.split(",")):
            for batch in (int(b) for b in args.batches.split(",")):
                for sequence in (int(s) for s in args.sequences.split(",")):
                    ids = rng.integers(0, 96, size=(batch, sequence), dtype=np.int64)
                    mask = np.ones((batch, sequence), dtype=np.int64)
                    inputs = [ids, mask]
                    kiln_ms, kiln_out = kiln_time(args.kiln, executable, inputs, threads,
                                                  args.warmup, args.repeat, folder, outputs=2)
                    ort_ms, ort_out = ort_time(args.model, names, inputs, threads, args.warmup,
                                               args.repeat)
                    diff = max(float(np.max(np.abs(k - o))) for k, o in zip(kiln_out, ort_out))
                    print(f"{threads:>7} {batch:>5} {sequence:>5} {kiln_ms:>9.3f} {ort_ms:>9.3f} "
                          f"{ort_ms / kiln_ms:>8.2f} {diff:>10.2e}", flush=True)


if __name__ == "__main__":
    main()
