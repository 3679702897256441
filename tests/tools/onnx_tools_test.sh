#!/usr/bin/env bash
# kiln import / compile / run on ONNX node test models (Debian's libonnx-testdata):
# the imported text re-parses with kiln check, an unbound shape input is a clear error
# and --bind fixes it, and kiln run on the .onnx equals kiln run on its compiled .kx (.pb inputs;
# the numerics against ONNX's outputs are tests/frontends' and onnx_node_tests').
set -eu
kiln=$1
data=/usr/share/libonnx-testdata/data/node
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -d "$data" ]; then echo "SKIP: $data missing (libonnx-testdata)"; exit 0; fi

for case in test_gemm_all_attributes test_layer_normalization_4d_axis1_expanded test_sce_mean_weight_ii_3d \
            test_conv_with_strides_padding test_hardmax_axis_1; do
  "$kiln" import "$data/$case/model.onnx" -o "$tmp/m.kir"
  "$kiln" check "$tmp/m.kir" > /dev/null || { echo "FAIL: kiln check on the import of $case"; exit 1; }
done

reshape=$data/test_reshape_negative_dim
if "$kiln" import "$reshape/model.onnx" > /dev/null 2> "$tmp/err"; then
  echo "FAIL: importing a Reshape with a run-time shape input should fail"; exit 1
fi
grep -q "node 'reshaped' (op Reshape, opset 14): input 'shape' must be known at import time" "$tmp/err" ||
  { echo "FAIL: unexpected error: $(cat "$tmp/err")"; exit 1; }
"$kiln" import "$reshape/model.onnx" --bind shape="$reshape/test_data_set_0/input_1.pb" | grep -q 'Tensor((2, 6, 2), float32)' ||
  { echo "FAIL: --bind did not give the reshape its shape"; exit 1; }

gemm=$data/test_gemm_all_attributes/test_data_set_0
"$kiln" compile "$data/test_gemm_all_attributes/model.onnx" -o "$tmp/g.kx"
compiled=$("$kiln" run "$tmp/g.kx" --input "$gemm/input_0.pb" --input "$gemm/input_1.pb" --input "$gemm/input_2.pb")
direct=$("$kiln" run "$data/test_gemm_all_attributes/model.onnx" --input "$gemm/input_0.pb" --input "$gemm/input_1.pb" \
         --input "$gemm/input_2.pb")
[ "$compiled" = "$direct" ] || { echo "FAIL: compiled and direct runs differ: $compiled vs $direct"; exit 1; }
echo "$direct" | grep -q "float32\[3, 5\]" || { echo "FAIL: unexpected output: $direct"; exit 1; }
echo "tools_onnx: OK"
