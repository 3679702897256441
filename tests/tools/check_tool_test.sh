#!/usr/bin/env bash
# End-to-end checks of `kiln check`: the bundled examples check and print inferred struct
# info; malformed text and shape errors fail with located, specific messages.
#   $1 kiln  $2 source folder
set -euo pipefail
kiln=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$kiln" check "$src/examples/models/transformer_block.kir")
grep -qF '%scores: Tensor((n, n), float32) = R.matmul(%q, %kt)' <<<"$out" || fail "transformer block: $out"
grep -qF '%act: Tensor((n, 256), float32) = R.gelu(%up_b)' <<<"$out" || fail "transformer block gelu: $out"
out=$("$kiln" check "$src/examples/models/mlp.kir")
grep -qF 'probs: Tensor((b, 10), float32) = R.softmax(%logits, axis=-1)' <<<"$out" || fail "mlp: $out"
# What kiln check prints checks again to the same text.
"$kiln" check "$src/examples/models/mlp.kir" > "$dir/printed.kir"
[ "$("$kiln" check "$dir/printed.kir")" = "$(cat "$dir/printed.kir")" ] || fail "printing is not stable"
[ -z "$("$kiln" check --quiet "$src/examples/models/mlp.kir")" ] || fail "--quiet printed something"

# A syntax error: file, line, column and what was expected.
cat > "$dir/syntax.kir" <<'KIR'
module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.add(x x)
    return y
  }
}
KIR
if out=$("$kiln" check "$dir/syntax.kir" 2>&1); then fail "syntax error accepted"; fi
grep -qE "syntax.kir:3:17: error: expected .*found" <<<"$out" || fail "syntax message: $out"

# A shape error found by inference names the binding, the operator and the dimensions.
cat > "$dir/shape.kir" <<'KIR'
module {
  func @main(x: Tensor((n, 3), float32), w: Tensor((4, 8), float32)) -> Tensor((n, 8), float32) {
    y = R.matmul(x, w)
    return y
  }
}
KIR
if out=$("$kiln" check "$dir/shape.kir" 2>&1); then fail "shape error accepted"; fi
grep -qF "shape.kir:3:5" <<<"$out" || fail "shape error location: $out"
grep -qE "binding 'y': matmul: .*3.*4" <<<"$out" || fail "shape error message: $out"

# Broadcasting n against n + 1 can never work.
cat > "$dir/broadcast.kir" <<'KIR'
module {
  func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    y = R.concat((x, x), axis=0)
    z = R.add(x, R.strided_slice(y, axes=[0], begin=[0], end=[1]))
    w = R.add(R.concat((x, R.const(float32, [1], [0.0])), axis=0), x)
    return w
  }
}
KIR
if out=$("$kiln" check "$dir/broadcast.kir" 2>&1); then fail "n vs n + 1 accepted"; fi
grep -qF "cannot broadcast" <<<"$out" || fail "broadcast message: $out"
grep -qF "n + 1" <<<"$out" || fail "broadcast message lacks the dims: $out"

# Shapes and bounds no value satisfies are checker errors at their place in the file (they
# used to pass check and fail compile with an unlocated "invalid bytecode").
check_rejects() {  # name, text, expected location and message
  printf '%s\n' "$2" > "$dir/$1.kir"
  if out=$("$kiln" check "$dir/$1.kir" 2>&1); then fail "$1 accepted"; fi
  grep -qF "$1.kir:$3" <<<"$out" || fail "$1: $out"
}
check_rejects upper_negative 'module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) where n <= -7 {
    return x
  }
}' "2:75: error: bounds on 'n' can never hold: n >= 0 (a dimension) and n <= -7"
check_rejects empty_range 'module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) where n >= 5, n <= 2 {
    return x
  }
}' "2:75: error: bounds on 'n' can never hold: n >= 5 and n <= 2"
check_rejects negative_dim 'module {
  func @main(x: Tensor((-3, 4), float32)) -> Tensor((-3, 4), float32) {
    return x
  }
}' "2:25: error: negative dimension -3 in a shape"
check_rejects negative_cast_dim 'module {
  func @main(x: Tensor((n, 4), float32)) -> Object {
    y = match_cast(x, Tensor((n, -1), float32))
    return y
  }
}' "3:34: error: negative dimension -1 in a shape"

# A hand-written PrimFunc whose loop reads one past its buffer: refused by check and by
# compile at the access, naming the buffer, the index, the iteration and the extent.
oob='module {
  prim_func @shift(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
    for i in serial(0, n) {
      B[i] = A[i + 1]
    }
  }
  func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    y = R.call_tir(@shift, (x,), out_sinfo=Tensor((n,), float32))
    return y
  }
}'
oob_message="4:14: error: prim_func 'shift': index 0 of buffer 'A' is i + 1, which takes values in [1, n]: n (at i = n - 1) is outside [0, n)"
check_rejects oob_index "$oob" "$oob_message"
if out=$("$kiln" compile "$dir/oob_index.kir" -o "$dir/oob_index.kx" 2>&1); then fail "compile accepted an index out of bounds"; fi
grep -qF "oob_index.kir:$oob_message" <<<"$out" || fail "compile, index out of bounds: $out"
# One iteration fewer is in bounds.
printf '%s\n' "${oob/serial(0, n)/serial(0, n - 1)}" > "$dir/oob_fixed.kir"
out=$("$kiln" check --quiet "$dir/oob_fixed.kir" 2>&1) || fail "a loop of n - 1 refused: $out"

# docs/ir.md's "A small module", exactly as the doc writes it, checks (a doc that drifts from
# the parser fails here).
awk '/^## A small module/{s=1} s && /^```/{if (b) exit; b=1; next} b' "$src/docs/ir.md" > "$dir/ir_doc.kir"
grep -q "prim_func @add_kernel" "$dir/ir_doc.kir" || fail "docs/ir.md's small module not found: $(cat "$dir/ir_doc.kir")"
out=$("$kiln" check "$dir/ir_doc.kir" 2>&1) || fail "docs/ir.md's small module: $out"
grep -qF 'half: Prim(int64, value=floordiv(n, 2)) = R.prim(floordiv(n, 2))' <<<"$out" || fail "docs/ir.md's small module: $out"

if out=$("$kiln" check "$dir/missing.kir" 2>&1); then fail "missing file accepted"; fi
grep -qF "missing.kir" <<<"$out" || fail "missing file message: $out"
"$kiln" check --help | grep -q "usage: kiln check" || fail "--help"
echo "tools: kiln check works"
