// ONNX TensorProto <-> Kiln host data (relax::ConstantData). Internal to the frontend: the
// protobuf types stay out of its public headers (importer.h, tensor_file.h).
//
// Every numeric element type ONNX has: float, double, float16, bfloat16, bool, int8..int64,
// uint8..uint64, read from raw_data (little-endian) or from the typed repeated fields
// (float_data, int32_data — which also carries int8/16, uint8/16, bool and the 16-bit float
// bits —, int64_data, double_data, uint64_data, which carries uint32 too); strings from
// string_data, packed (support/packed_strings.h). Complex numbers are Unimplemented errors
// naming the tensor. External data (data_location EXTERNAL)
// is read from a file relative to `base_dir` (the model's folder): the path must stay inside
// that folder and offset + length inside the file. Dims must be non-negative and the element
// count, and the bytes, must fit `max_bytes`; the data present must match the count exactly.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "relax/expr.h"

namespace kiln::frontends::onnx {

// The most bytes one tensor may take (initializer, Constant or test data): 16 GiB.
inline constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

// Kiln's dtype for an ONNX TensorProto.DataType value (STRING is `string`); Unimplemented for complex
// numbers and unknown values.
absl::StatusOr<tir::DataType> DataTypeFromOnnx(int32_t onnx_type);
// The ONNX TensorProto.DataType value for a Kiln dtype (0, UNDEFINED, when ONNX has none).
int32_t OnnxDataTypeOf(tir::DataType dtype);
// The ONNX type's name, e.g. "FLOAT", "STRING".
std::string OnnxDataTypeName(int32_t onnx_type);

// Host data of `tensor`. `base_dir` is where external data files are looked up ("" allows
// no external data).
absl::StatusOr<relax::ConstantData> TensorFromProto(const ::onnx::TensorProto& tensor, const std::string& base_dir,
                                                    int64_t max_bytes = kMaxTensorBytes);

}  // namespace kiln::frontends::onnx
