// Builds small ONNX models in memory for the front-end tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/tensor_proto.h"
#include "compiler/ir/tensor.h"

namespace trnsim::frontend::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset, int64_t ir_version = 8) {
    m_.set_ir_version(ir_version);
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m_.mutable_graph()->set_name("g");
  }

  // dims: -1 marks a symbolic dim named by `params` (or unnamed when params is short).
  void input(const std::string& name, int elem, const std::vector<int64_t>& dims,
             const std::vector<std::string>& params = {}) {
    value_info(m_.mutable_graph()->add_input(), name, elem, dims, params);
  }
  void output(const std::string& name, int elem = onnx::TensorProto::FLOAT,
              const std::vector<int64_t>& dims = {}, bool with_shape = false) {
    auto* v = m_.mutable_graph()->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    if (with_shape)
      for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void init(const std::string& name, const ir::Tensor& t) {
    auto* p = m_.mutable_graph()->add_initializer();
    tensor_to_proto(t, *p);
    p->set_name(name);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }
  onnx::ModelProto& model() { return m_; }
  std::string bytes() const { return m_.SerializeAsString(); }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, int elem,
                         const std::vector<int64_t>& dims, const std::vector<std::string>& params) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* s = t->mutable_shape();
    for (size_t k = 0; k < dims.size(); ++k) {
      auto* d = s->add_dim();
      if (dims[k] >= 0)
        d->set_dim_value(dims[k]);
      else if (k < params.size())
        d->set_dim_param(params[k]);
    }
  }
  onnx::ModelProto m_;
};

inline void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr_t(onnx::NodeProto& n, const std::string& name, const ir::Tensor& t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  tensor_to_proto(t, *a->mutable_t());
}

}  // namespace trnsim::frontend::testing
