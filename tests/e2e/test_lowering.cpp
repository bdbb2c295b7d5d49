// Graphs lowered by compiler/lower and compiled by compiler/compile.h, run on the
// simulated `tiny` chip and compared with the reference interpreter: fp32 tightly,
// bf16 against the interpreter emulating the autocast precision. Graphs are built
// by hand, or exported from torch (skipped when torch is missing). One process per
// test (SystemC elaborates once), so each test makes at most one Device.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "compiler/compile.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/lower/lower.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// X[200,300] @ W[300,130] + b, Relu: M, K, N all with tails (200 = 128 + 72,
// 300 = 2*128 + 44, 130 = 128 + 2).
ir::Graph linear_relu(bool relu) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {200, 300}});
  ir::Value* w = g.add_constant("W", random_tensor({300, 130}, 7, -0.1f, 0.1f));
  ir::Value* b = g.add_constant("b", random_tensor({130}, 8));
  ir::Value* y = ir::make_node(g, "MatMul", {x, w})->outputs[0];
  y = ir::make_node(g, "Add", {y, b})->outputs[0];
  if (relu) y = ir::make_node(g, "Relu", {y})->outputs[0];
  g.add_output(y);
  return g;
}

TEST(LoweringHand, MatMulBiasReluTailsFp32) {
  check_graph(linear_relu(true), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringHand, MatMulBiasBf16) {
  check_graph(linear_relu(false), Precision::bf16, 1e-2, 1e-3);
}

// fp8 operands (e4m3): compared with the interpreter rounding the operands alike.
TEST(LoweringHand, MatMulBiasReluFp8) {
  check_graph(linear_relu(true), Precision::fp8, 1e-2, 1e-3);
}

// fp8 on a target with double-row mode (tiny): K = 300 is one pair of full k-tiles
// (one K = 256 matmul per m-tile and n-chunk) and a 44-row tail alone; without the
// mode every k-tile runs alone. The numerics are checked by MatMulBiasReluFp8.
TEST(LoweringHand, MatMulFp8PairsKTilesAsDoubleRow) {
  auto count = [](bool mode) {
    compiler::CompileOnnxOptions o;
    o.precision = Precision::fp8;
    o.target = runtime::target_from_config(platform::load_config("tiny"));
    o.target.matmul_double_row = mode;
    const isa::Program p = compiler::compile_graph(linear_relu(true), o).program;
    std::pair<int, int> n{0, 0};  // double-row, single matmuls
    for (const auto& q : p.queues)
      for (const auto& in : q.instrs)
        if (in.op == isa::Opcode::matmul) ++(in.double_row ? n.first : n.second);
    return n;
  };
  // 2 m-tiles x 1 n-chunk (130 <= 512): one pair and one tail each.
  EXPECT_EQ(count(true), std::make_pair(2, 2));
  EXPECT_EQ(count(false), std::make_pair(0, 6));
}

// Value and graph names outside [A-Za-z0-9_.] become valid tensor names.
TEST(LoweringHand, NamesMadeValid) {
  ir::Graph g = linear_relu(true);
  g.name = "my graph/1";
  g.rename_value(g.find_value("W"), "0/weight:0");
  tile::Kernel k =
      lower::lower_graph(g, runtime::target_from_config(platform::load_config("tiny")));
  EXPECT_EQ(k.name, "my_graph_1");
  bool found = false;
  for (const auto& t : k.tensors) found |= t.name == "t_0_weight_0";
  EXPECT_TRUE(found);
  std::set<std::string> used;
  EXPECT_EQ(lower::tensor_name("a:b", used), "a_b");
  EXPECT_EQ(lower::tensor_name("a/b", used), "a_b_1");  // kept unique
}

// Batched MatMul [2,40,96] x [2,96,150].
TEST(LoweringHand, BatchedMatMulFp32) {
  ir::Graph g;
  ir::Value* a = g.add_input("A", {ElemType::fp32, {2, 40, 96}});
  ir::Value* b = g.add_input("B", {ElemType::fp32, {2, 96, 150}});
  g.add_output(ir::make_node(g, "MatMul", {a, b})->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// 4-D batches [2,3,40,64] x [2,3,64,50], and a shared A [40,64] x B [3,64,50].
TEST(LoweringHand, BatchedMatMul4dAndSharedFp32) {
  ir::Graph g;
  ir::Value* a = g.add_input("A", {ElemType::fp32, {2, 3, 40, 64}});
  ir::Value* b = g.add_input("B", {ElemType::fp32, {2, 3, 64, 50}});
  ir::Value* a2 = g.add_input("A2", {ElemType::fp32, {40, 64}});
  ir::Value* b2 = g.add_input("B2", {ElemType::fp32, {3, 64, 50}});
  g.add_output(ir::make_node(g, "MatMul", {a, b})->outputs[0]);
  g.add_output(ir::make_node(g, "MatMul", {a2, b2})->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// Sigmoid((X + Y) * Z) - 1.5 with X [3,70,200], Y [200] (row), Z [3,70,1] (column):
// 210 rows = 128 + 82; then Tanh of a second output through a Reshape alias.
TEST(LoweringHand, ElementwiseBroadcastFp32) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {3, 70, 200}});
  ir::Value* y = g.add_input("Y", {ElemType::fp32, {200}});
  ir::Value* z = g.add_input("Z", {ElemType::fp32, {3, 70, 1}});
  ir::Value* c = g.add_constant("c", Tensor::scalar(1.5f));
  ir::Value* s = ir::make_node(g, "Add", {x, y})->outputs[0];
  s = ir::make_node(g, "Mul", {s, z})->outputs[0];
  s = ir::make_node(g, "Sigmoid", {s})->outputs[0];
  s = ir::make_node(g, "Sub", {s, c})->outputs[0];
  g.add_output(s);
  ir::Value* r =
      ir::make_node(g, "Reshape", {x}, {{"shape", std::vector<int64_t>{210, 200}}})->outputs[0];
  g.add_output(ir::make_node(g, "Tanh", {r})->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// Row-wise ops over the last axis of X [3,70,130]: 210 rows = 128 + 82.
TEST(LoweringHand, SoftmaxLogSoftmaxReduceFp32) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {3, 70, 130}});
  g.add_output(ir::make_node(g, "Softmax", {x}, {{"axis", int64_t{2}}})->outputs[0]);
  g.add_output(ir::make_node(g, "LogSoftmax", {x}, {{"axis", int64_t{2}}})->outputs[0]);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    g.add_output(ir::make_node(g, op, {x},
                               {{"axes", std::vector<int64_t>{2}},
                                {"keepdims", int64_t{op[6] == 'M' ? 1 : 0}}})
                     ->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// trn.RMSNorm X [150,96] * scale [96].
TEST(LoweringHand, RmsNormFp32) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {150, 96}});
  ir::Value* sc = g.add_constant("scale", random_tensor({96}, 3));
  g.add_output(ir::make_node(g, "trn.RMSNorm", {x, sc}, {{"axis", int64_t{1}}, {"epsilon", 1e-6f}})
                   ->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// Transpose [2,70,130] -> [130,2,70] by DMA, then Relu of it.
TEST(LoweringHand, TransposeFp32) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {2, 70, 130}});
  ir::Value* t =
      ir::make_node(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}})->outputs[0];
  g.add_output(t);
  g.add_output(ir::make_node(g, "Relu", {t})->outputs[0]);
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// General broadcasting: X [5,32,130] + M [5,1,130] (a row per batch), * Z [32,1]
// (a column repeated per batch), - W [5,32,1] (a column per row). 160 rows = 128 +
// 32; each batch is a run of 32 rows, which DMAs may start on a 32-partition boundary
// (other periods go through a broadcast copy in HBM: test_lowering_ops.cpp).
TEST(LoweringHand, ElementwiseGeneralBroadcastFp32) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {5, 32, 130}});
  ir::Value* m = g.add_input("M", {ElemType::fp32, {5, 1, 130}});
  ir::Value* z = g.add_input("Z", {ElemType::fp32, {32, 1}});
  ir::Value* w = g.add_input("W", {ElemType::fp32, {5, 32, 1}});
  ir::Value* s = ir::make_node(g, "Add", {x, m})->outputs[0];
  s = ir::make_node(g, "Mul", {s, z})->outputs[0];
  s = ir::make_node(g, "Sub", {w, s})->outputs[0];
  g.add_output(s);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringHand, UnsupportedOpNamesNodeAndLowerableSet) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {4, 8}});
  g.add_output(ir::make_node(g, "Shrink", {x}, {}, "cat")->outputs[0]);
  compiler::CompileOnnxOptions o;
  o.target = runtime::target_from_config(platform::load_config("tiny"));
  try {
    compiler::compile_graph(std::move(g), o);
    FAIL() << "expected UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'cat'"), std::string::npos) << m;
    EXPECT_NE(m.find("op type 'Shrink'"), std::string::npos) << m;
    EXPECT_NE(m.find("lowerable: "), std::string::npos) << m;
    EXPECT_NE(m.find("trn.MatMulEpilogue"), std::string::npos) << m;
  }
}

