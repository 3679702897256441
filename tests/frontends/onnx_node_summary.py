#!/usr/bin/env python3
"""CI check of the ONNX importer against ONNX's backend node tests (docs/onnx.md).

Runs `kiln onnx-test` over every case of a folder (Debian's libonnx-testdata) with --json,
prints the summary and the failing cases, and fails when:
  - any case crashed or timed out,
  - passed / (passed + failed) < 0.95 (cases Kiln supports must pass),
  - passed / all < --floor (raised as operators land; the target is 0.80).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kiln")
    parser.add_argument("data_dir")
    parser.add_argument("--floor", type=float, required=True, help="least passed / all cases")
    parser.add_argument("--supported-floor", type=float, default=0.95, help="least passed / (passed + failed)")
    parser.add_argument("--timeout-seconds", type=float, default=60)
    parser.add_argument("-j", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    if not os.path.isdir(args.data_dir):
        print(f"onnx_node_tests: {args.data_dir} is missing (Debian package libonnx-testdata)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "cases.jsonl")
        start = time.monotonic()
        run = subprocess.run([args.kiln, "onnx-test", args.data_dir, "--json", report, "-j", str(args.j),
                              "--timeout-seconds", str(args.timeout_seconds)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        seconds = time.monotonic() - start
        if run.returncode not in (0, 1) or not os.path.exists(report):
            print(run.stdout[-5000:])
            print(f"onnx_node_tests: kiln onnx-test exited with {run.returncode}")
            return 1
        with open(report) as f:
            cases = [json.loads(line) for line in f if line.strip()]
    passed = [c for c in cases if c["status"] == "PASS"]
    failed = [c for c in cases if c["status"] == "FAIL"]
    unsupported = [c for c in cases if c["status"] == "UNSUPPORTED"]
    broken = [c for c in failed if c["message"].startswith(("crashed:", "timed out"))]
    for c in failed:
        print(f"FAIL {c['name']}: {c['message'][:300]}")
    total = len(cases)
    supported_rate = len(passed) / max(1, len(passed) + len(failed))
    pass_rate = len(passed) / max(1, total)
    print(f"{len(passed)} passed, {len(failed)} failed, {len(unsupported)} unsupported of {total} cases "
          f"in {seconds:.0f} s: {100 * pass_rate:.1f}% of all, {100 * supported_rate:.1f}% of supported")
    status = 0
    if total == 0:
        print("onnx_node_tests: no cases found")
        status = 1
    if broken:
        print(f"onnx_node_tests: {len(broken)} case(s) crashed or hung: " + ", ".join(c["name"] for c in broken))
        status = 1
    if supported_rate < args.supported_floor:
        print(f"onnx_node_tests: {100 * supported_rate:.1f}% of supported cases pass, below {100 * args.supported_floor:.0f}%")
        status = 1
    if pass_rate < args.floor:
        print(f"onnx_node_tests: {100 * pass_rate:.1f}% of all cases pass, below the floor {100 * args.floor:.1f}%")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
