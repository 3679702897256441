#!/usr/bin/env bash
# End-to-end checks of `kiln run`, `kiln disasm` and the embedding example on the tests'
# sample executable. Expected numbers are computed here from the inputs, not by Kiln.
#   $1 kiln  $2 write_sample_executable  $3 kiln_embedding_example
set -euo pipefail
kiln=$1 writer=$2 example=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$writer" "$dir/sample.kx"

# main(x, y) = 3x + y with x = ones, y = zeros over [7, 4]: sum 84.
out=$("$kiln" run "$dir/sample.kx" --input ones:7x4:f32 --input zeros:7x4:f32 --output-dir "$dir" --stats --profile)
grep -q "output 0: float32\[7, 4\] sum=84 abs_sum=84" <<<"$out" || fail "kiln run output: $out"
grep -q "peak memory" <<<"$out" || fail "--stats printed nothing"
grep -q "kernel axpy" <<<"$out" || fail "--profile does not list the kernel: $out"
[ -s "$dir/output_0.npy" ] || fail "--output-dir wrote no .npy"

# The written .npy reads back as an input: pair() sums each row of 3s (4 columns): 12 each.
out=$("$kiln" run "$dir/sample.kx" --fn pair --input "$dir/output_0.npy")
grep -q "output 0: float32\[7, 1\] sum=84" <<<"$out" || fail "npy round trip: $out"

out=$("$kiln" run "$dir/sample.kx" --fn sum_to --input int:100)
grep -q "output 0: int 5050" <<<"$out" || fail "sum_to: $out"

# A wrong shape is a clear error, not a crash.
if out=$("$kiln" run "$dir/sample.kx" --input ones:7x4:f32 --input ones:8x4:f32 2>&1); then fail "shape mismatch accepted"; fi
grep -q "parameter 'y' dimension 0 (n): expected 7" <<<"$out" || fail "mismatch message: $out"

# A corrupt file is refused.
head -c 100 "$dir/sample.kx" > "$dir/truncated.kx"
if out=$("$kiln" run "$dir/truncated.kx" 2>&1); then fail "truncated file accepted"; fi
grep -q "truncated or corrupt" <<<"$out" || fail "truncation message: $out"

out=$("$kiln" disasm "$dir/sample.kx")
grep -q "function @main(x: tensor float32\[bind %2(n), 4\]" <<<"$out" || fail "disasm: $out"
grep -q "call kernel axpy" <<<"$out" || fail "disasm lacks the kernel call"

# Embedding example: x = 0..11, y = 1: out[i] = 3i + 1.
out=$("$example" "$dir/sample.kx")
grep -q "output float32\[3, 4\]: 1 4 7 10 13 16 19 22 25 28 31 34" <<<"$out" || fail "embedding example: $out"
echo "tools: kiln run, kiln disasm and the embedding example work"
