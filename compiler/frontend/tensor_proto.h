// ONNX TensorProto <-> ir::Tensor, and reading the .pb files of the ONNX test
// data (one serialized TensorProto per file).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace trnsim::frontend {

// The IR element type of an ONNX TensorProto.DataType code, or nullopt for types
// the compiler does not handle (uint64, string, complex).
std::optional<ir::ElemType> elem_type_from_onnx(int data_type);
int elem_type_to_onnx(ir::ElemType t);
// "FLOAT", "DOUBLE", ... for messages.
std::string onnx_type_name(int data_type);
// The element types the front end accepts, for messages: "float, float16, ...".
std::string supported_onnx_types();

// Decode a TensorProto (raw_data or the typed fields). `what` names the tensor in
// errors. Unsupported element types and external data throw ir::UnsupportedError;
// malformed data throws ir::CompileError.
ir::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what);
void tensor_to_proto(const ir::Tensor& t, onnx::TensorProto& p);

// Read a file holding one serialized TensorProto. `name` (optional) receives the
// tensor's name field.
ir::Tensor read_tensor_pb(const std::string& path, std::string* name = nullptr);
void write_tensor_pb(const ir::Tensor& t, const std::string& path, const std::string& name = "");

// A sequence or optional value of the ONNX test data (a SequenceProto or an
// OptionalProto): its tensors, in order.
struct SequenceData {
  bool optional = false;    // an OptionalProto (else a SequenceProto)
  bool present = true;      // optional: holds an element
  bool of_sequence = true;  // optional: the element is a sequence (else one tensor)
  std::vector<ir::Tensor> tensors;
};
// Read a file holding one serialized SequenceProto (`optional` false) or
// OptionalProto; only tensors (and sequences of them) are supported.
SequenceData read_sequence_pb(const std::string& path, bool optional);

}  // namespace trnsim::frontend
