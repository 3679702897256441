"""`kiln serve` on the bundled model for the Python end-to-end tests (stdlib only).

    with kiln_server.serving(kiln, ["--api-key", KEY]) as server:
        ... server.host, server.port, server.model, server.process ...

Starts `kiln serve --port 0 ARGS`, waits for its "listening on" line (the first run compiles
the model into the cache), and at the end sends SIGTERM, which must drain and exit 0.
bundled_model_or_skip() first: without the fetched model a test skips (fails under CI).
"""
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def bundled_model_or_skip(skip_code=0):
    """Returns when the bundled model is there; else fails under CI, or prints SKIP and exits."""
    path = os.path.join(os.environ.get("KILN_MODEL_DIR") or os.path.expanduser("~/.cache/kiln/models"),
                        "SmolLM2-135M-Instruct.Q4_1.gguf")
    if os.path.exists(path):
        return
    if os.environ.get("CI") == "true":
        fail(f"the bundled model is missing: {path}")
    print("SKIP: the bundled model is not fetched (scripts/fetch_model.sh)")
    sys.exit(skip_code)


class Server:
    def __init__(self, process, host, port, model):
        self.process, self.host, self.port, self.model = process, host, port, model


@contextlib.contextmanager
def serving(kiln, args=()):
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            process = subprocess.Popen([kiln, "serve", "--port", "0", *args], stdout=out, stderr=err)
        try:
            deadline = time.time() + 300
            match = None
            while time.time() < deadline and match is None:
                if process.poll() is not None:
                    fail(f"kiln serve exited: {open(err_path).read()[-2000:]}")
                match = re.search(r"listening on http://([0-9.]+):([0-9]+) \(model '(.*)',", open(out_path).read())
                time.sleep(0.2)
            if match is None:
                fail("kiln serve never said it was listening")
            yield Server(process, match.group(1), int(match.group(2)), match.group(3))
        finally:
            process.terminate()
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                fail("kiln serve did not exit within 60 s of SIGTERM")
        if code != 0:
            fail(f"kiln serve exited {code} on SIGTERM: {open(err_path).read()[-2000:]}")
