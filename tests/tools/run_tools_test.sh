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

# add_weights(ones) = 1 + i/4 for i < 128, the constant read from the file's weights section:
# 128 + 2032 = 2160.
out=$("$kiln" run "$dir/sample.kx" --fn add_weights --input ones:128:f32)
grep -q "output 0: float32\[128\] sum=2160 abs_sum=2160" <<<"$out" || fail "add_weights: $out"

# Prim(bool) parameters from the command line.
out=$("$kiln" run "$dir/sample.kx" --fn choose --input bool:true --input int:5 --input int:9)
grep -q "output 0: int 5" <<<"$out" || fail "choose true: $out"
out=$("$kiln" run "$dir/sample.kx" --fn choose --input bool:false --input int:5 --input int:9)
grep -q "output 0: int 9" <<<"$out" || fail "choose false: $out"
if out=$("$kiln" run "$dir/sample.kx" --fn choose --input bool:maybe --input int:5 --input int:9 2>&1); then fail "bool:maybe accepted"; fi
grep -q "expected bool:true or bool:false" <<<"$out" || fail "bad bool message: $out"

# Checksums read each element as its type: identity() returns its input.
# A .npy file by hand: magic, version 1.0, header length 118, the dict padded to 117 + newline.
npy() {  # npy FILE DESCR SHAPE DATA(printf escapes)
  local dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  { printf '\x93NUMPY\x01\x00\x76\x00'; printf '%-117s\n' "$dict"; printf "$4"; } > "$1"
}
npy "$dir/i8.npy" '|i1' '(4,)' '\xff\xff\xfe\x05'  # -1 -1 -2 5
out=$("$kiln" run "$dir/sample.kx" --fn identity --input "$dir/i8.npy")
grep -q "output 0: int8\[4\] sum=1 abs_sum=9" <<<"$out" || fail "int8 checksum: $out"
npy "$dir/u8.npy" '|u1' '(4,)' '\xff\xff\xfe\x05'
out=$("$kiln" run "$dir/sample.kx" --fn identity --input "$dir/u8.npy")
grep -q "output 0: uint8\[4\] sum=769 abs_sum=769" <<<"$out" || fail "uint8 checksum: $out"
npy "$dir/f16.npy" '<f2' '(2,)' '\x00\x3c\x00\xc1'  # 1.0 -2.5
out=$("$kiln" run "$dir/sample.kx" --fn identity --input "$dir/f16.npy" --output-dir "$dir")
grep -q "output 0: float16\[2\] sum=-1.5 abs_sum=3.5" <<<"$out" || fail "float16 checksum: $out"
cmp -s "$dir/f16.npy" "$dir/output_0.npy" || fail "float16 output .npy differs from the input"
for t in bf16 u16 i16 u32 bool f64; do
  out=$("$kiln" run "$dir/sample.kx" --fn identity --input ones:3:$t)
  grep -q "sum=3 abs_sum=3" <<<"$out" || fail "ones:3:$t checksum: $out"
done
out=$("$kiln" run "$dir/sample.kx" --fn identity --input random:64:f16:3)
grep -q "nan" <<<"$out" && fail "random float16 checksum: $out"
# A header claiming a huge shape is refused naming the file, the shape and both sizes.
npy "$dir/huge.npy" '<f4' '(100000, 100000, 100000)' '\x00\x00\x00\x00'
if out=$("$kiln" run "$dir/sample.kx" --fn identity --input "$dir/huge.npy" 2>&1); then fail "huge .npy accepted"; fi
grep -q "huge.npy: not a readable .npy file: the header claims shape (100000, 100000, 100000) of float32 = 4000000000000000 bytes, but the file holds 4 bytes" <<<"$out" || fail "huge .npy message: $out"

# A truncated file is reported as truncated, naming the section cut short.
size=$(stat -c %s "$dir/sample.kx")
head -c 100 "$dir/sample.kx" > "$dir/truncated.kx"
if out=$("$kiln" run "$dir/truncated.kx" 2>&1); then fail "truncated file accepted"; fi
grep -q "truncated executable: the section table" <<<"$out" || fail "truncation message: $out"
head -c $((size - 100)) "$dir/sample.kx" > "$dir/truncated.kx"
if out=$("$kiln" run "$dir/truncated.kx" 2>&1); then fail "truncated file accepted"; fi
grep -q "truncated executable: the file is $((size - 100)) bytes, but its section table says it ends at byte $size; section weights" <<<"$out" \
  || fail "truncation message: $out"

out=$("$kiln" disasm "$dir/sample.kx")
grep -q "function @main(x: tensor float32\[bind %2(n), 4\]" <<<"$out" || fail "disasm: $out"
grep -q "call kernel axpy" <<<"$out" || fail "disasm lacks the kernel call"
grep -q "const c0 = tensor float32\[128\]  ; weights section" <<<"$out" || fail "disasm lacks the weights constant: $out"

# Embedding example: x = 0..11, y = 1: out[i] = 3i + 1.
out=$("$example" "$dir/sample.kx")
grep -q "output float32\[3, 4\]: 1 4 7 10 13 16 19 22 25 28 31 34" <<<"$out" || fail "embedding example: $out"
echo "tools: kiln run, kiln disasm and the embedding example work"
