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
import re
import subprocess
import sys
import tempfile
import time

SKIP = 77  # SKIP_RETURN_CODE in tests/CMakeLists.txt
API_KEY = "openai-client-test-key"


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


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
    model_path = os.path.join(os.environ.get("KILN_MODEL_DIR") or os.path.expanduser("~/.cache/kiln/models"),
                              "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(model_path):
        if os.environ.get("CI") == "true":
            fail(f"the bundled model is missing: {model_path}")
        skip("the bundled model is not fetched (scripts/fetch_model.sh)")
    print(f"openai {version} from {python}")
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            server = subprocess.Popen([kiln, "serve", "--port", "0", "--api-key", API_KEY], stdout=out, stderr=err)
        try:
            deadline = time.time() + 300  # the first run compiles the model into the cache
            match = None
            while time.time() < deadline and match is None:
                if server.poll() is not None:
                    fail(f"kiln serve exited: {open(err_path).read()[-2000:]}")
                match = re.search(r"listening on http://([0-9.]+):([0-9]+) ", open(out_path).read())
                time.sleep(0.2)
            if match is None:
                fail("kiln serve never said it was listening")
            base_url = f"http://{match.group(1)}:{match.group(2)}/v1"
            checked = subprocess.run([python, check_script, base_url, API_KEY], timeout=300)
            if checked.returncode != 0:
                fail(f"scripts/openai_client_check.py exited {checked.returncode}")
        finally:
            server.terminate()
            try:
                code = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                fail("kiln serve did not exit within 60 s of SIGTERM")
        if code != 0:
            fail(f"kiln serve exited {code} on SIGTERM: {open(err_path).read()[-2000:]}")
    print("PASS")


if __name__ == "__main__":
    main()
