#!/usr/bin/env bash
# The main job: set up, build, then take the bundled transformer block (symbolic sequence
# length n) through Kiln: `kiln check` prints every binding's inferred struct info, `kiln
# compile` builds one executable, and `kiln run` runs it for two sequence lengths.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
build=${KILN_BUILD_DIR:-build}
model=examples/models/transformer_block.kir
"$build/kiln" check "$model"
"$build/kiln" compile "$model" --target cpu -o "$build/transformer_block.kx"
for n in 7 300; do
  # x[n, 64], then the weights: wq wk wv wo, ln1 gamma/beta, w1 bias1 w2 bias2, ln2 gamma/beta.
  inputs=(--input "random:${n}x64:f32:1")
  seed=2
  for shape in 64x64 64x64 64x64 64x64 64 64 64x256 256 256x64 64 64 64; do
    inputs+=(--input "random:$shape:f32:$seed")
    seed=$((seed + 1))
  done
  echo "== n = $n"
  "$build/kiln" run "$build/transformer_block.kx" "${inputs[@]}" --stats
done
