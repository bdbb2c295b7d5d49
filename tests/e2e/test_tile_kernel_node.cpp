// User kernels in a model: an ONNX node of the "trnsim.kernels" domain carries a
// kernel's tile IR; it imports as trn.TileKernel, is typed from the kernel's output
// tensors, and its ops are spliced into the model's program with its tensors bound
// to the node's values. The interpreter cannot run it; mistakes name the node.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "compiler/partition.h"
#include "compiler/tile/ir.h"
#include "runtime/fallback.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using frontend::testing::attr_s;
using frontend::testing::ModelBuilder;
constexpr int kFloat = onnx::TensorProto::FLOAT;

// y = 2 * x on [64,32] fp32, as the Python tracer writes it.
const char* kScale2 =
    "kernel scale2\n"
    "tensor x [64,32] fp32 input\n"
    "tensor y [64,32] fp32 output\n"
    "pool io sbuf bufs=1\n"
    "tile t io [64,32] fp32 slot=0\n"
    "%0 dma dma_copy dst=t:sbuf[0:64, 0, fp32, [1,32]] src=x:hbm[64x32, 0, fp32, [1,32]]  # "
    "k.py:3\n"
    "%1 auto tensor_scalar dst=t:sbuf[0:64, 0, fp32, [1,32]] src=t:sbuf[0:64, 0, fp32, [1,32]] "
    "op0=mul arg0=2.0  # k.py:4\n"
    "%2 dma dma_copy dst=y:hbm[64x32, 0, fp32, [1,32]] src=t:sbuf[0:64, 0, fp32, [1,32]]  # "
    "k.py:5\n";

// x [2,32,32] -> Relu -> Reshape [64,32] -> scale2 (kernel) -> Add x2 [64,32].
ModelBuilder kernel_model(const std::string& tir, const std::string& domain = "trnsim.kernels",
                          const std::vector<int64_t>& x2_shape = {64, 32}) {
  ModelBuilder b(17);
  auto* o = b.model().add_opset_import();
  o->set_domain(domain);
  o->set_version(1);
  b.input("x", kFloat, {2, 32, 32});
  b.input("x2", kFloat, x2_shape);
  b.init("shape", ir::Tensor::from_ints({2}, {64, 32}));
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Reshape", {"r", "shape"}, {"flat"}, "flat");
  onnx::NodeProto& k = b.node("scale2", {"flat"}, {"k"}, "scale2_0");
  k.set_domain(domain);
  attr_s(k, "tir", tir);
  attr_s(k, "inputs", "x");
  attr_s(k, "outputs", "y");
  b.node("Add", {"k", "x2"}, {"out"}, "add");
  b.output("out");
  return b;
}

ir::Graph import(const ModelBuilder& b) {
  return frontend::import_onnx_bytes(b.bytes(), "m.onnx");
}

compiler::CompileOnnxOptions fp32_options(const platform::platform_config& cfg) {
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  return o;
}

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(TileKernelNode, ImportsTypedFromTheKernel) {
  ir::Graph g = import(kernel_model(kScale2));
  const ir::Node* k = nullptr;
  for (const auto& n : g.nodes())
    if (n->name == "scale2_0") k = n.get();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "trn.TileKernel");
  EXPECT_EQ(k->outputs.at(0)->type.str(), "fp32[64,32]");
}

TEST(TileKernelNode, RunsOnTheChipWithoutFallback) {
  const platform::platform_config cfg = platform::load_config("tiny");
  const Tensor x = random_tensor({2, 32, 32}, 1), x2 = random_tensor({64, 32}, 2);
  compiler::PartitionedModel m =
      compiler::compile_partitioned(import(kernel_model(kScale2)), fp32_options(cfg), true);
  EXPECT_TRUE(m.fallback.empty());
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_TRUE(m.segments[0].on_device);
  runtime::Device dev(cfg);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, {{"x", x}, {"x2", x2}});
  const auto& got = r.outputs.at("out").floats();
  ASSERT_EQ(got.size(), 64u * 32u);
  for (size_t i = 0; i < got.size(); ++i)  // 2 relu(x) + x2, computed here
    ASSERT_FLOAT_EQ(got[i], 2 * std::max(x.floats()[i], 0.0f) + x2.floats()[i]) << i;
}

