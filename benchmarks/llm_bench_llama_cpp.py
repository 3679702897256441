"""Kiln next to llama.cpp on one GGUF; run by llm_bench_llama_cpp.sh in its virtual environment.

llama.cpp is measured as llm_bench measures Kiln (benchmarks/llm_bench.cc): prefill tok/s of
prompts of 128 and 512 tokens (the same English text), decode tok/s at context 16 and 1024
(greedy steps after a prompt of that length), load to first token, on each thread count; the
best of the repeats. Then both continue a few prompts greedily from the same token ids and
the script counts the tokens that agree.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama

# The text llm_bench repeats for its prompts.
TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined movable metal type, oil-based inks and a wooden press adapted from those used for "
    "wine. Books, once copied by hand over months, could now be produced by the hundreds. Within "
    "fifty years presses were running in more than two hundred cities across Europe, and the "
    "spread of pamphlets, scientific treatises and translations of the Bible changed how people "
    "learned, argued and prayed. "
)

GREEDY_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village,",
    "<|im_start|>user\nWhat are the three primary colors?<|im_end|>\n<|im_start|>assistant\n",
    "La tour Eiffel est",
]


def prompt_tokens(llm, n):
    ids = llm.tokenize(TEXT.encode(), add_bos=False, special=False)
    out = []
    while len(out) < n:
        out.extend(ids)
    return out[:n]


def last_argmax(llm):
    """The greedy token after the last eval (its last position's logits, read from the context:
    Llama.scores holds only n_batch rows)."""
    logits = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return int(np.argmax(np.ctypeslib.as_array(logits, shape=(llm.n_vocab(),))))


def measure_llama_cpp(model, threads, repeats, decode_tokens):
    figures = {}
    start = time.perf_counter()
    llm = Llama(model_path=model, n_ctx=2048, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    llm.eval(llm.tokenize(b"The capital of France is", add_bos=False))
    last_argmax(llm)
    figures["load_to_first_token"] = 1000 * (time.perf_counter() - start)
    for n in (128, 512):
        prompt = prompt_tokens(llm, n)
        best = 0.0
        for _ in range(repeats):
            llm.reset()
            t = time.perf_counter()
            llm.eval(prompt)
            best = max(best, n / (time.perf_counter() - t))
        figures[f"prefill_{n}"] = best
    for context in (16, 1024):
        prompt = prompt_tokens(llm, context)
        best = 0.0
        for _ in range(repeats):
            llm.reset()
            llm.eval(prompt)
            token = last_argmax(llm)
            t = time.perf_counter()
            for _ in range(decode_tokens):
                llm.eval([token])
                token = last_argmax(llm)
            best = max(best, decode_tokens / (time.perf_counter() - t))
        figures[f"decode_ctx{context}"] = best
    return llm, figures


def llama_cpp_greedy(llm, ids, n):
    llm.reset()
    llm.eval(ids)
    out = []
    for i in range(n):
        token = last_argmax(llm)
        out.append(token)
        if i + 1 < n:
            llm.eval([token])
    return out


def run_kiln(llm_bench, model, threads, repeats, decode_tokens):
    command = [llm_bench, model, "--threads=" + ",".join(map(str, threads)), f"--repeats={repeats}",
               f"--decode-tokens={decode_tokens}"]
    print("$ " + " ".join(command), flush=True)
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    print(text, end="", flush=True)
    figures = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s+threads=(\d+)\s+([-\d.]+)", line)
        if m:
            figures[(m.group(1), int(m.group(2)))] = float(m.group(3))
    return figures


def kiln_greedy(llm_bench, model, prompts, n, extra):
    """Kiln's greedy continuations of every prompt (lists of ids), from one compile."""
    command = [llm_bench, model, "-n", str(n)] + extra + ["--greedy=" + ",".join(map(str, ids)) for ids in prompts]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    lines = re.findall(r"^greedy:(.*)$", text, re.M)
    if len(lines) != len(prompts):
        sys.exit("llm_bench printed no greedy tokens:\n" + text)
    logits = [np.array([float(v) for v in line.split()], dtype=np.float32) for line in re.findall(r"^logits:(.*)$", text, re.M)]
    return [[int(t) for t in line.split()] for line in lines], logits


