#!/usr/bin/env bash
# A new user's mistakes at the command line: files of the wrong kind, directories for files,
# a missing input, `kiln help CMD`. Each must be a one-line error that says what the file or
# the mistake is (exit 1 or 2), never a crash or an error about something else.
#   $1 kiln  $2 source folder
set -euo pipefail
kiln=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Runs kiln with the remaining arguments, expects failure (not a signal) and a message with $1.
expect_error() {
  local want=$1 code=0
  shift
  "$kiln" "$@" >"$dir/out" 2>&1 || code=$?
  [ "$code" = 1 ] || [ "$code" = 2 ] || fail "kiln $*: exit $code, expected 1 or 2: $(cat "$dir/out")"
  grep -qF -- "$want" "$dir/out" || fail "kiln $*: expected '$want' in: $(cat "$dir/out")"
}

"$kiln" help run | grep -qF "usage: kiln run FILE.kx" || fail "kiln help run is not kiln run --help"
expect_error "kiln help: unknown command 'nope'" help nope
# The version a user reports with a bug, and the executable format this build writes.
"$kiln" --version | grep -qE "^kiln [0-9]+\.[0-9]+\.[0-9]+$" || fail "kiln --version: $("$kiln" --version 2>&1)"
"$kiln" --version | grep -qE "^executable format [0-9]+\.[0-9]+, kernel ABI [0-9]+$" ||
  fail "kiln --version names no executable format: $("$kiln" --version 2>&1)"
expect_error "needs a count of tokens (0 or more, or -1 for no limit), got '-2'" generate --prompt hi -n -2
# A misspelt option names the one meant (taken from the command's --help).
expect_error "unknown option '--temprature' (did you mean '--temperature'?)" generate --temprature 0 --prompt hi
expect_error "unknown option '--inputs' (did you mean '--input'?)" run x.kx --inputs a.npy
expect_error "unknown option '--max-runing' (did you mean '--max-running'?)" serve --max-runing 3
# A listed option without its value, or a flag given one, is named as such (hunt21: "unknown
# option '--prompt' (or it needs a value)" sent users looking for another spelling).
expect_error "option '--prompt' needs a value" generate --prompt
expect_error "option '--port' needs a value" serve --port
expect_error "option '--chat' takes no value" generate --prompt hi --chat=1
expect_error "option '--quiet' takes no value" check x.kir --quiet=yes

# Files of another kind where a .kx or IR text belongs: named, not "bad magic" or a byte.
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000' >"$dir/model.gguf"
cp "$src/examples/models/mlp.kir" "$dir/mlp.kir"
expect_error "not a Kiln executable: the file is a GGUF model (.gguf)" run "$dir/model.gguf"
expect_error "not a Kiln executable: the file is text" run "$dir/mlp.kir"
"$kiln" compile "$dir/mlp.kir" -o "$dir/mlp.kx" 2>/dev/null || fail "compile mlp.kir"
expect_error "not IR text (docs/ir.md): the file is a Kiln executable (.kx)" check "$dir/mlp.kx"
cp "$dir/model.gguf" "$dir/model_as_text.kir"
expect_error "the file is a GGUF model (.gguf)" check "$dir/model_as_text.kir"

# tune --sizes: an empty piece or an empty list is a mistake, not a shorter list.
expect_error "--sizes needs increasing positive integers separated by commas, got '1,,2'" tune "$dir/mlp.kir" --sizes 1,,2
expect_error "--sizes needs increasing positive integers separated by commas, got ''" tune "$dir/mlp.kir" --sizes ""

# disasm's arguments: an option it does not have, none, two files.
expect_error "kiln disasm: unknown option '--bogus'" disasm "$dir/mlp.kx" --bogus
expect_error "kiln disasm: no executable given" disasm
expect_error "kiln disasm: one executable at a time" disasm "$dir/mlp.kx" "$dir/mlp.kx"
# A model that exists but is no regular file.
expect_error "/dev/null: is not a regular file; give the model's .gguf file" generate /dev/null --prompt hi

# Directories given as files.
mkdir "$dir/folder.kir" "$dir/folder.gguf"
expect_error "is a directory, not a file" check "$dir/folder.kir"
expect_error "is a directory, not a file" compile "$dir/folder.kir"
expect_error "is a directory; give the model's .gguf file" generate "$dir/folder.gguf" --prompt hi