TEST(TileKernelNode, TheInterpreterRefusesByName) {
  ir::Graph g = import(kernel_model(kScale2));
  const std::string msg = error_of<ir::UnsupportedError>([&] {
    interp::run(g, {{"x", random_tensor({2, 32, 32}, 1)}, {"x2", random_tensor({64, 32}, 2)}});
  });
  EXPECT_NE(msg.find("scale2_0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("trn.TileKernel runs on the device only"), std::string::npos) << msg;
}

TEST(TileKernelNode, OtherDomainsAreStillRefused) {
  const std::string msg =
      error_of<ir::UnsupportedError>([&] { import(kernel_model(kScale2, "trnsim.other")); });
  EXPECT_NE(msg.find("unsupported op type 'trnsim.other.scale2'"), std::string::npos) << msg;
}

TEST(TileKernelNode, MistakesNameTheNode) {
  // Traced for another input shape.
  std::string tir = kScale2;
  std::string msg = error_of<ir::CompileError>([&] {
    std::string t = tir;
    t.replace(t.find("tensor x [64,32]"), 16, "tensor x [32,64]");
    import(kernel_model(t));
  });
  EXPECT_NE(msg.find("node 'scale2_0' (op scale2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("traced with 'x' [32,64] fp32"), std::string::npos) << msg;
  // Malformed tile IR: the parser's line.
  msg = error_of<ir::CompileError>([&] { import(kernel_model(tir + "%3 bogus\n")); });
  EXPECT_NE(msg.find("node 'scale2_0'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tir:9:"), std::string::npos) << msg;
  // Binding names a tensor the kernel does not have.
  msg = error_of<ir::CompileError>([&] {
    ModelBuilder b = kernel_model(tir);
    for (auto& a : *b.model().mutable_graph()->mutable_node(2)->mutable_attribute())
      if (a.name() == "inputs") a.set_s("z");
    import(b);
  });
  EXPECT_NE(msg.find("kernel 'scale2' has no tensor 'z'"), std::string::npos) << msg;
}

TEST(TileKernelNode, IntegerTensorsAreRefused) {
  // Integers are fp32 on the device: a kernel traced for int32 cannot address them.
  std::string tir = kScale2;
  tir.replace(tir.find("tensor x [64,32] fp32"), 21, "tensor x [64,32] int32");
  tir.replace(tir.find("x:hbm[64x32, 0, fp32"), 20, "x:hbm[64x32, 0, int32");
  ModelBuilder b(17);
  auto* o = b.model().add_opset_import();
  o->set_domain("trnsim.kernels");
  o->set_version(1);
  b.input("i", onnx::TensorProto::INT32, {64, 32});
  onnx::NodeProto& k = b.node("scale2", {"i"}, {"k"}, "scale2_0");
  k.set_domain("trnsim.kernels");
  attr_s(k, "tir", tir);
  attr_s(k, "inputs", "x");
  attr_s(k, "outputs", "y");
  b.output("k");
  const platform::platform_config cfg = platform::load_config("tiny");
  const std::string msg = error_of<ir::CompileError>(
      [&] { compiler::compile_partitioned(import(b), fp32_options(cfg), true); });
  EXPECT_NE(msg.find("node 'scale2_0' (op trn.TileKernel): value 'i' (int32[64,32]) is fp32 on "
                     "the device; kernel tensor 'x' is int32"),
            std::string::npos)
      << msg;
}

TEST(TileKernelNode, CompileErrorsNameTheNodeAndKernelLine) {
  // A tile larger than SBUF: the tile passes refuse it, naming the spliced op's origin.
  const platform::platform_config cfg = platform::load_config("tiny");
  std::string tir = kScale2;
  const auto cols = std::to_string(runtime::target_from_config(cfg).sbuf_partition_bytes);
  tir.replace(tir.find("tile t io [64,32]"), 17, "tile t io [64," + cols + "]");
  const std::string msg = error_of<std::exception>(
      [&] { compiler::compile_partitioned(import(kernel_model(tir)), fp32_options(cfg), true); });
  EXPECT_NE(msg.find("(from node 'scale2_0' (op trn.TileKernel) at k.py:"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace trnsim::e2e
