// Graph IR: building with shape inference, editing helpers (users, replace uses,
// dead-node removal, topological sort), the verifier and the tensor type.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/text.h"

namespace trnsim::ir {
namespace {

std::vector<int64_t> ints(std::initializer_list<int64_t> v) {
  return v;
}

TEST(IrTensor, StorageAndNormalization) {
  Tensor f = Tensor::from_floats({2}, {1.0f, 2.5f});
  EXPECT_TRUE(f.holds_floats());
  EXPECT_EQ(f.type().str(), "fp32[2]");
  EXPECT_THROW(f.ints(), CompileError);
  // int8 wraps two's-complement: 200 -> 200 - 256 = -56; uint8: -1 -> 255.
  EXPECT_EQ(Tensor::from_ints({1}, {200}, ElemType::int8).ints()[0], -56);
  EXPECT_EQ(Tensor::from_ints({1}, {-1}, ElemType::uint8).ints()[0], 255);
  EXPECT_EQ(Tensor::from_ints({1}, {7}, ElemType::boolean).ints()[0], 1);
  // fp16 rounds to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(Tensor::from_floats({1}, {1.0f + 0x1p-11f}, ElemType::fp16).floats()[0], 1.0f);
  // bf16 keeps 8 significant bits: 1 + 2^-7 survives, 1 + 2^-9 rounds to 1.
  EXPECT_EQ(Tensor::from_floats({2}, {1.0f + 0x1p-7f, 1.0f + 0x1p-9f}, ElemType::bf16).floats(),
            (std::vector<float>{1.0f + 0x1p-7f, 1.0f}));
  EXPECT_THROW(Tensor::from_floats({3}, {1.0f}), CompileError);
  EXPECT_THROW(Tensor::from_ints({1}, {1}, ElemType::fp32), CompileError);
  // Cast: float -> int truncates toward zero, NaN -> 0, anything -> bool is != 0.
  Tensor c = Tensor::from_floats({4}, {-2.7f, 2.7f, NAN, 0.0f});
  EXPECT_EQ(c.cast(ElemType::int32).ints(), (std::vector<int64_t>{-2, 2, 0, 0}));
  EXPECT_EQ(c.cast(ElemType::boolean).ints(), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(Tensor::from_ints({2}, {300, -1}, ElemType::int64).cast(ElemType::uint8).ints(),
            (std::vector<int64_t>{44, 255}));
  EXPECT_EQ(strides_of({2, 3, 4}), ints({12, 4, 1}));
}

TEST(IrTypes, NamesAndIsaMapping) {
  for (auto t : {ElemType::fp32, ElemType::fp16, ElemType::bf16, ElemType::fp8e4m3, ElemType::int64,
                 ElemType::int32, ElemType::uint8, ElemType::boolean})
    EXPECT_EQ(parse_elem_type(elem_type_name(t)), t);
  EXPECT_EQ(elem_type_name(ElemType::boolean), "bool");
  EXPECT_FALSE(parse_elem_type("float"));
  EXPECT_EQ(to_isa(ElemType::bf16), isa::DType::bf16);
  EXPECT_FALSE(to_isa(ElemType::int64).has_value());
  EXPECT_EQ(from_isa(isa::DType::uint8), ElemType::uint8);
}

// x -> Relu -> Sigmoid -> out, plus a dead Tanh branch.
Graph small_graph() {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {2, 3}});
  Value* r = make_node(g, "Relu", {x}, {}, "relu")->outputs[0];
  Value* s = make_node(g, "Sigmoid", {r}, {}, "sig", 1, {"out"})->outputs[0];
  make_node(g, "Tanh", {r}, {}, "dead");
  g.add_output(s);
  return g;
}

TEST(IrGraph, BuildQueryAndEdit) {
  Graph g = small_graph();
  g.verify();
  Value* r = g.find_value("relu_out");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->producer->op, "Relu");
  auto users = g.users(r);
  ASSERT_EQ(users.size(), 2u);  // Sigmoid and the dead Tanh
  EXPECT_EQ(users[0].first->op, "Sigmoid");
  EXPECT_EQ(users[0].second, 0);
  EXPECT_TRUE(g.is_output(g.find_value("out")));