// ---- torch-exported models ------------------------------------------------------

// An export that fails (here: a module torch does not have) fails the test with the
// script's error; only a missing torch may skip.
TEST(LoweringOnnx, AFailedExportFailsTheTest) {
  TRNSIM_REQUIRE_PYTHON(test::python_has({"torch"}));
  static std::string path;  // EXPECT_FATAL_FAILURE's statement cannot use locals
  EXPECT_FATAL_FAILURE(TRNSIM_REQUIRE_PYTHON(export_model(
                           "broken", "m = torch.nn.NoSuchLayer()\nx = torch.randn(2)", &path)),
                       "has no attribute 'NoSuchLayer'");
}

TEST(LoweringOnnx, LinearFp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("linear", "m = torch.nn.Linear(300, 130)\nx = torch.randn(200, 300)", &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringOnnx, MlpGeluBf16) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("mlp_gelu",
                   "m = torch.nn.Sequential(torch.nn.Linear(96, 200), torch.nn.GELU(),\n"
                   "                        torch.nn.Linear(200, 70))\nx = torch.randn(3, 50, 96)",
                   &path));
  check_graph(frontend::import_onnx_file(path), Precision::bf16, 1e-2, 2e-3);
}

// torch LayerNorm (fused to trn.LayerNorm by fuse_patterns), then softmax.
TEST(LoweringOnnx, LayerNormSoftmaxFp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_model(
      "ln_softmax",
      "m = torch.nn.Sequential(torch.nn.LayerNorm(96), torch.nn.Softmax(-1))\n"
      "with torch.no_grad():\n  m[0].weight.uniform_(0.5, 1.5); m[0].bias.uniform_(-1, 1)\n"
      "x = torch.randn(3, 50, 96)",
      &path));
  ir::Graph g = frontend::import_onnx_file(path);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// An elementwise chain with a broadcast parameter (fused into trn.Elementwise):
