// Sequence and optional values: the ONNX import resolves them into their tensors
// (compiler/frontend/onnx_import.h), so the graph the interpreter runs holds tensors
// only. Each op is checked on small models whose results are worked out by hand.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "tests/compiler/onnx_test_util.h"

namespace trnsim {
namespace {

using frontend::testing::attr_i;
using frontend::testing::ModelBuilder;
using ir::ElemType;
using ir::Tensor;
constexpr int kF = onnx::TensorProto::FLOAT;

void seq_output(ModelBuilder& b, const std::string& name) {
  auto* v = b.model().mutable_graph()->add_output();
  v->set_name(name);
  v->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(kF);
}

onnx::ValueInfoProto seq_info(const std::string& name) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(kF);
  return v;
}

ir::Graph import(ModelBuilder& b, const frontend::ImportOptions& o = {}) {
  return frontend::import_onnx_model(b.model(), "m.onnx", o);
}

std::string error_of(ModelBuilder& b, const frontend::ImportOptions& o = {}) {
  try {
    import(b, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Construct, Insert (at a position), Erase (the last), Length, At (negative
// position), ConcatFromSequence, and a sequence graph output (one per tensor).
TEST(InterpSequence, ConstructInsertEraseAtLengthConcat) {
  ModelBuilder b(17);
  b.input("a", kF, {2});
  b.input("b", kF, {3});
  b.init("one", Tensor::scalar_int(1));
  b.init("minus1", Tensor::scalar_int(-1));
  b.node("SequenceConstruct", {"a", "a"}, {"s1"});
  b.node("SequenceInsert", {"s1", "b", "one"}, {"s2"});  // [a, b, a]
  b.node("SequenceErase", {"s2"}, {"s3"});               // [a, b]
  b.node("SequenceLength", {"s3"}, {"n"});
  b.node("SequenceAt", {"s3", "minus1"}, {"t"}, "at");
  attr_i(b.node("ConcatFromSequence", {"s3"}, {"c"}), "axis", 0);
  b.output("n", onnx::TensorProto::INT64);
  b.output("t");
  b.output("c");
  seq_output(b, "s3");
  ir::Graph g = import(b);
  for (const auto& n : g.nodes()) EXPECT_EQ(n->op.find("Sequence"), std::string::npos) << n->op;
  const Tensor a = Tensor::from_floats({2}, {1, 2}), bv = Tensor::from_floats({3}, {3, 4, 5});
  interp::TensorMap r = interp::run(g, {{"a", a}, {"b", bv}});
  EXPECT_EQ(r.at("n").ints(), std::vector<int64_t>{2});
  EXPECT_EQ(r.at("t"), bv);
  EXPECT_EQ(r.at("c").floats(), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r.at(frontend::sequence_item_name("s3", 0)), a);
  EXPECT_EQ(r.at("s3[1]"), bv);
  EXPECT_FALSE(r.count("s3[2]"));
}

// SplitToSequence: pieces of one squeezed (keepdims 0), then stacked on a new axis
// (a transpose); and pieces of a scalar split size, the last one shorter.
TEST(InterpSequence, SplitToSequenceAndStack) {
  ModelBuilder b(17);
  b.input("x", kF, {3, 2});
  b.init("two", Tensor::scalar_int(2));
  attr_i(b.node("SplitToSequence", {"x"}, {"rows"}), "keepdims", 0);
  auto& st = b.node("ConcatFromSequence", {"rows"}, {"xt"});
  attr_i(st, "axis", 1);
  attr_i(st, "new_axis", 1);
  b.node("SplitToSequence", {"x", "two"}, {"halves"});
  b.node("SequenceLength", {"halves"}, {"nh"});
  b.output("xt");
  b.output("nh", onnx::TensorProto::INT64);
  seq_output(b, "halves");
  ir::Graph g = import(b);
  interp::TensorMap r = interp::run(g, {{"x", Tensor::from_floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(r.at("xt"), Tensor::from_floats({2, 3}, {1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(r.at("nh").ints(), std::vector<int64_t>{2});
  EXPECT_EQ(r.at("halves[0]"), Tensor::from_floats({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(r.at("halves[1]"), Tensor::from_floats({1, 2}, {5, 6}));
}

TEST(InterpSequence, OptionalHasAndGetElement) {
  ModelBuilder b(16);
  b.input("x", kF, {2});
  b.node("Optional", {"x"}, {"o"});
  b.node("OptionalHasElement", {"o"}, {"has"});
  b.node("OptionalGetElement", {"o"}, {"got"});
  auto& e = b.node("Optional", {}, {"none"});
  auto* a = e.add_attribute();
  a->set_name("type");
  a->set_type(onnx::AttributeProto::TYPE_PROTO);
  a->mutable_tp()->mutable_tensor_type()->set_elem_type(kF);
  b.node("OptionalHasElement", {"none"}, {"has_none"});
  b.output("has", onnx::TensorProto::BOOL);
  b.output("got");
  b.output("has_none", onnx::TensorProto::BOOL);
  ir::Graph g = import(b);
  const Tensor x = Tensor::from_floats({2}, {7, 8});
  interp::TensorMap r = interp::run(g, {{"x", x}});
  EXPECT_EQ(r.at("has").ints(), std::vector<int64_t>{1});
  EXPECT_EQ(r.at("has_none").ints(), std::vector<int64_t>{0});
  EXPECT_EQ(r.at("got"), x);
  // Reading the element of an empty optional names the node.
  b.node("OptionalGetElement", {"none"}, {"bad"}, "get_none");
  b.output("bad");
  const std::string err = error_of(b);
  EXPECT_NE(err.find("get_none"), std::string::npos) << err;
  EXPECT_NE(err.find("empty"), std::string::npos) << err;
}

// A Loop appending to a list (torch.jit.script's `out.append(...)`): unrolled at
// import, the sequence stacked after it.
TEST(InterpSequence, LoopAppendingToASequenceIsUnrolled) {
  ModelBuilder b(13);
  b.input("x", kF, {2});
  b.init("trip", Tensor::scalar_int(3));
  b.init("go", Tensor::from_ints({}, {1}, ElemType::boolean));
  b.node("SequenceEmpty", {}, {"empty"});
  auto& loop = b.node("Loop", {"trip", "go", "empty"}, {"list"}, "loop");
  auto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *a->mutable_g();
  body.set_name("body");
  auto scalar = [&](const std::string& name, int elem) {
    auto* v = body.add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();
  };
  scalar("i", onnx::TensorProto::INT64);
  scalar("c", onnx::TensorProto::BOOL);
  *body.add_input() = seq_info("acc");
  auto node = [&](const std::string& op, std::vector<std::string> ins, std::string out) {
    auto* n = body.add_node();
    n->set_op_type(op);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  attr_i(*node("Cast", {"i"}, "fi"), "to", kF);
  node("Mul", {"x", "fi"}, "row");
  node("SequenceInsert", {"acc", "row"}, "acc_out");
  node("Identity", {"c"}, "c_out");
  body.add_output()->set_name("c_out");
  *body.add_output() = seq_info("acc_out");
  auto& stack = b.node("ConcatFromSequence", {"list"}, {"y"});
  attr_i(stack, "axis", 0);
  attr_i(stack, "new_axis", 1);
  b.output("y");
  ir::Graph g = import(b);
  for (const auto& n : g.nodes()) EXPECT_NE(n->op, "Loop");
  interp::TensorMap r = interp::run(g, {{"x", Tensor::from_floats({2}, {1, 2})}});
  EXPECT_EQ(r.at("y"), Tensor::from_floats({3, 2}, {0, 0, 1, 2, 2, 4}));
}

// Sequence graph inputs: their structure is given, each tensor an input of its own.
TEST(InterpSequence, SequenceInputsNeedTheirStructure) {
  ModelBuilder b(17);
  *b.model().mutable_graph()->add_input() = seq_info("s");
  b.node("SequenceLength", {"s"}, {"n"});
  auto& c = b.node("ConcatFromSequence", {"s"}, {"c"});
  attr_i(c, "axis", 0);
  b.output("n", onnx::TensorProto::INT64);
  b.output("c");
  const std::string err = error_of(b);
  EXPECT_NE(err.find("input 's'"), std::string::npos) << err;
  EXPECT_NE(err.find("sequence_inputs"), std::string::npos) << err;
  frontend::ImportOptions o;
  o.sequence_inputs["s"].items = {{ElemType::fp32, {1}}, {ElemType::fp32, {2}}};
  ir::Graph g = import(b, o);
  interp::TensorMap r = interp::run(
      g, {{"s[0]", Tensor::from_floats({1}, {1})}, {"s[1]", Tensor::from_floats({2}, {2, 3})}});
  EXPECT_EQ(r.at("n").ints(), std::vector<int64_t>{2});
  EXPECT_EQ(r.at("c").floats(), (std::vector<float>{1, 2, 3}));
}

TEST(InterpSequence, BadPositionsAndRuntimeDecisionsAreNamed) {
  {
    ModelBuilder b(17);
    b.input("a", kF, {2});
    b.init("five", Tensor::scalar_int(5));
    b.node("SequenceConstruct", {"a"}, {"s"});
    b.node("SequenceAt", {"s", "five"}, {"t"}, "at_five");
    b.output("t");
    const std::string err = error_of(b);
    EXPECT_NE(err.find("at_five"), std::string::npos) << err;
    EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  }
  {
    // A position computed at run time asks for its graph input as a constant.
    ModelBuilder b(17);
    b.input("a", kF, {2});
    b.input("p", onnx::TensorProto::INT64, {});
    b.node("SequenceConstruct", {"a", "a"}, {"s"});
    b.node("SequenceAt", {"s", "p"}, {"t"});
    b.output("t");
    try {
      import(b);
      FAIL() << "expected a refusal";
    } catch (const frontend::NeedsConstantError& e) {
      EXPECT_EQ(e.value(), "p");
    }
  }
  {
    // An If whose branches make sequences needs its condition at import.
    ModelBuilder b(17);
    b.input("cond", onnx::TensorProto::BOOL, {});
    b.input("a", kF, {2});
    auto& n = b.node("If", {"cond"}, {"s"});
    for (const char* key : {"then_branch", "else_branch"}) {
      auto* a = n.add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::GRAPH);
      auto* sc = a->mutable_g()->add_node();
      sc->set_op_type("SequenceConstruct");
      sc->add_input("a");
      sc->add_output(std::string(key) + "_s");
      *a->mutable_g()->add_output() = seq_info(std::string(key) + "_s");
    }
    seq_output(b, "s");
    try {
      import(b);
      FAIL() << "expected a refusal";
    } catch (const frontend::NeedsConstantError& e) {
      EXPECT_EQ(e.value(), "cond");
    }
    frontend::ImportOptions o;
    o.constant_inputs["cond"] = Tensor::from_ints({}, {0}, ElemType::boolean);
    ir::Graph g = import(b, o);
    EXPECT_EQ(interp::run(g, {{"a", Tensor::from_floats({2}, {1, 2})}}).at("s[0]"),
              Tensor::from_floats({2}, {1, 2}));
  }
}

}  // namespace
}  // namespace trnsim