  // The dead Tanh goes; Relu and Sigmoid stay.
  EXPECT_EQ(g.erase_dead_nodes(), 1);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.find_value("dead_out"), nullptr);

  // Bypass the Relu: Sigmoid reads x directly, then Relu is dead.
  g.replace_all_uses(r, g.find_value("x"));
  EXPECT_TRUE(g.users(r).empty());
  g.erase_node(r->producer);
  EXPECT_EQ(g.num_nodes(), 1u);
  g.verify();
  EXPECT_EQ(g.nodes()[0]->inputs[0]->name, "x");
}

TEST(IrGraph, CloneIsDeepAndIndependent) {
  Graph g = small_graph();
  g.add_constant("k", Tensor::from_floats({2}, {1, 2}));
  Graph c = g.clone();
  c.verify();
  EXPECT_EQ(print_graph(c), print_graph(g));
  // Editing the clone leaves the original alone.
  EXPECT_EQ(c.erase_dead_nodes(), 1);
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_NE(c.find_value("out"), g.find_value("out"));
  EXPECT_EQ(c.find_value("out")->producer, c.nodes()[1].get());
}

TEST(IrGraph, EditErrors) {
  Graph g = small_graph();
  // A used node cannot be erased; types must match for replace_all_uses.
  EXPECT_THROW(g.erase_node(g.find_value("relu_out")->producer), CompileError);
  Value* c = g.add_constant("c", Tensor::from_floats({3}, {1, 2, 3}));
  EXPECT_THROW(g.replace_all_uses(g.find_value("x"), c), CompileError);
  EXPECT_THROW(g.add_input("x", {ElemType::fp32, {1}}), CompileError);  // duplicate name
  EXPECT_EQ(g.unique_name("x"), "x_1");
  EXPECT_EQ(g.unique_name("fresh"), "fresh");
}

TEST(IrGraph, TopoSortRestoresOrder) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {4}});
  Node* a = make_node(g, "Relu", {x}, {}, "a");
  // Insert b (reading a's output) before a: out of order until sorted.
  Node* b = make_node(g, "Neg", {a->outputs[0]}, {}, "b", 1, {}, a);
  g.add_output(b->outputs[0]);
  EXPECT_EQ(g.nodes()[0].get(), b);
  try {
    g.verify();
    FAIL() << "expected a use-before-definition error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("used before it is defined"), std::string::npos)
        << e.what();
  }
  g.topo_sort();
  EXPECT_EQ(g.nodes()[0].get(), a);
  g.verify();
}

TEST(IrGraph, VerifierCatchesWrongTypesAndAttributes) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {2, 3}});
  // Declared type disagrees with inference ([2,3] transposed is [3,2]).
  Node* t = g.add_node("Transpose", {x}, {{"y", {ElemType::fp32, {2, 3}}}},
                       {{"perm", ints({1, 0})}}, "t");
  g.add_output(t->outputs[0]);
  try {
    g.verify();
    FAIL() << "expected a type mismatch";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "node 't' (op Transpose): output 'y' is typed fp32[2,3] but inference "
                  "gives fp32[3,2]"),
              std::string::npos)
        << e.what();
  }
  // Unknown attribute and unknown op.
  Graph g2;
  Value* x2 = g2.add_input("x", {ElemType::fp32, {2}});
  EXPECT_THROW(make_node(g2, "Relu", {x2}, {{"alpha", 1.0f}}), CompileError);
  EXPECT_THROW(make_node(g2, "TfIdfVectorizer", {x2}), UnsupportedError);
  // Non-normalized attributes (negative axis) are caught by verify.
  Node* s = g2.add_node("Softmax", {x2}, {{"s", {ElemType::fp32, {2}}}}, {{"axis", -1}}, "sm");
  g2.add_output(s->outputs[0]);
  EXPECT_THROW(g2.verify(), CompileError);
}