# Found by hunt17's command-line campaign: a 32-bit CPU name made LLVM abort the process; `-o`
# naming the source replaced it by the executable; `--list-ops abc` listed opset 0; onnx-test
# on a folder without cases reported "0 passed" with status 0.
expect_error "CPU 'pentium' cannot run x86-64 code" compile "$dir/mlp.kir" -o "$dir/p.kx" --mcpu pentium
expect_error "the 64bit feature cannot be turned off" compile "$dir/mlp.kir" -o "$dir/p.kx" --target "cpu -mattr=-64bit"
cp "$dir/mlp.kir" "$dir/keep.kir"
expect_error "-o '$dir/keep.kir' is the input file" compile "$dir/keep.kir" -o "$dir/keep.kir"
cmp -s "$dir/keep.kir" "$dir/mlp.kir" || fail "compile -o SOURCE changed the source"
expect_error "--list-ops takes an opset version (1 or more), got 'abc'" import --list-ops abc
mkdir "$dir/no_cases"
expect_error "kiln onnx-test: no test cases: a case is a folder holding model.onnx" onnx-test "$dir/no_cases"

# Inputs that do not match the parameters: the error names them.
expect_error "function 'main' takes 5 arguments (x, w0, b0, w1, b1), got 1" run "$dir/mlp.kx" --input random:2x784:f32
# user-inputs-4: a float too large for a double ran as an infinity nobody wrote.
expect_error "float input 'float:1e999' is outside the range of float64; write float:inf" run "$dir/mlp.kx" --input float:1e999

# Inputs by name (as ONNX Runtime feeds them), mixed with positional ones, equal the
# positional call; a name that is no parameter, or a parameter left out, is named.
w="--input random:784x256:f32 --input random:256:f32 --input random:256x10:f32 --input random:10:f32"
# shellcheck disable=SC2086
by_position=$("$kiln" run "$dir/mlp.kx" --input ones:2x784:f32 $w)
# shellcheck disable=SC2086
by_name=$("$kiln" run "$dir/mlp.kx" --input b1=random:10:f32 --input x=ones:2x784:f32 --input w0=random:784x256:f32 \
  --input random:256:f32 --input random:256x10:f32)
[ "$by_position" = "$by_name" ] || fail "named inputs gave '$by_name', positional '$by_position'"
# shellcheck disable=SC2086
expect_error "function 'main' has no parameter 'input' (its parameters: x, w0, b0, w1, b1)" \
  run "$dir/mlp.kx" --input input=ones:2x784:f32 $w
expect_error "parameter 'w0' has no --input (give w0=SPEC, or SPEC in order)" run "$dir/mlp.kx" --input x=ones:2x784:f32

# hunt23: every subcommand takes `--flag=VALUE` as well as `--flag VALUE` (run, import and
# onnx-test said "option '--fn' takes no value" of options that take one), and a valued option
# as the last word is named as needing its value (tune called it "unknown option or missing value").
# shellcheck disable=SC2086
by_equals=$("$kiln" run "$dir/mlp.kx" --fn=main --input=ones:2x784:f32 --repeat=1 --warmup=0 $w)
[ "$by_equals" = "$by_position" ] || fail "run --fn=main --input=... gave '$by_equals', spaced '$by_position'"
expect_error "--repeat needs a count of calls from 1 to 2147483647, got '99999999999'" run "$dir/mlp.kx" --repeat=99999999999
expect_error "option '--fn' needs a value" run "$dir/mlp.kx" --fn
expect_error "cannot open '$dir/missing.onnx'" import "$dir/missing.onnx" --output="$dir/out.kir"
expect_error "kiln onnx-test: '$dir/missing' is not a folder" onnx-test --jobs=1 --filter=x --rtol=0.1 "$dir/missing"
expect_error "-j needs a positive count, got '0'" onnx-test -j=0 "$dir/no_cases"
expect_error "option '--atol' needs a value" onnx-test "$dir/no_cases" --atol
expect_error "unknown option '--jbos' (did you mean '--jobs'?)" onnx-test --jbos 2 "$dir/no_cases"
expect_error "option '--trials' needs a value" tune "$dir/mlp.kir" --trials
expect_error "--timeout needs a positive number of seconds" tune "$dir/mlp.kir" --timeout nan
# An empty file name (`-o "$OUT"` with OUT unset) wrote MODEL.kx / printed the module /
# appended to MODEL.tuning.jsonl.
expect_error "-o needs a file name, got ''" compile "$dir/mlp.kir" -o ""
expect_error "-o needs a file name, got ''" import "$dir/missing.onnx" --output=
# import -o MODEL.onnx replaced the model by its module text.
printf 'not parsed: refused first' > "$dir/model_kept.onnx"
expect_error "-o '$dir/./model_kept.onnx' is the input model; the module text would overwrite it (give FILE.kir)" import "$dir/model_kept.onnx" -o "$dir/./model_kept.onnx"
[ "$(cat "$dir/model_kept.onnx")" = "not parsed: refused first" ] || fail "import -o MODEL changed the model"
expect_error "--db needs a file name, got ''" tune "$dir/mlp.kir" --db ""
# The records database is appended to: a file that is not one (the executable, the model
# itself) is refused and left as it was (tune appended JSON lines to both).
cp "$dir/mlp.kx" "$dir/db_victim.kx"
expect_error "db_victim.kx:1: bad tuning record: not a JSON object; the records database is appended to, and this file is not one (nothing was written to it)" tune "$dir/mlp.kir" --trials 1 --db "$dir/db_victim.kx"
cmp -s "$dir/mlp.kx" "$dir/db_victim.kx" || fail "tune --db FILE.kx changed the executable"
cp "$dir/mlp.kir" "$dir/db_self.kir"
expect_error "db_self.kir:1: bad tuning record" tune "$dir/db_self.kir" --trials 1 --db "$dir/db_self.kir"
cmp -s "$dir/mlp.kir" "$dir/db_self.kir" || fail "tune --db MODEL changed the model"
expect_error "--tuning-db needs a file name, got ''" compile "$dir/mlp.kir" -o "$dir/t.kx" --tuning-db ""
expect_error "--mcpu needs a CPU name, got ''" compile "$dir/mlp.kir" -o "$dir/t.kx" --mcpu ""
expect_error "--mcpu needs a CPU name, got ''" tune "$dir/mlp.kir" --mcpu=
# An option and the --target text both naming the CPU or the thread count must agree: tune
# replaced a target's -num-threads=4 by --threads' default 1 without a word (its records
# then matched no compile for 4 threads), and --mcpu replaced the target's -mcpu.
expect_error "--mcpu znver3 and --target's -mcpu=haswell disagree; give the CPU once" compile "$dir/mlp.kir" -o "$dir/t.kx" --target "cpu -mcpu=haswell" --mcpu znver3
expect_error "--mcpu znver3 and --target's -mcpu=haswell disagree; give the CPU once" tune "$dir/mlp.kir" --target "cpu -mcpu=haswell" --mcpu znver3
expect_error "--threads 2 and --target's -num-threads=4 disagree; give the thread count once" tune "$dir/mlp.kir" --target "cpu -num-threads=4" --threads 2
"$kiln" tune "$dir/mlp.kir" --target "cpu -num-threads=3" --trials 1 --db "$dir/threads.jsonl" >/dev/null 2>&1 ||
  fail "tune --target 'cpu -num-threads=3'"
