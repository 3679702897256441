#!/usr/bin/env python3
"""The official OpenAI Python client (PyPI `openai`) against a real `kiln serve` on loopback.

Starts `kiln serve --port 0 --api-key KEY` on the bundled model and runs
scripts/openai_client_check.py (models, completions and chat completions, streaming and
not, and the errors the client maps to its exceptions) with a Python that has `openai`:
$KILN_OPENAI_PYTHON, else ~/.cache/kiln/bench-venv/bin/python (the benchmarks' venv) when
it exists. CI installs no PyPI packages, so without such a Python the test exits 77, which
ctest reports as skipped, saying why. Then SIGTERM must end the server with status 0.

  argv[1]: the kiln binary; argv[2]: scripts/openai_client_check.py
"""
import os
import subprocess
import sys

import kiln_server

SKIP = 77  # SKIP_RETURN_CODE in tests/CMakeLists.txt
API_KEY = "openai-client-test-key"


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


fail = kiln_server.fail


def python_with_openai():
    chosen = os.environ.get("KILN_OPENAI_PYTHON")
    candidates = [chosen] if chosen else [os.path.expanduser("~/.cache/kiln/bench-venv/bin/python")]
    for python in candidates:
        if not os.path.exists(python):
            continue
        probe = subprocess.run([python, "-c", "import openai; print(openai.__version__)"], capture_output=True,
                               text=True)
        if probe.returncode == 0:
            return python, probe.stdout.strip()
        if chosen:
            fail(f"KILN_OPENAI_PYTHON={chosen} cannot import openai: {probe.stderr.strip()[-300:]}")
    skip("no Python with the openai package (set KILN_OPENAI_PYTHON, or pip install openai into "
         "~/.cache/kiln/bench-venv)")


def main():
    kiln, check_script = sys.argv[1], sys.argv[2]
    python, version = python_with_openai()
    kiln_server.bundled_model_or_skip(SKIP)
    print(f"openai {version} from {python}")
    with kiln_server.serving(kiln, ["--api-key", API_KEY]) as server:
        base_url = f"http://{server.host}:{server.port}/v1"
        checked = subprocess.run([python, check_script, base_url, API_KEY], timeout=300)
        if checked.returncode != 0:
            fail(f"scripts/openai_client_check.py exited {checked.returncode}")
    print("PASS")


if __name__ == "__main__":
    main()
