// Data-movement lowerings (compiler/lower/movement.cpp) and non-float values at the
// program boundary: each graph is compiled for `tiny`, simulated and compared with
// the reference interpreter (lowering_check.h). Shapes avoid multiples of 128 so
// partition tiles and vocab tiles have tails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"
#include "tests/runtime/cli_harness.h"

namespace trnsim::e2e {
namespace {

using ir::Attribute;
using ir::Value;
using Attrs = std::map<std::string, Attribute>;
using I = std::vector<int64_t>;

Value* node(ir::Graph& g, const std::string& op, std::vector<Value*> in, Attrs a = {}) {
  return ir::make_node(g, op, std::move(in), std::move(a))->outputs[0];
}

// Expects compiling `g` to throw UnsupportedError mentioning every one of `parts`.
void expect_refused(ir::Graph g, const std::vector<std::string>& parts) {
  SCOPED_TRACE("expecting a refusal naming: " + parts.back());
  compiler::CompileOnnxOptions o;
  o.target = runtime::target_from_config(platform::load_config("tiny"));
  try {
    compiler::compile_graph(std::move(g), o);
    FAIL() << "expected UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// Concat on each axis of [3,130,20]-like inputs; one input is a constant.
ir::Graph concat_graph() {
  ir::Graph g;
  Value* a = g.add_input("A", {ElemType::fp32, {3, 130, 20}});
  Value* b = g.add_input("B", {ElemType::fp32, {3, 130, 7}});
  Value* c = g.add_input("C", {ElemType::fp32, {3, 5, 20}});
  Value* k = g.add_constant("K", random_tensor({2, 130, 20}, 9));
  g.add_output(node(g, "Concat", {a, b, a}, {{"axis", int64_t{2}}}));
  g.add_output(node(g, "Concat", {c, a, c}, {{"axis", int64_t{1}}}));
  g.add_output(node(g, "Concat", {a, k}, {{"axis", int64_t{0}}}));
  return g;
}

TEST(LoweringMovement, ConcatEveryAxisFp32) {
  check_graph(concat_graph(), Precision::fp32, 0, 0);  // a copy is exact
}

TEST(LoweringMovement, ConcatEveryAxisBf16) {
  check_graph(concat_graph(), Precision::bf16, 0, 0);  // no matmul: still fp32 copies
}

// Split [5,200,33] on axis 1 into 100+60+40 and on axis 2 into 11+22; the pieces
// feed an Add so they are also read back as scratch tensors.
TEST(LoweringMovement, SplitFp32) {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {5, 200, 33}});
  ir::Node* s1 =
      ir::make_node(g, "Split", {x}, {{"axis", int64_t{1}}, {"split", I{100, 60, 40}}}, "s1", 3);
  ir::Node* s2 =
      ir::make_node(g, "Split", {x}, {{"axis", int64_t{2}}, {"split", I{11, 22}}}, "s2", 2);
  for (Value* o : s1->outputs) g.add_output(o);
  g.add_output(s2->outputs[0]);
  g.add_output(node(g, "Add", {s2->outputs[1], s2->outputs[1]}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// Slices: positive steps with clamped ends, negative steps (reversal, one DMA per
// index), several axes at once, and a negative start.
ir::Graph slice_graph() {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {4, 150, 37}});
  auto slice = [&](I starts, I ends, I axes, I steps) {
    g.add_output(node(g, "Slice", {x},
                      {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}));
  };
  slice({1, 3}, {3, 1000}, {0, 1}, {1, 2});               // [2, 74, 37]
  slice({-1}, {-1000}, {2}, {-1});                        // [4,150,37] reversed on axis 2
  slice({140, 30}, {5, 2}, {1, 2}, {-3, -5});             // [4,45,6] negative steps on two axes
  slice({0, 10, 1}, {4, 139, 36}, {0, 1, 2}, {3, 1, 7});  // [2,129,5]
  return g;
}

TEST(LoweringMovement, SliceStepsFp32) {
  check_graph(slice_graph(), Precision::fp32, 0, 0);
}

TEST(LoweringMovement, SliceStepsBf16) {
  check_graph(slice_graph(), Precision::bf16, 0, 0);
}

// Pad: constant (any value; a negative pad crops), edge and reflect, on [3,130,9].
ir::Graph pad_graph() {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {3, 130, 9}});
  g.add_output(node(g, "Pad", {x}, {{"pads", I{1, 0, 2, 0, 3, 5}}, {"value", 1.5f}}));
  g.add_output(node(g, "Pad", {x}, {{"pads", I{0, -2, 1, 2, 1, -3}}, {"value", -4.0f}}));
  g.add_output(node(g, "Pad", {x}, {{"pads", I{0, 2, 3, 1, 0, 4}}, {"mode", "edge"}}));
  g.add_output(node(g, "Pad", {x}, {{"pads", I{2, 1, 8, 0, 3, 8}}, {"mode", "reflect"}}));
  return g;
}

TEST(LoweringMovement, PadModesFp32) {
  check_graph(pad_graph(), Precision::fp32, 0, 0);
}

TEST(LoweringMovement, PadModesBf16) {
  check_graph(pad_graph(), Precision::bf16, 0, 0);
}

// Expand (stride-0 views) and Tile. The rank-10 Expand alternates broadcast and
// real axes, which no 4-free-dim access pattern holds: it is split along its outer
// axes into 3*2*3*2*3 = 108 DMAs. The rank-6 Pad's fill regions split alike.
TEST(LoweringMovement, ExpandAndTileFp32) {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {1, 130, 1}});
  Value* r = g.add_input("R", {ElemType::fp32, {40}});
  Value* t = g.add_input("T", {ElemType::fp32, {3, 50}});
  Value* h = g.add_input("H", {ElemType::fp32, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2}});
  Value* p = g.add_input("P", {ElemType::fp32, {2, 3, 2, 3, 2, 3}});
  g.add_output(node(g, "Expand", {x}, {{"shape", I{3, 130, 40}}}));
  g.add_output(node(g, "Expand", {r}, {{"shape", I{2, 5, 40}}}));
  g.add_output(node(g, "Tile", {t}, {{"repeats", I{2, 3}}}));
  g.add_output(node(g, "Expand", {h}, {{"shape", I{3, 2, 3, 2, 3, 2, 3, 2, 3, 2}}}));
  g.add_output(
      node(g, "Pad", {p}, {{"pads", I{1, 0, 1, 0, 1, 2, 0, 1, 0, 1, 0, 1}}, {"value", 2.0f}}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// Embedding lookup: a constant table [300,70] (three vocab tiles, 44 rows in the
// last) indexed by run-time int64 indices [2,150] (two token tiles), some negative.
// The Clip proves the indices in range, so the Gather may run on the device (the
// device cannot check an index; unproven ones go to the host).
ir::Graph embedding_graph() {
  ir::Graph g;
  Value* idx = g.add_input("idx", {ElemType::int64, {2, 150}});
  Value* table = g.add_constant("table", random_tensor({300, 70}, 3));
  Value* safe = node(g, "Clip", {idx}, {{"min", Attribute(-300.0f)}, {"max", Attribute(299.0f)}});
  g.add_output(node(g, "Gather", {table, safe}, {{"axis", int64_t{0}}}));
  return g;
}

interp::TensorMap embedding_indices() {
  std::vector<int64_t> v(300);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7919) % 600) - 300;
  return {{"idx", Tensor::from_ints({2, 150}, v)}};
}