// x [4,33,150] -> 132 rows = 128 + 4.
TEST(LoweringOnnx, ElementwiseChainFp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("eltwise",
                   "class M(torch.nn.Module):\n"
                   "  def __init__(s):\n"
                   "    super().__init__(); s.w = torch.nn.Parameter(torch.randn(150))\n"
                   "  def forward(s, x):\n"
                   "    return (torch.nn.functional.silu(x * s.w + 0.5) - torch.tanh(x).abs() / 2\n"
                   "            + torch.maximum(x, -x * 0.25) * torch.sigmoid(-x))\n"
                   "m = M()\nx = torch.randn(4, 33, 150)",
                   &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-5);
}

TEST(LoweringOnnx, MlpReluFp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("mlp_relu",
                   "m = torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.ReLU(),\n"
                   "                        torch.nn.Linear(300, 10))\nx = torch.randn(130, 64)",
                   &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-5);
}

// The command line: `trnsim run MODEL.onnx` prints the report and writes the
// outputs; `trnsim compile` writes a .tbin that `trnsim run` gives the same result.
TEST(LoweringCli, RunAndCompileOnnx) {
  std::string model;
  TRNSIM_REQUIRE_PYTHON(
      export_model("mlp_cli",
                   "m = torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.ReLU(),\n"
                   "                        torch.nn.Linear(300, 10))\nx = torch.randn(130, 64)",
                   &model));
  const fs::path dir = fs::path(TRNSIM_BINARY_DIR) / "lowering_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trnsim = std::string(TRNSIM_BINARY_DIR) + "/runtime/trnsim";
  const Tensor x = random_tensor({130, 64}, 5);
  runtime::write_npy((dir / "x.npy").string(),
                     runtime::HostTensor::from_float({130, 64}, isa::DType::fp32, x.floats()));
  const std::string in = " --input x=" + (dir / "x.npy").string();
  const std::string log = (dir / "run.log").string();
  ASSERT_EQ(std::system((trnsim + " run " + model + " -c tiny --precision fp32 --output-dir " +
                         (dir / "D").string() + in + " > " + log + " 2>&1")
                            .c_str()),
            0);
  std::ifstream ls(log);
  const std::string text((std::istreambuf_iterator<char>(ls)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("simulated time"), std::string::npos) << text;
  EXPECT_NE(text.find("wrote " + (dir / "D" / "y.npy").string()), std::string::npos) << text;
  const std::vector<float> got = runtime::read_npy((dir / "D" / "y.npy").string()).to_float();

  ir::Graph g = frontend::import_onnx_file(model);
  const Tensor want = interp::run(g, {{"x", x}}).at("y");
  ASSERT_EQ(got.size(), want.floats().size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.floats()[i], 1e-4 + 1e-4 * std::fabs(want.floats()[i])) << i;

  // compile -> .tbin -> run: the same numbers.
  const std::string tbin = (dir / "mlp.tbin").string();
  ASSERT_EQ(std::system((trnsim + " compile " + model + " -c tiny --precision fp32 -o " + tbin +
                         " > /dev/null 2>&1")
                            .c_str()),
            0);
  ASSERT_EQ(std::system((trnsim + " run " + tbin + " -c tiny --output-dir " + (dir / "E").string() +
                         in + " > /dev/null 2>&1")
                            .c_str()),
            0);
  EXPECT_EQ(runtime::read_npy((dir / "E" / "y.npy").string()).to_float(), got);
  // --print-after dumps the graph IR after a graph pass.
  ASSERT_EQ(std::system((trnsim + " compile " + model + " -c tiny -o " + tbin +
                         " --print-after fuse_epilogue > " + log + " 2>&1")
                            .c_str()),
            0);
  std::ifstream ds(log);
  const std::string dump((std::istreambuf_iterator<char>(ds)), std::istreambuf_iterator<char>());
  EXPECT_NE(dump.find("# IR after fuse_epilogue"), std::string::npos) << dump;
  EXPECT_NE(dump.find("trn.MatMulEpilogue"), std::string::npos) << dump;
  // A bad precision is an error naming the option.
  EXPECT_NE(std::system((trnsim + " compile " + model + " -c tiny --precision fp16 -o " + tbin +
                         " > " + log + " 2>&1")
                            .c_str()),
            0);
  std::ifstream es(log);
  const std::string err((std::istreambuf_iterator<char>(es)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("--precision: 'fp16'"), std::string::npos) << err;
}

}  // namespace
}  // namespace trnsim::e2e
