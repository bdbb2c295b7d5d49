// fp64 (ONNX DOUBLE) in the IR and the reference interpreter: exact double storage,
// Cast to and from it, kernels that compute in double, kernels without an fp64 path
// refusing by node name, and the device lowering leaving fp64 nodes to the host.
// Expected values are worked out here in double arithmetic (or exactly by hand).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>
#include <string>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/tensor_proto.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/text.h"
#include "compiler/partition.h"
#include "models/isa/dtype.h"

namespace trnsim {
namespace {

using ir::ElemType;
using ir::Tensor;

// 0.1 + 0.2 and 1 + 2^-40 are not floats: any trip through float shows.
constexpr double kTiny = 1.0 / 1099511627776.0;  // 2^-40

TEST(Fp64, TensorStorageIsExactAndOnlyForFp64) {
  Tensor t = Tensor::from_doubles({3}, {0.1, 1.0 + kTiny, -2.5});
  EXPECT_EQ(t.elem(), ElemType::fp64);
  EXPECT_TRUE(t.holds_floats());
  EXPECT_TRUE(t.holds_doubles());
  EXPECT_EQ(t.numel(), 3);
  EXPECT_EQ(t.at(0), 0.1);
  EXPECT_EQ(t.doubles()[1], 1.0 + kTiny);
  // A float kernel asking for floats() is refused, not fed rounded values.
  EXPECT_THROW(t.floats(), ir::UnsupportedError);
  EXPECT_THROW(Tensor::from_floats({1}, {1.0f}).doubles(), ir::CompileError);
  EXPECT_FALSE(Tensor(ElemType::fp32, {4}).holds_doubles());
  EXPECT_EQ(Tensor(ElemType::fp64, {2, 2}).doubles(), (std::vector<double>(4, 0.0)));
  EXPECT_NE(t.str().find("0.10000000000000001"), std::string::npos) << t.str();
  EXPECT_EQ(ir::parse_elem_type("fp64"), ElemType::fp64);
  EXPECT_EQ(ir::elem_type_name(ElemType::fp64), "fp64");
}

TEST(Fp64, CastToAndFrom) {
  Tensor d = Tensor::from_doubles({4}, {0.1, 1.0 + kTiny, -7.9, 1e300});
  Tensor f = d.cast(ElemType::fp32);
  EXPECT_EQ(f.floats()[0], 0.1f);
  EXPECT_EQ(f.floats()[1], 1.0f);
  EXPECT_TRUE(std::isinf(f.floats()[3]));
  EXPECT_EQ(d.cast(ElemType::int64).ints(), (std::vector<int64_t>{0, 1, -7, INT64_MAX}));
  EXPECT_EQ(d.cast(ElemType::boolean).ints(), (std::vector<int64_t>{1, 1, 1, 1}));
  // Widening is exact.
  EXPECT_EQ(Tensor::from_floats({1}, {0.1f}).cast(ElemType::fp64).doubles()[0],
            static_cast<double>(0.1f));
  EXPECT_EQ(Tensor::from_ints({1}, {(int64_t{1} << 53) - 1}).cast(ElemType::fp64).doubles()[0],
            9007199254740991.0);
  // fp16 from double rounds once: 1 + 2^-11 + 2^-40 is just above the halfway point
  // between fp16 1 and 1 + 2^-10, so it rounds up; via a nearest float (1 + 2^-11,
  // a tie) it would round to even, down to 1.
  const double above_half = 1.0 + 1.0 / 2048 + kTiny;
  EXPECT_EQ(Tensor::from_doubles({1}, {above_half}).cast(ElemType::fp16).floats()[0],
            1.0f + 1.0f / 1024);
  EXPECT_EQ(Tensor::from_doubles({1}, {1.0 + 1.0 / 2048}).cast(ElemType::fp16).floats()[0], 1.0f);
}

TEST(Fp64, OnnxDoubleTensorsRoundTrip) {
  Tensor d = Tensor::from_doubles({2}, {0.1, -1e-300});
  onnx::TensorProto p;
  frontend::tensor_to_proto(d, p);
  EXPECT_EQ(p.data_type(), onnx::TensorProto::DOUBLE);
  EXPECT_EQ(frontend::tensor_from_proto(p, "t"), d);
  onnx::TensorProto q;  // the typed field instead of raw_data
  q.set_data_type(onnx::TensorProto::DOUBLE);
  q.add_dims(1);
  q.add_double_data(0.3);
  EXPECT_EQ(frontend::tensor_from_proto(q, "q").doubles()[0], 0.3);
  EXPECT_EQ(frontend::elem_type_from_onnx(onnx::TensorProto::DOUBLE), ElemType::fp64);
}

TEST(Fp64, TextKeepsEveryDigit) {
  ir::Graph g;
  g.add_constant("c", Tensor::from_doubles({2}, {0.1, 1.0 + kTiny}));
  ir::Value* x = g.add_input("x", {ElemType::fp64, {2}});
  ir::Value* y = ir::make_node(g, "Add", {x, g.find_value("c")}, {}, "add")->outputs[0];
  g.add_output(y);
  ir::Graph back = ir::parse_graph(ir::print_graph(g));
  EXPECT_EQ(*back.find_value("c")->data, *g.find_value("c")->data);
}

// x + c, CumSum, MatMul, ReduceSum, Einsum, Max and Mod on fp64, checked against
// double arithmetic: float would lose every kTiny.
TEST(Fp64, KernelsComputeInDouble) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {ElemType::fp64, {2, 2}});
  ir::Value* c = g.add_constant("c", Tensor::from_doubles({2}, {kTiny, 0.1}));
  auto out = [&](const char* op, std::vector<ir::Value*> ins,
                 std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Value* v = ir::make_node(g, op, std::move(ins), std::move(attrs), op)->outputs[0];
    g.add_output(v);
    return v->name;
  };
  const std::string add = out("Add", {x, c});
  const std::string cum = out("CumSum", {x}, {{"axis", ir::Attribute(int64_t{1})}});
  const std::string mm = out("MatMul", {x, x});
  const std::string red = out(
      "ReduceSum", {x},
      {{"axes", ir::Attribute(std::vector<int64_t>{1})}, {"keepdims", ir::Attribute(int64_t{0})}});
  const std::string ein = out("Einsum", {x}, {{"equation", ir::Attribute("ii->i")}});
  const std::string mx = out("Max", {x, c});
  const std::string mod = out("Mod", {x, c}, {{"fmod", ir::Attribute(int64_t{1})}});
  g.verify();
  const std::vector<double> xv{1.0, kTiny, 0.2, 3.0};
  interp::TensorMap r = interp::run(g, {{"x", Tensor::from_doubles({2, 2}, xv)}});
  EXPECT_EQ(r.at(add).doubles(),
            (std::vector<double>{1.0 + kTiny, kTiny + 0.1, 0.2 + kTiny, 3.0 + 0.1}));
  EXPECT_EQ(r.at(cum).doubles(), (std::vector<double>{1.0, 1.0 + kTiny, 0.2, 0.2 + 3.0}));
  EXPECT_EQ(r.at(mm).doubles(), (std::vector<double>{1.0 + kTiny * 0.2, kTiny + kTiny * 3.0,
                                                     0.2 + 3.0 * 0.2, 0.2 * kTiny + 9.0}));
  EXPECT_EQ(r.at(red).doubles(), (std::vector<double>{1.0 + kTiny, 0.2 + 3.0}));
  EXPECT_EQ(r.at(ein).doubles(), (std::vector<double>{1.0, 3.0}));
  EXPECT_EQ(r.at(mx).doubles(), (std::vector<double>{1.0, 0.1, 0.2, 3.0}));
  EXPECT_EQ(r.at(mod).doubles()[3], std::fmod(3.0, 0.1));
  EXPECT_EQ(r.at(add).elem(), ElemType::fp64);
}

