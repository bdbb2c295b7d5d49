#include "compiler/frontend/tensor_proto.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "compiler/ir/error.h"
#include "models/isa/dtype.h"
#include "models/isa/file_io.h"

namespace trnsim::frontend {

using ir::ElemType;
using TP = onnx::TensorProto;

std::optional<ElemType> elem_type_from_onnx(int dt) {
  switch (dt) {
    case TP::FLOAT:
      return ElemType::fp32;
    case TP::FLOAT16:
      return ElemType::fp16;
    case TP::BFLOAT16:
      return ElemType::bf16;
    case TP::INT64:
      return ElemType::int64;
    case TP::INT32:
      return ElemType::int32;
    case TP::INT16:
      return ElemType::int16;
    case TP::INT8:
      return ElemType::int8;
    case TP::UINT32:
      return ElemType::uint32;
    case TP::UINT16:
      return ElemType::uint16;
    case TP::UINT8:
      return ElemType::uint8;
    case TP::BOOL:
      return ElemType::boolean;
    case TP::DOUBLE:
      return ElemType::fp64;
    default:
      return std::nullopt;
  }
}

int elem_type_to_onnx(ElemType t) {
  switch (t) {
    case ElemType::fp32:
      return TP::FLOAT;
    case ElemType::fp16:
      return TP::FLOAT16;
    case ElemType::bf16:
      return TP::BFLOAT16;
    case ElemType::int64:
      return TP::INT64;
    case ElemType::int32:
      return TP::INT32;
    case ElemType::int16:
      return TP::INT16;
    case ElemType::int8:
      return TP::INT8;
    case ElemType::uint32:
      return TP::UINT32;
    case ElemType::uint16:
      return TP::UINT16;
    case ElemType::uint8:
      return TP::UINT8;
    case ElemType::boolean:
      return TP::BOOL;
    case ElemType::fp64:
      return TP::DOUBLE;
    default:
      throw ir::UnsupportedError("element type " + std::string(ir::elem_type_name(t)) +
                                 " has no ONNX equivalent");
  }
}

std::string onnx_type_name(int dt) {
  if (TP::DataType_IsValid(dt)) return TP::DataType_Name(static_cast<TP::DataType>(dt));
  return "type code " + std::to_string(dt);
}

std::string supported_onnx_types() {
  return "FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8, "
         "BOOL";
}

namespace {

template <typename T>
std::vector<T> raw_values(const std::string& raw, int64_t n, const std::string& what) {
  // Compared in elements: n * sizeof(T) can overflow for a shape whose count fits int64.
  if (raw.size() % sizeof(T) != 0 || raw.size() / sizeof(T) != static_cast<uint64_t>(n))
    throw ir::CompileError(what + ": raw_data holds " + std::to_string(raw.size()) +
                           " bytes, expected " + std::to_string(n) + " values of " +
                           std::to_string(sizeof(T)) + " bytes");
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), raw.data(), n * sizeof(T));  // little-endian host, as ONNX stores
  return v;
}

void check_count(int64_t got, int64_t n, const std::string& what, const char* field) {
  if (got != n)
    throw ir::CompileError(what + ": " + field + " holds " + std::to_string(got) +
                           " values, expected " + std::to_string(n));
}

}  // namespace

