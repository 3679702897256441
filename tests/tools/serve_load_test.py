#!/usr/bin/env python3
"""Load test of `kiln serve` on the bundled model (stdlib only).

64 streaming clients at once, each with its own prompt and max_tokens, greedy; then:
  - every stream is complete: well-formed events, a finish_reason, usage, `data: [DONE]` last;
  - none is mixed with another: every event of a stream carries that stream's id, and the
    usage counts are the request's own (prompt tokens as the server tokenized it alone,
    completion tokens = its max_tokens, since ignore_eos keeps every request to its length);
  - the greedy text of every request equals the same request run alone afterwards
    (batching must never change a greedy result, docs/serving.md);
  - the server's resident memory (VmRSS) comes back to its idle level: the burst runs three
    times; after the third and after the one-at-a-time runs VmRSS must be within
    RSS_MARGIN_KIB of its level after the second. The first bursts raise VmRSS by design:
    the paged KV cache's pool is allocated unzeroed at load, so the OS maps its pages only
    when attention first writes them, and the prefix cache keeps up to 32 prompts' pages.
    The server runs with glibc's default arenas (up to 8 per core, shared by the HTTP
    threads): the engine gives their free memory back once idle for 250 ms
    (support/heap_trim.h), so the test reads VmRSS a second after each burst.

Skips when the model was not fetched (fails under CI).  argv[1]: the kiln binary.
"""
import http.client
import json
import sys
import threading
import time

import kiln_server

CLIENTS = 64
# The allowed growth of VmRSS over the idle level after the second burst (measured: 4 to 10
# MiB more after the third, as the prefix cache's LRU settles on other pages); a leak of
# 192 KiB per request (over the 128 requests that follow) exceeds it.
RSS_MARGIN_KIB = 24 * 1024


fail = kiln_server.fail


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS in /proc/%d/status" % pid)


def stream_completion(host, port, body):
    """One streaming completion; returns (text, ids, finish_reason, usage, events) or raises."""
    connection = http.client.HTTPConnection(host, port, timeout=120)
    connection.request("POST", "/v1/completions", json.dumps(body),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
    raw = response.read().decode("utf-8")
    connection.close()
    text, ids, finish, usage, done = "", set(), None, None, False
    for line in raw.split("\n"):
        if not line or line.startswith(":"):
            continue  # event separators and keep-alive comments
        if not line.startswith("data: "):
            raise RuntimeError(f"not an SSE data line: {line!r}")
        payload = line[len("data: "):]
        if done:
            raise RuntimeError(f"an event after [DONE]: {payload!r}")
        if payload == "[DONE]":
            done = True
            continue
        event = json.loads(payload)
        if "error" in event:
            raise RuntimeError(f"error event: {payload}")
        ids.add(event["id"])
        for choice in event["choices"]:
            if choice["index"] != 0:
                raise RuntimeError(f"choice {choice['index']} in an n=1 request")
            text += choice.get("text") or ""
            if choice.get("finish_reason"):
                if finish is not None:
                    raise RuntimeError("two finish_reasons")
                finish = choice["finish_reason"]
        if event.get("usage"):
            usage = event["usage"]
    if not done:
        raise RuntimeError("the stream did not end with [DONE]")
    return text, ids, finish, usage


def make_requests(model):
    subjects = ["the sea", "a red fox", "prime numbers", "Paris in spring", "an old clock",
                "the moon", "bread", "a quiet library", "rain on a roof", "mountains",
                "a robot", "the color blue", "winter", "a violin", "coffee", "the desert"]
    requests = []
    for i in range(CLIENTS):
        subject = subjects[i % len(subjects)]
        # Different lengths: from a few words to a few sentences.
        prompt = f"Write about {subject}." + " Be vivid and precise." * (i % 5) + f" (note {i})"
        requests.append({"model": model, "prompt": prompt, "max_tokens": 2 + i % 5,
                         "temperature": 0, "ignore_eos": True, "stream": True,
                         "stream_options": {"include_usage": True}})
    return requests


def run_all(host, port, requests):
    results = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def client(i):
        try:
            start.wait()
            results[i] = stream_completion(host, port, requests[i])
        except Exception as e:  # reported below, with the request
            results[i] = e
    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def check(i, request, result, what):
    if isinstance(result, Exception):
        fail(f"{what} request {i}: {result}")
    text, ids, finish, usage = result
    if len(ids) != 1:
        fail(f"{what} request {i}: events of several streams mixed in one: {sorted(ids)}")
    if finish != "length":
        fail(f"{what} request {i}: finish_reason {finish!r}, expected 'length' (ignore_eos)")
    if not usage or usage["completion_tokens"] != request["max_tokens"]:
        fail(f"{what} request {i}: usage {usage}, expected {request['max_tokens']} completion tokens")
    return text, next(iter(ids)), usage["prompt_tokens"]


def main():
    kiln_server.bundled_model_or_skip()
    with kiln_server.serving(sys.argv[1]) as server:
        serve(server)
    print("PASS")


def serve(server):
    host, port, model = server.host, server.port, server.model
    requests = make_requests(model)
    fresh = vm_rss_kib(server.process.pid)
    began = time.time()
    first = run_all(host, port, requests)
    burst_seconds = time.time() - began
    checked = [check(i, r, res, "concurrent") for i, (r, res) in enumerate(zip(requests, first))]
    if len({stream_id for _, stream_id, _ in checked}) != CLIENTS:
        fail("two streams share an id")
    time.sleep(1.0)
    after_first = vm_rss_kib(server.process.pid)

    def burst_again(label):
        results = run_all(host, port, requests)
        for i, (request, result) in enumerate(zip(requests, results)):
            text, _, _ = check(i, request, result, label)
            if text != checked[i][0]:
                fail(f"request {i}: the {label} said {text!r}, the first burst {checked[i][0]!r}")
        time.sleep(1.0)
        return vm_rss_kib(server.process.pid)
    idle = burst_again("second burst")
    after_burst = burst_again("third burst")

    began = time.time()
    for i, request in enumerate(requests):
        text, _, prompt_tokens = check(i, request, stream_completion(host, port, request), "alone")
        if text != checked[i][0] or prompt_tokens != checked[i][2]:
            fail(f"request {i} ({request['prompt']!r}): among {CLIENTS} it said {checked[i][0]!r} "
                 f"({checked[i][2]} prompt tokens), alone {text!r} ({prompt_tokens})")
    alone_seconds = time.time() - began
    time.sleep(1.0)
    after_alone = vm_rss_kib(server.process.pid)
    print(f"{CLIENTS} concurrent streams in {burst_seconds:.1f} s, the same one at a time in "
          f"{alone_seconds:.1f} s; greedy outputs identical")
    print(f"VmRSS: fresh {fresh // 1024} MiB, after the first burst {after_first // 1024} MiB, the "
          f"second {idle // 1024} MiB (the idle level), the third {after_burst // 1024} MiB, "
          f"after the one-at-a-time "
          f"runs {after_alone // 1024} MiB (allowed: {(idle + RSS_MARGIN_KIB) // 1024} MiB)")
    for label, rss in (("the third burst", after_burst), ("the one-at-a-time runs", after_alone)):
        if rss > idle + RSS_MARGIN_KIB:
            fail(f"server memory did not come back after {label}: VmRSS {rss} KiB, idle {idle} KiB")


if __name__ == "__main__":
    main()