grep -q -- "-num-threads=3\"" "$dir/threads.jsonl" || fail "tune did not keep the target's -num-threads=3: $(head -c 400 "$dir/threads.jsonl")"
# --help after a file, as every subcommand takes it (disasm called it an unknown option).
for command in check compile tune run disasm generate import onnx-test serve; do
  "$kiln" "$command" "$dir/mlp.kx" --help >"$dir/out" 2>&1 || fail "kiln $command FILE --help: exit $?: $(cat "$dir/out")"
  grep -qF "usage: kiln $command" "$dir/out" || fail "kiln $command FILE --help: $(cat "$dir/out")"
done
# A FIFO (`kiln run <(cat model.kx)`, mkfifo) where a file is mapped: refused at once, where
# opening it waited for a writer forever.
mkfifo "$dir/model.fifo"
for command in "run $dir/model.fifo" "disasm $dir/model.fifo" "generate $dir/model.fifo --prompt hi" \
  "run $dir/mlp.kx --input $dir/model.fifo"; do
  code=0
  # shellcheck disable=SC2086
  timeout 20 "$kiln" $command >"$dir/out" 2>&1 || code=$?
  [ "$code" = 1 ] || fail "kiln $command: exit $code (124: it waited on the FIFO), expected 1: $(cat "$dir/out")"
  grep -qF "is not a regular file" "$dir/out" || fail "kiln $command: $(cat "$dir/out")"
done

# Thread counts: out of range is refused before anything is loaded; a bad KILN_NUM_THREADS is
# reported and ignored, and a huge one is not a process abort (std::thread refused).
expect_error "--threads needs an integer in [1, 4096], got '99999'" generate --threads 99999 --prompt hi
expect_error "--threads needs an integer in [1, 4096], got '0'" serve --threads 0
expect_error "--http-threads needs an integer in [2, 65536], got '1'" serve --http-threads 1
for bad in abc 100000000; do
  # shellcheck disable=SC2086
  KILN_NUM_THREADS=$bad "$kiln" run "$dir/mlp.kx" --input ones:2x784:f32 $w >"$dir/out" 2>&1 ||
    fail "KILN_NUM_THREADS=$bad kiln run: exit $?: $(cat "$dir/out")"
  grep -qF "ignoring KILN_NUM_THREADS='$bad' (expected an integer in [1, 4096])" "$dir/out" ||
    fail "KILN_NUM_THREADS=$bad is not reported: $(cat "$dir/out")"
  grep -qF "output 0: float32[2, 10]" "$dir/out" || fail "KILN_NUM_THREADS=$bad: no output: $(cat "$dir/out")"
done
echo "ok"