ir::Tensor tensor_from_proto(const TP& p, const std::string& what) {
  if (p.data_location() == TP::EXTERNAL)
    throw ir::UnsupportedError(what + ": external tensor data is not supported");
  if (p.has_segment()) throw ir::UnsupportedError(what + ": segmented tensors are not supported");
  auto et = elem_type_from_onnx(p.data_type());
  if (!et)
    throw ir::UnsupportedError(what + ": element type " + onnx_type_name(p.data_type()) +
                               " is not supported (supported: " + supported_onnx_types() + ")");
  ir::Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw ir::CompileError(what + ": negative dim in " + ir::shape_str(shape));
  const int64_t n = ir::num_elements(shape);
  const bool raw = p.has_raw_data();
  const std::string& rd = p.raw_data();
  switch (p.data_type()) {
    case TP::FLOAT: {
      if (raw) return ir::Tensor::from_floats(shape, raw_values<float>(rd, n, what));
      check_count(p.float_data_size(), n, what, "float_data");
      return ir::Tensor::from_floats(shape, {p.float_data().begin(), p.float_data().end()});
    }
    case TP::DOUBLE: {
      if (raw) return ir::Tensor::from_doubles(shape, raw_values<double>(rd, n, what));
      check_count(p.double_data_size(), n, what, "double_data");
      return ir::Tensor::from_doubles(shape, {p.double_data().begin(), p.double_data().end()});
    }
    case TP::FLOAT16:
    case TP::BFLOAT16: {
      std::vector<uint16_t> bits;
      if (raw) {
        bits = raw_values<uint16_t>(rd, n, what);
      } else {
        check_count(p.int32_data_size(), n, what, "int32_data");
        for (int32_t v : p.int32_data()) bits.push_back(static_cast<uint16_t>(v));
      }
      std::vector<float> f(n);
      for (int64_t k = 0; k < n; ++k)
        f[k] =
            p.data_type() == TP::FLOAT16 ? isa::fp16_to_fp32(bits[k]) : isa::bf16_to_fp32(bits[k]);
      return ir::Tensor::from_floats(shape, std::move(f), *et);
    }
    case TP::INT64: {
      if (raw) return ir::Tensor::from_ints(shape, raw_values<int64_t>(rd, n, what));
      check_count(p.int64_data_size(), n, what, "int64_data");
      return ir::Tensor::from_ints(shape, {p.int64_data().begin(), p.int64_data().end()});
    }
    case TP::UINT32: {
      std::vector<int64_t> v;
      if (raw) {
        for (uint32_t x : raw_values<uint32_t>(rd, n, what)) v.push_back(x);
      } else {
        check_count(p.uint64_data_size(), n, what, "uint64_data");
        for (uint64_t x : p.uint64_data()) v.push_back(static_cast<int64_t>(x));
      }
      return ir::Tensor::from_ints(shape, std::move(v), *et);
    }
    default: {
      // INT32, INT16, INT8, UINT16, UINT8, BOOL: int32_data, or raw at their width.
      std::vector<int64_t> v;
      if (raw) {
        switch (p.data_type()) {
          case TP::INT32:
            for (int32_t x : raw_values<int32_t>(rd, n, what)) v.push_back(x);
            break;
          case TP::INT16:
            for (int16_t x : raw_values<int16_t>(rd, n, what)) v.push_back(x);
            break;
          case TP::UINT16:
            for (uint16_t x : raw_values<uint16_t>(rd, n, what)) v.push_back(x);
            break;
          case TP::INT8:
            for (int8_t x : raw_values<int8_t>(rd, n, what)) v.push_back(x);
            break;
          default:  // UINT8, BOOL
            for (uint8_t x : raw_values<uint8_t>(rd, n, what)) v.push_back(x);
            break;
        }
      } else {
        check_count(p.int32_data_size(), n, what, "int32_data");
        for (int32_t x : p.int32_data()) v.push_back(x);
      }
      return ir::Tensor::from_ints(shape, std::move(v), *et);
    }
  }
}