TEST(IrOps, ShapeInference) {
  Graph g;
  Value* a = g.add_input("a", {ElemType::fp32, {2, 1, 4, 3}});
  Value* b = g.add_input("b", {ElemType::fp32, {5, 3, 6}});
  // Batched MatMul broadcasts [2,1] with [5] -> [2,5]; [4,3] @ [3,6] -> [4,6].
  EXPECT_EQ(make_node(g, "MatMul", {a, b})->outputs[0]->type.str(), "fp32[2,5,4,6]");
  // Conv 2-D: (9 + 1 + 1 - 3) / 2 + 1 = 5 per spatial dim; 8 out channels.
  Value* x = g.add_input("x", {ElemType::fp32, {1, 4, 9, 9}});
  Value* w = g.add_constant("w", TensorType{ElemType::fp32, {8, 2, 3, 3}});
  Node* c = make_node(g, "Conv", {x, w},
                      {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"group", 2}});
  EXPECT_EQ(c->outputs[0]->type.str(), "fp32[1,8,5,5]");
  EXPECT_EQ(c->attr_ints("kernel_shape"), ints({3, 3}));  // filled from the weights
  EXPECT_EQ(c->attr_ints("dilations"), ints({1, 1}));
  // MaxPool ceil_mode: (9 - 2) / 2 = 3.5 -> ceil 4, +1 = 5 windows.
  Node* p =
      make_node(g, "MaxPool", {x},
                {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", 1}});
  EXPECT_EQ(p->outputs[0]->type.str(), "fp32[1,4,5,5]");
  // Negative axes are normalized; keepdims=0 drops the reduced dims.
  Node* r = make_node(g, "ReduceMean", {a}, {{"axes", ints({-1, 0})}, {"keepdims", 0}});
  EXPECT_EQ(r->attr_ints("axes"), ints({0, 3}));
  EXPECT_EQ(r->outputs[0]->type.str(), "fp32[1,4]");
  // Slice with a negative step: start 3 down to (exclusive) 0 in steps of -2 -> 3, 1.
  Node* s = make_node(
      g, "Slice", {a},
      {{"starts", ints({-1})}, {"ends", ints({0})}, {"axes", ints({2})}, {"steps", ints({-2})}});
  EXPECT_EQ(s->outputs[0]->type.str(), "fp32[2,1,2,3]");
  // Split without sizes: equal parts, one per output.
  Node* sp = make_node(g, "Split", {x}, {{"axis", 1}}, "sp", 2);
  EXPECT_EQ(sp->attr_ints("split"), ints({2, 2}));
  EXPECT_EQ(sp->outputs[1]->type.str(), "fp32[1,2,9,9]");
  // Comparisons give bool; Gather splices the indices' shape in.
  Value* idx = g.add_input("idx", {ElemType::int64, {2, 2}});
  EXPECT_EQ(make_node(g, "Gather", {b, idx}, {{"axis", 1}})->outputs[0]->type.str(),
            "fp32[5,2,2,6]");
  EXPECT_EQ(make_node(g, "Less", {a, a})->outputs[0]->type.str(), "bool[2,1,4,3]");
  // Incompatible broadcast names both shapes.
  try {
    make_node(g, "Add", {a, b}, {}, "bad_add");
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "node 'bad_add' (op Add): shapes [2,1,4,3], [5,3,6] do not broadcast"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_node(g, "Sigmoid", {idx}), CompileError);  // float-only op
}

TEST(IrOps, EveryOpHasAKernelAndSchema) {
  std::vector<std::string> names = op_names();
  EXPECT_GT(names.size(), 100u);
  for (const auto& n : names) {
    EXPECT_NE(find_op_schema(n), nullptr) << n;
    EXPECT_TRUE(interp::has_kernel(n)) << n;
  }
  EXPECT_EQ(find_op_schema("TfIdfVectorizer"), nullptr);
}

}  // namespace
}  // namespace trnsim::ir
