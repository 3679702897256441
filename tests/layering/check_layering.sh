#!/usr/bin/env bash
# Fails if the runtime side of Kiln reaches LLVM or a compiler library.
#   $1: a binary linked only against the runtime libraries (kiln_vm, kiln_builtins, kiln_serving)
#   $2: the declared link interfaces of those libraries, ';'-separated
set -u
probe=$1
declared=$2
status=0
if grep -qiE 'llvm|kiln_(tir|relax|codegen)' <<<"$declared"; then
  echo "FAIL: a runtime library declares a compiler dependency: $declared"
  status=1
fi
if grep -qiE 'protobuf|onnx' <<<"$declared"; then
  echo "FAIL: a runtime library declares protobuf/ONNX (only kiln_frontends_onnx may): $declared"
  status=1
fi
if ldd "$probe" | grep -qiE 'protobuf|onnx'; then
  echo "FAIL: $probe loads protobuf/ONNX:"; ldd "$probe" | grep -iE 'protobuf|onnx'
  status=1
fi
if ldd "$probe" | grep -qi llvm; then
  echo "FAIL: $probe loads LLVM:"; ldd "$probe" | grep -i llvm
  status=1
fi
bad=$(nm -C "$probe" | grep -E ' (llvm::|kiln::(tir|relax|codegen)::)' | head -n 5)
if [ -n "$bad" ]; then
  echo "FAIL: $probe contains compiler symbols:"; echo "$bad"
  status=1
fi
[ $status -eq 0 ] && echo "layering: runtime links no compiler code"
exit $status