void tensor_to_proto(const ir::Tensor& t, TP& p) {
  p.Clear();
  p.set_data_type(elem_type_to_onnx(t.elem()));
  for (int64_t d : t.shape()) p.add_dims(d);
  const int64_t n = t.numel();
  std::string raw;
  auto put = [&](const auto* data, size_t bytes) {
    raw.append(reinterpret_cast<const char*>(data), bytes);
  };
  switch (t.elem()) {
    case ElemType::fp32:
      put(t.floats().data(), n * 4);
      break;
    case ElemType::fp64:
      put(t.doubles().data(), n * 8);
      break;
    case ElemType::fp16:
    case ElemType::bf16:
      for (float f : t.floats()) {
        uint16_t b = t.elem() == ElemType::fp16 ? isa::fp32_to_fp16(f) : isa::fp32_to_bf16(f);
        put(&b, 2);
      }
      break;
    case ElemType::int64:
      put(t.ints().data(), n * 8);
      break;
    case ElemType::int32:
    case ElemType::uint32:
      for (int64_t v : t.ints()) {
        uint32_t b = static_cast<uint32_t>(v);
        put(&b, 4);
      }
      break;
    case ElemType::int16:
    case ElemType::uint16:
      for (int64_t v : t.ints()) {
        uint16_t b = static_cast<uint16_t>(v);
        put(&b, 2);
      }
      break;
    default:
      for (int64_t v : t.ints()) {
        uint8_t b = static_cast<uint8_t>(v);
        put(&b, 1);
      }
      break;
  }
  p.set_raw_data(raw);
}

ir::Tensor read_tensor_pb(const std::string& path, std::string* name) {
  std::string bytes;
  if (const std::string why = isa::read_file(path, bytes); !why.empty())
    throw ir::CompileError(path + ": cannot open file: " + why);
  TP p;
  if (!p.ParseFromString(bytes))
    throw ir::CompileError(path + ": not a serialized ONNX TensorProto");
  if (name) *name = p.name();
  return tensor_from_proto(p, path);
}

void write_tensor_pb(const ir::Tensor& t, const std::string& path, const std::string& name) {
  TP p;
  tensor_to_proto(t, p);
  p.set_name(name);
  std::ofstream f(path, std::ios::binary);
  if (!f || !p.SerializeToOstream(&f)) throw ir::CompileError(path + ": cannot write file");
}

namespace {

std::vector<ir::Tensor> sequence_tensors(const onnx::SequenceProto& q, const std::string& what) {
  if (q.elem_type() != onnx::SequenceProto::TENSOR && q.tensor_values_size() == 0 &&
      q.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw ir::UnsupportedError(what + ": only sequences of tensors are supported");
  std::vector<ir::Tensor> r;
  for (int k = 0; k < q.tensor_values_size(); ++k)
    r.push_back(tensor_from_proto(q.tensor_values(k), what + ": tensor " + std::to_string(k)));
  return r;
}

}  // namespace

SequenceData read_sequence_pb(const std::string& path, bool optional) {
  std::string bytes;
  if (const std::string why = isa::read_file(path, bytes); !why.empty())
    throw ir::CompileError(path + ": cannot open file: " + why);
  SequenceData d;
  d.optional = optional;
  if (!optional) {
    onnx::SequenceProto q;
    if (!q.ParseFromString(bytes))
      throw ir::CompileError(path + ": not a serialized ONNX SequenceProto");
    d.tensors = sequence_tensors(q, path);
    return d;
  }
  onnx::OptionalProto o;
  if (!o.ParseFromString(bytes))
    throw ir::CompileError(path + ": not a serialized ONNX OptionalProto");
  d.of_sequence = o.elem_type() == onnx::OptionalProto::SEQUENCE || o.has_sequence_value();
  d.present = o.has_tensor_value() || o.has_sequence_value();
  if (o.has_tensor_value())
    d.tensors.push_back(tensor_from_proto(o.tensor_value(), path));
  else if (o.has_sequence_value())
    d.tensors = sequence_tensors(o.sequence_value(), path);
  else if (o.elem_type() != onnx::OptionalProto::UNDEFINED &&
           o.elem_type() != onnx::OptionalProto::TENSOR &&
           o.elem_type() != onnx::OptionalProto::SEQUENCE)
    throw ir::UnsupportedError(path + ": only optional tensors and sequences are supported");
  return d;
}

}  // namespace trnsim::frontend
