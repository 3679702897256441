#!/usr/bin/env python3
"""serve_bench: `kiln serve` against llama.cpp's server on the same model and prompts.

For each concurrency C (default 1, 4, 16, 64) it sends C streaming completions at once,
C * --rounds in all (each client sends its next request when the previous one ends), and
reports generated tokens per second over the level's wall time, time to first token and
inter-token latency (between consecutive streamed events) at p50 and p99. Then a burst
phase: while C=4 short streams run, --burst long prompts arrive; the p99 inter-token latency
of the short streams during the burst is compared with its idle value (the issue's target:
no worse than 2x). Greedy, ignore_eos, the same max_tokens for both servers.

The peer (llama-cpp-python[server]) is built by scripts/serve_bench_peer.sh in its own
environment; without --peer-python only Kiln is measured. Never run in CI.

  python3 benchmarks/serve_bench.py --kiln build/kiln [--peer-python $(scripts/serve_bench_peer.sh)]
      [--kiln-baseline OTHER/kiln] [--kiln-arg=ARG ...] [--model GGUF] [--concurrency 1,4,16,64] [--rounds 2]
      [--max-tokens 32] [--threads N]

Both servers get --threads N (kiln serve --threads, llama.cpp's --n_threads and
--n_threads_batch). The clients are Python threads on the same machine: they take CPU from
the server they measure, the same way for both.
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

SUBJECTS = ["the sea", "a red fox", "prime numbers", "Paris in spring", "an old clock", "the moon",
            "bread", "a quiet library", "rain on a roof", "mountains", "a robot", "the color blue",
            "winter", "a violin", "coffee", "the desert"]


EOG_TOKENS = (0, 2)


def prompt(i, long=False):
    text = f"Write a short story about {SUBJECTS[i % len(SUBJECTS)]}. (#{i})"
    return text + " Describe every detail of the scene, slowly and precisely." * (40 if long else 0)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def stream(host, port, model, text, max_tokens):
    """Returns (ttft, [inter-token gaps], completion tokens) of one streaming completion."""
    # ignore_eos is Kiln's (and llama-server's) flag; llama-cpp-python's server ignores it,
    # so end-of-generation tokens (<|endoftext|> 0, <|im_end|> 2 in SmolLM2's vocabulary) are
    # also banned through logit_bias, which both servers honour: every request then runs to
    # max_tokens on both and they generate the same number of tokens.
    body = {"model": model, "prompt": text, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "logit_bias": {str(t): -100 for t in EOG_TOKENS}, "stream": True}
    began = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
    times = []
    for raw in response:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if any(c.get("text") for c in event.get("choices", [])):
            times.append(time.perf_counter())
    connection.close()
    if not times:
        raise RuntimeError("no tokens streamed")
    return times[0] - began, [b - a for a, b in zip(times, times[1:])], len(times)


def level(host, port, model, concurrency, rounds, max_tokens, long=False, offset=0):
    ttfts, gaps, tokens, errors = [], [], [0], []
    lock = threading.Lock()

    def client(c):
        for r in range(rounds):
            try:
                ttft, g, n = stream(host, port, model, prompt(offset + c * rounds + r, long), max_tokens)
            except Exception as e:
                errors.append(e)
                return
            with lock:
                ttfts.append(ttft)
                gaps.extend(g)
                tokens[0] += n
    threads = [threading.Thread(target=client, args=(c,)) for c in range(concurrency)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, first: {errors[0]}")
    return {"tok_s": tokens[0] / (time.perf_counter() - began), "ttft": ttfts, "gaps": gaps}


def burst(host, port, model, args):
    """p99 inter-token latency of 4 short streams alone, then while long prompts arrive."""
    idle = level(host, port, model, 4, 1, args.max_tokens * 2)["gaps"]
    result = {}
    runner = threading.Thread(target=lambda: result.update(
        level(host, port, model, 4, 1, args.max_tokens * 2, offset=1000)))
    runner.start()
    time.sleep(0.3)  # the short streams are decoding
    level(host, port, model, args.burst, 1, 1, long=True, offset=2000)
    runner.join()
    return percentile(idle, 99), percentile(result["gaps"], 99)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(process, host, port, log, seconds=600):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server exited: {open(log).read()[-2000:]}")
        try:
            connection = http.client.HTTPConnection(host, port, timeout=2)
            connection.request("GET", "/v1/models")
            response = connection.getresponse()
            body = response.read()
            if response.status == 200:
                return json.loads(body)["data"][0]["id"]
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    sys.exit("the server did not come up")


def measure(name, command, args, tmp):
    port = free_port()
    log = os.path.join(tmp, name + ".log")
    with open(log, "w") as out:
        process = subprocess.Popen(command + ["--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
    try:
        model = wait_ready(process, "127.0.0.1", port, log)
        # Warm up with full-length requests: llama-cpp-python's first requests run several
        # times slower than its steady pace (measured: 4, 5, then 41 tok/s in three rounds).
        level("127.0.0.1", port, model, 1, 3, args.max_tokens, offset=3000)
        rows = {}
        for c in args.concurrency:
            rows[c] = level("127.0.0.1", port, model, c, args.rounds, args.max_tokens)
            r = rows[c]
            print(f"{name:>9} c={c:<3} {r['tok_s']:8.1f} tok/s  TTFT p50 {percentile(r['ttft'], 50) * 1e3:7.1f} ms "
                  f"p99 {percentile(r['ttft'], 99) * 1e3:7.1f} ms  inter-token p50 "
                  f"{percentile(r['gaps'], 50) * 1e3:6.1f} ms p99 {percentile(r['gaps'], 99) * 1e3:6.1f} ms", flush=True)
        idle, during = burst("127.0.0.1", port, model, args)
        print(f"{name:>9} inter-token p99: idle {idle * 1e3:.1f} ms, during a burst of {args.burst} long prompts "
              f"{during * 1e3:.1f} ms ({during / idle:.2f}x)  [load average {os.getloadavg()[0]:.2f}]", flush=True)
        rows["burst"] = during / idle
        return rows
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kiln", default="build/kiln")
    parser.add_argument("--peer-python", help="python of the llama-cpp-python[server] environment")
    parser.add_argument("--kiln-baseline", help="another kiln binary (e.g. main's) measured in the same run")
    parser.add_argument("--kiln-arg", action="append", default=[],
                        help="an argument for kiln serve (repeat for several), e.g. --kiln-arg=--prefill-time-ratio=0.5")
    parser.add_argument("--model", default=os.path.join(os.environ.get("KILN_MODEL_DIR") or
                                                        os.path.expanduser("~/.cache/kiln/models"),
                                                        "SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--burst", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if not os.path.exists(args.model):
        sys.exit(f"no model at {args.model} (scripts/fetch_model.sh)")
    print(f"model {args.model}, {args.threads} threads, {args.max_tokens} tokens per request, "
          f"{args.rounds} requests per client")
    print(f"load average at the start {os.getloadavg()[0]:.2f} (the machine's other work skews every figure; "
          "compare only servers measured in one run)")

    def kiln_command(binary):
        return [binary, "serve", args.model, "--threads", str(args.threads),
                "--max-running", str(max(args.concurrency)), *args.kiln_arg]
    with tempfile.TemporaryDirectory() as tmp:
        kiln = measure("kiln", kiln_command(args.kiln), args, tmp)
        if args.kiln_baseline:
            base = measure("baseline", kiln_command(args.kiln_baseline), args, tmp)
            for c in args.concurrency:
                print(f"c={c:<3} throughput kiln / baseline: {kiln[c]['tok_s'] / base[c]['tok_s']:.2f}x")
        if not args.peer_python:
            print("(no --peer-python: llama.cpp not measured; scripts/serve_bench_peer.sh builds it)")
            return
        # llama.cpp's server: one slot per concurrent client at most, the same context per slot.
        # llama-cpp-python's server runs one request at a time; by default a new request
        # interrupts the one streaming (interrupt_requests), which would cut every stream short.
        peer = measure("llama.cpp", [args.peer_python, "-m", "llama_cpp.server", "--model", args.model,
                                     "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
                                     "--n_ctx", "2048", "--interrupt_requests", "False"], args, tmp)
        print("kiln / llama.cpp (throughput: higher is better; latencies: lower is better):")
        for c in args.concurrency:
            k, p = kiln[c], peer[c]
            print(f"c={c:<3} throughput {k['tok_s'] / p['tok_s']:5.2f}x  "
                  f"TTFT p50 {percentile(k['ttft'], 50) / percentile(p['ttft'], 50):5.2f}x  "
                  f"inter-token p50 {percentile(k['gaps'], 50) / percentile(p['gaps'], 50):5.2f}x "
                  f"p99 {percentile(k['gaps'], 99) / percentile(p['gaps'], 99):5.2f}x")
        print(f"burst / idle inter-token p99: kiln {kiln['burst']:.2f}x, llama.cpp {peer['burst']:.2f}x "
              f"(target for kiln: <= 2); load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