// A kernel with no fp64 path refuses with the node and the type named.
TEST(Fp64, KernelWithoutFp64PathNamesTheNode) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {ElemType::fp64, {1, 1, 2, 2}});
  ir::Value* y = ir::make_node(g, "GlobalAveragePool", {x}, {}, "pool_fp64")->outputs[0];
  g.add_output(y);
  try {
    interp::run(g, {{"x", Tensor::from_doubles({1, 1, 2, 2}, {1, 2, 3, 4})}});
    FAIL() << "expected a refusal";
  } catch (const ir::UnsupportedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("pool_fp64"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fp64"), std::string::npos) << msg;
  }
}

// The chip has no fp64: such nodes fall back to the host, named with the reason.
ir::Graph fp64_tail_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {ElemType::fp32, {4}});
  ir::Value* r = ir::make_node(g, "Relu", {x}, {}, "relu32")->outputs[0];
  ir::Value* d = ir::make_node(g, "Cast", {r}, {{"to", ir::Attribute("fp64")}}, "to64")->outputs[0];
  ir::Value* a = ir::make_node(g, "CumSum", {d}, {{"axis", ir::Attribute(int64_t{0})}}, "cumsum64")
                     ->outputs[0];
  g.add_output(a);
  return g;
}

TEST(Fp64, LoweringLeavesFp64NodesToTheHost) {
  compiler::CompileOnnxOptions o;
  compiler::PartitionedModel m = compiler::compile_partitioned(fp64_tail_graph(), o, true);
  bool cumsum_named = false;
  for (const auto& f : m.fallback) {
    EXPECT_NE(f.op, "Relu") << f.reason;
    if (f.node == "cumsum64") {
      cumsum_named = true;
      EXPECT_NE(f.reason.find("fp64"), std::string::npos) << f.reason;
    }
  }
  EXPECT_TRUE(cumsum_named);
  EXPECT_THROW(compiler::compile_partitioned(fp64_tail_graph(), o, false), ir::UnsupportedError);
}

}  // namespace
}  // namespace trnsim