// One-hot rows times the table in fp32: exact.
TEST(LoweringMovement, GatherRuntimeIndicesFp32) {
  check_graph(embedding_graph(), Precision::fp32, 0, 0, embedding_indices());
}

TEST(LoweringMovement, GatherRuntimeIndicesBf16) {
  check_graph(embedding_graph(), Precision::bf16, 0, 0, embedding_indices());
}

// Constant indices on any axis become DMA views (runs of consecutive or repeated
// indices), including a scalar index that drops the axis.
TEST(LoweringMovement, GatherConstantIndicesFp32) {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {4, 130, 9}});
  Value* i1 = g.add_constant("i1", Tensor::from_ints({2, 3}, {5, 6, 7, 7, 7, -1}));
  Value* i2 = g.add_constant("i2", Tensor::from_ints({}, {-2}));
  Value* i0 = g.add_constant("i0", Tensor::from_ints({3}, {3, 0, 1}));
  g.add_output(node(g, "Gather", {x, i1}, {{"axis", int64_t{1}}}));
  g.add_output(node(g, "Gather", {x, i2}, {{"axis", int64_t{2}}}));
  g.add_output(node(g, "Gather", {x, i0}, {{"axis", int64_t{0}}}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// Cast: float -> int64 truncates toward zero (halves, negatives, values beyond
// 2^23 and NaN -> 0), float -> bool is != 0, int64/bool -> float keep the value,
// fp32 -> bf16 rounds (bf16 values stay bf16 in HBM).
TEST(LoweringMovement, CastFloatIntBool) {
  ir::Graph g;
  Value* x = g.add_input("X", {ElemType::fp32, {130, 12}});
  Value* n = g.add_input("N", {ElemType::int64, {130, 12}});
  Value* b = g.add_input("B", {ElemType::boolean, {130, 12}});
  g.add_output(node(g, "Cast", {x}, {{"to", "int64"}}));
  g.add_output(node(g, "Cast", {x}, {{"to", "bool"}}));
  g.add_output(node(g, "Cast", {x}, {{"to", "bf16"}}));  // a DMA rounding to nearest even
  g.add_output(node(g, "Cast", {n}, {{"to", "fp32"}}));
  g.add_output(node(g, "Cast", {n}, {{"to", "bool"}}));
  Value* bf = node(g, "Cast", {b}, {{"to", "fp32"}});
  g.add_output(node(g, "Add", {bf, node(g, "Cast", {n}, {{"to", "fp32"}})}));
  std::vector<float> xv(130 * 12);
  const float special[] = {2.5f,  -2.5f, 3.5f,      -0.5f,      0.0f,        -0.0f,
                           1e10f, -1e9f, 8388609.f, 16777215.f, 0.99999994f, -7.0f};
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = i < 12 ? special[i] : static_cast<float>(static_cast<int>(i * 37 % 401) - 200) / 8.0f;
  xv[12] = std::nanf("");
  std::vector<int64_t> nv(130 * 12);
  for (size_t i = 0; i < nv.size(); ++i) nv[i] = static_cast<int64_t>(i % 9) - 4;
  check_graph(std::move(g), Precision::fp32, 0, 0,
              {{"X", Tensor::from_floats({130, 12}, xv)}, {"N", Tensor::from_ints({130, 12}, nv)}});
}

TEST(LoweringMovement, RefusalsNameWhatIsUnsupported) {
  {  // run-time indices on another axis: no indirect DMA
    ir::Graph g;
    Value* x = g.add_input("X", {ElemType::fp32, {4, 9}});
    Value* i = g.add_input("I", {ElemType::int64, {3}});
    g.add_output(node(g, "Gather", {x, i}, {{"axis", int64_t{1}}}));
    expect_refused(std::move(g), {"Gather", "axis 0 only"});
  }
  {  // run-time indices not provably in range: the device could not check them
    ir::Graph g;
    Value* t = g.add_constant("T", random_tensor({10, 4}, 5));
    Value* i = g.add_input("I", {ElemType::int64, {3}});
    Value* c = node(g, "Clip", {i}, {{"min", Attribute(-10.0f)}, {"max", Attribute(10.0f)}});
    g.add_output(node(g, "Gather", {t, c}, {{"axis", int64_t{0}}}));
    expect_refused(std::move(g), {"Gather", "not provably in [-10, 9]"});
  }
  {  // constant indices out of range: refused naming the index (the host refuses too)
    ir::Graph g;
    Value* x = g.add_input("X", {ElemType::fp32, {4, 9}});
    Value* i = g.add_constant("I", Tensor::from_ints({2}, {1, -10}));
    g.add_output(node(g, "Gather", {x, i}, {{"axis", int64_t{1}}}));
    expect_refused(std::move(g), {"Gather", "index -10 is out of range for axis 1 of size 9"});
  }
  {  // reversing both axes of [64,64]: 4096 single-element DMAs
    ir::Graph g;
    Value* x = g.add_input("X", {ElemType::fp32, {64, 64}});
    g.add_output(node(g, "Slice", {x},
                      {{"starts", I{-1, -1}},
                       {"ends", I{-1000, -1000}},
                       {"axes", I{0, 1}},
                       {"steps", I{-1, -1}}}));
    expect_refused(std::move(g), {"Slice", "more than 1024 DMAs"});
  }
  {  // narrowing casts would need wrap-around
    ir::Graph g;
    Value* x = g.add_input("X", {ElemType::fp32, {4, 9}});
    g.add_output(node(g, "Cast", {x}, {{"to", "uint8"}}));
    expect_refused(std::move(g), {"Cast to uint8"});
  }
  {  // integer division truncates; a float Div would not
    ir::Graph g;
    Value* a = g.add_input("A", {ElemType::int64, {4, 9}});
    Value* b = g.add_input("B", {ElemType::int64, {4, 9}});
    g.add_output(node(g, "Div", {a, b}));
    expect_refused(std::move(g), {"integer Div"});
  }
  {  // fp8 values have no HBM representation
    ir::Graph g;
    Value* x = g.add_input("X", {ElemType::fp8e4m3, {4, 9}});
    g.add_output(node(g, "Relu", {x}));
    expect_refused(std::move(g), {"'X' is fp8", "only fp32, bf16, fp16, integer and bool"});
  }
}

// `trnsim run MODEL.onnx` with an int64 .npy input: int64 and bool outputs come
// back as int64 and bool .npy files (the model and check use python's onnx/numpy).
TEST(LoweringMovementCli, Int64InputBoolOutputRoundTrip) {
  const auto dir = test::temp_dir("movement_cli");
  const std::string script =
      test::write_text(dir / "make.py", test::python_require({"numpy", "onnx"}) + R"(
import sys
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
table = np.arange(40 * 6, dtype=np.float32).reshape(40, 6) / 8
g = helper.make_graph(
  [helper.make_node('Gather', ['table', 'idx'], ['emb'], axis=0),
   helper.make_node('Cast', ['idx'], ['nz'], to=TensorProto.BOOL),
   helper.make_node('Cast', ['emb'], ['q'], to=TensorProto.INT64)],
  'g', [helper.make_tensor_value_info('idx', TensorProto.INT64, [3, 5])],
  [helper.make_tensor_value_info('emb', TensorProto.FLOAT, [3, 5, 6]),
   helper.make_tensor_value_info('nz', TensorProto.BOOL, [3, 5]),
   helper.make_tensor_value_info('q', TensorProto.INT64, [3, 5, 6])],
  [numpy_helper.from_array(table, 'table')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), d + '/m.onnx')
idx = (np.arange(15, dtype=np.int64).reshape(3, 5) * 7) % 40 - 3
np.save(d + '/idx.npy', idx)
)");
  const std::string check = test::write_text(dir / "check.py", R"(
import sys, numpy as np
d = sys.argv[1]
idx = np.load(d + '/idx.npy')
table = np.arange(40 * 6, dtype=np.float32).reshape(40, 6) / 8
emb, nz, q = (np.load(d + '/out/' + n + '.npy') for n in ('emb', 'nz', 'q'))
assert nz.dtype == np.bool_ and nz.shape == (3, 5), (nz.dtype, nz.shape)
assert q.dtype == np.int64 and q.shape == (3, 5, 6), (q.dtype, q.shape)
assert emb.dtype == np.float32
assert (emb == table[idx]).all()
assert (nz == (idx != 0)).all()
assert (q == np.trunc(table[idx]).astype(np.int64)).all()
print('round trip ok')
)");
  TRNSIM_REQUIRE_PYTHON(test::run_python(script + " " + dir.string()));
  const test::CmdResult r = test::run_cmd(test::trnsim_bin() + " run " + (dir / "m.onnx").string() +
                                          " -c tiny --input idx=" + (dir / "idx.npy").string() +
                                          " --output-dir " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const test::CmdResult ck = test::run_cmd("/usr/bin/python3 " + check + " " + dir.string());
  EXPECT_EQ(ck.code, 0) << ck.out;
  EXPECT_NE(ck.out.find("round trip ok"), std::string::npos) << ck.out;

  // Random integer inputs are in range for a 40-row table; an index beyond 2^24
  // cannot be held exactly by the device's fp32 and is refused at the boundary.
  const test::CmdResult rr = test::run_cmd(
      test::trnsim_bin() + " run " + (dir / "m.onnx").string() + " -c tiny --random-inputs=3");
  EXPECT_EQ(rr.code, 0) << rr.out;
  const test::CmdResult big = test::run_cmd(
      "/usr/bin/python3 -c \"import numpy as np; np.save('" + (dir / "big.npy").string() +
      "', np.full((3, 5), 1 << 30, dtype=np.int64))\" && " + test::trnsim_bin() + " run " +
      (dir / "m.onnx").string() + " -c tiny --input idx=" + (dir / "big.npy").string());
  EXPECT_NE(big.code, 0) << big.out;
  EXPECT_NE(big.out.find("beyond 2^24"), std::string::npos) << big.out;

  // A float .npy for the int64 input must hold whole numbers: NaN or 2.7 is an
  // error naming the input and the file (not truncated to 2, nor NaN sent on).
  for (const char* bad : {"np.nan", "2.7"}) {
    const std::string f = (dir / "frac.npy").string();
    const test::CmdResult fr =
        test::run_cmd("/usr/bin/python3 -c \"import numpy as np; a = np.zeros((3, 5)); a[1, 2] = " +
                      std::string(bad) + "; np.save('" + f + "', a)\" && " + test::trnsim_bin() +
                      " run " + (dir / "m.onnx").string() + " -c tiny --input idx=" + f);
    EXPECT_NE(fr.code, 0) << fr.out;
    EXPECT_NE(fr.out.find(f), std::string::npos) << fr.out;
    EXPECT_NE(fr.out.find("input 'idx'"), std::string::npos) << fr.out;
    EXPECT_NE(fr.out.find("not a whole number"), std::string::npos) << fr.out;
  }
}

}  // namespace
}  // namespace trnsim::e2e
