"""`kiln run`'s own per-call time for the Python benchmark drivers (conv_bench, onnx_encoder_bench).

Writes each input as FOLDER/input_<i>.npy, runs `kiln run EXECUTABLE --warmup W --repeat R` with
KILN_NUM_THREADS set, and returns the milliseconds per call it printed with the first `outputs`
outputs read back from FOLDER. A failed run ends the benchmark with kiln's error.
"""
import os
import re
import subprocess
import sys

import numpy as np


def kiln_time(kiln, executable, inputs, threads, warmup, repeat, folder, outputs=1):
    args = [kiln, "run", executable, "--warmup", str(warmup), "--repeat", str(repeat), "--output-dir", folder]
    for i, array in enumerate(inputs):
        path = os.path.join(folder, f"input_{i}.npy")
        np.save(path, array)
        args += ["--input", path]
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    name = os.path.basename(sys.argv[0])
    if done.returncode != 0:
        sys.exit(f"{name}: {' '.join(args)} failed:\n{done.stderr}")
    match = re.search(r"time: ([0-9.]+) ms per call", done.stdout)
    if not match:
        sys.exit(f"{name}: no time in kiln run's output:\n{done.stdout}")
    return float(match.group(1)), [np.load(os.path.join(folder, f"output_{i}.npy")) for i in range(outputs)]