def main():
    default_model = os.path.join(os.environ.get("KILN_MODEL_DIR", os.path.expanduser("~/.cache/kiln/models")),
                                 "SmolLM2-135M-Instruct.Q4_1.gguf")
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default=default_model)
    parser.add_argument("--llm-bench", required=True)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--greedy-tokens", type=int, default=32)
    parser.add_argument("--greedy-only", action="store_true", help="skip the speed figures")
    parser.add_argument("--logits", action="store_true", help="also compare the logits after each prompt")
    parser.add_argument("--llama-ubatch", type=int, default=512,
                        help="llama.cpp's batch for --greedy-only, and Kiln's prompt tokens per call"
                             " (1: the prompt token by token, as decode steps)")
    parser.add_argument("--kiln-args", default="", help="more llm_bench arguments, e.g. '--activations=float32 --kv=f32'")
    parser.add_argument("--prompt", action="append", default=[],
                        help="a prompt for the greedy comparison (repeatable; replaces the built-in five)")
    parser.add_argument("--prompts-file", help="prompts for the greedy comparison, one per line (\\n for a newline)")
    args = parser.parse_args()
    if args.prompts_file:
        with open(args.prompts_file, encoding="utf-8") as f:
            args.prompt += [line.rstrip("\n").replace("\\n", "\n") for line in f if line.strip()]
    args.greedy_prompts = args.prompt or GREEDY_PROMPTS
    threads = [int(t) for t in args.threads.split(",")]
    if args.greedy_only:
        llm = Llama(model_path=args.model, n_ctx=2048, n_batch=args.llama_ubatch, n_ubatch=args.llama_ubatch,
                    n_threads=threads[0], n_threads_batch=threads[0], verbose=False)
        compare_greedy(args, llm)
        return

    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    kiln = run_kiln(args.llm_bench, args.model, threads, args.repeats, args.decode_tokens)
    peer = {}
    llm = None
    for t in threads:
        llm, figures = measure_llama_cpp(args.model, t, args.repeats, args.decode_tokens)
        for metric, value in figures.items():
            peer[(metric, t)] = value

    print(f"\n{'metric':<24} {'threads':>7} {'kiln':>10} {'llama.cpp':>10} {'kiln/llama.cpp':>15}")
    for t in threads:
        for metric, unit in (("prefill_128", "tok/s"), ("prefill_512", "tok/s"), ("decode_ctx16", "tok/s"),
                             ("decode_ctx1024", "tok/s"), ("load_to_first_token", "ms")):
            k, p = kiln.get((metric, t)), peer.get((metric, t))
            if k is None or p is None:
                continue
            print(f"{metric + ' ' + unit:<24} {t:>7} {k:>10.1f} {p:>10.1f} {k / p:>15.2f}")
        bound = kiln.get(("decode_bound", t))
        if bound:
            k, p = kiln.get(("decode_ctx16", t)), peer.get(("decode_ctx16", t))
            print(f"{'decode bound tok/s':<24} {t:>7} {bound:>10.1f}   (kiln {100 * k / bound:.0f}% of it,"
                  f" llama.cpp {100 * p / bound:.0f}%)")
    if ("compile", 0) in kiln:
        print(f"kiln compile of the model: {kiln[('compile', 0)]:.2f} s")

    compare_greedy(args, llm)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def compare_greedy(args, llm):
    print(f"\ngreedy continuations ({args.greedy_tokens} tokens from the same prompt ids):")
    total = agree = equal = 0
    prompts = [llm.tokenize(p.encode(), add_bos=False, special=True) for p in args.greedy_prompts]
    # Kiln splits the prompt into calls as llama.cpp splits it into micro-batches.
    extra = args.kiln_args.split() + [f"--ubatch={args.llama_ubatch}"] + (["--print-logits"] if args.logits else [])
    continuations, kiln_logits = kiln_greedy(args.llm_bench, args.model, prompts, args.greedy_tokens, extra)
    for index, (prompt, ids, ours) in enumerate(zip(args.greedy_prompts, prompts, continuations)):
        theirs = llama_cpp_greedy(llm, ids, args.greedy_tokens)
        if args.logits:
            # llama_cpp_greedy's first eval was the prompt; evaluate it again for its logits.
            llm.reset()
            llm.eval(ids)
            peer = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()
            mine = kiln_logits[index]
            diff = np.abs(mine - peer)
            top = np.argsort(-peer)[:2]
            print(f"  {prompt!r:.40}: first-step logits max |kiln - llama.cpp| {diff.max():.3g}, mean {diff.mean():.3g},"
                  f" bitwise equal {int((mine == peer).sum())}/{mine.size}; llama.cpp top-2 margin"
                  f" {peer[top[0]] - peer[top[1]]:.3g}")
        prefix = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), len(ours))
        same = sum(a == b for a, b in zip(ours, theirs))
        total += len(ours)
        agree += prefix
        equal += same
        shown = llm.detokenize(theirs[:prefix]).decode(errors="replace")
        print(f"  {prompt!r:.60}: first {prefix}/{len(ours)} tokens agree, {same} equal in place  ({shown!r:.60})")
    print(f"greedy agreement: {agree}/{total} tokens (identical prefixes), {equal}/{total} equal position by position")


if __name__ == "__main__":
    main()
