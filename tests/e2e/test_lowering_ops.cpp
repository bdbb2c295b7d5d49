// Lowering of the remaining elementwise ops (activations, Clip, Pow, rounding,
// comparisons, logic, Where) and of row-wise ops on any axis (reductions over any
// axes, Softmax/LogSoftmax on a non-last axis, rows longer than SBUF holds), run on
// the simulated `tiny` chip against the reference interpreter. One Device per test
// process.
//
// check_ops is check_graph (lowering_check.h) plus chosen input values (ties, large
// magnitudes, inf/NaN) and a check that the compiled graph has the expected op; both
// compare with expect_close (NaN and inf exactly).
// The *MatchSpec tests instead compare with the ops' definitions computed in the test
// (reference.h), independent of the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/lower/lower.h"
#include "tests/e2e/lowering_check.h"
#include "tests/e2e/reference.h"

namespace trnsim::e2e {
namespace {

using ir::Attribute;
using ir::Graph;
using ir::Node;
using ir::Value;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Check {
  Precision p = Precision::fp32;
  double rtol = 1e-4, atol = 1e-6;
  std::map<std::string, Tensor> inputs;                   // the rest are random in [-1, 1]
  std::map<std::string, std::pair<float, float>> ranges;  // random in [lo, hi]
  std::string expect_op;  // an op the compiled graph must contain (e.g. trn.Elementwise)
};

void check_ops(Graph g, const Check& ck) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = ck.p;
  o.target = runtime::target_from_config(cfg);
  interp::TensorMap inputs;
  uint32_t seed = 1;
  for (const Value* v : g.inputs()) {
    if (auto it = ck.inputs.find(v->name); it != ck.inputs.end()) {
      inputs[v->name] = it->second;
    } else if (auto r = ck.ranges.find(v->name); r != ck.ranges.end()) {
      inputs[v->name] = random_tensor(v->shape(), seed++, r->second.first, r->second.second);
    } else {
      inputs[v->name] = random_tensor(v->shape(), seed++);
    }
  }
  const ir::Graph original = g.clone();
  const interp::TensorMap want = reference_outputs(original, inputs, ck.p);
  compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  if (!ck.expect_op.empty()) {
    bool found = false;
    for (const auto& np : r.graph.nodes()) found |= np->op == ck.expect_op;
    EXPECT_TRUE(found) << "compiled graph has no " << ck.expect_op;
  }
  expect_outputs_close(original, want, run_on_tiny(cfg, r.program, inputs), ck.rtol, ck.atol);
}

Value* node(Graph& g, const std::string& op, std::vector<Value*> ins,
            std::map<std::string, Attribute> attrs = {}) {
  return ir::make_node(g, op, std::move(ins), std::move(attrs))->outputs[0];
}

Value* scalar_const(Graph& g, const std::string& name, float v) {
  return g.add_constant(name, Tensor::from_floats({}, {v}));
}

// Values that exercise rounding: quarter steps through +-20 (ties at .5), values
// near and beyond 2^23, signed zeros and the specials.
Tensor rounding_values(const ir::Shape& shape) {
  std::vector<float> v(static_cast<size_t>(ir::num_elements(shape)));
  const float extra[] = {0.0f,       -0.0f,       0.49999997f, -0.49999997f, 0.5f,
                         -0.5f,      1.5f,        -1.5f,       2.5f,         -2.5f,
                         8388607.5f, -8388607.5f, 8388608.f,   -8388608.f,   8388609.f,
                         -8388609.f, 4194303.5f,  -4194304.5f, 1e10f,        -1e10f,
                         1e-40f,     -1e-40f,     kInf,        -kInf,        kNaN};
  const size_t ne = sizeof(extra) / sizeof(extra[0]);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = i < ne ? extra[i] : static_cast<float>(static_cast<int64_t>(i % 161) - 80) * 0.25f;
  return Tensor::from_floats(shape, v);
}

// ---- Elementwise ----------------------------------------------------------

// [3, 50, 70]: 150 rows (128 + 22) of 70 columns.
const ir::Shape kShape = {3, 50, 70};

// Activations built from several instructions, each its own output (so not fused).
// Inputs in [-6, 6] cover HardSigmoid/HardSwish's clamps.
TEST(LoweringOps, ActivationsFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  g.add_output(node(g, "LeakyRelu", {x}, {{"alpha", Attribute(0.1f)}}));
  g.add_output(
      node(g, "HardSigmoid", {x}, {{"alpha", Attribute(0.3f)}, {"beta", Attribute(0.4f)}}));
  g.add_output(node(g, "HardSwish", {x}));
  g.add_output(node(g, "Softsign", {x}));
  g.add_output(node(g, "Clip", {x}, {{"min", Attribute(-2.5f)}, {"max", Attribute(3.0f)}}));
  g.add_output(node(g, "Clip", {x}, {{"min", Attribute(-1.0f)}}));  // max missing: +inf
  g.add_output(node(g, "ThresholdedRelu", {x}, {{"alpha", Attribute(0.5f)}}));
  Check ck;
  ck.ranges["x"] = {-6, 6};
  // HardSigmoid/HardSwish round a*x and x/6 before adding b (the reference rounds
  // once): an absolute error up to ~|x| * 2^-24 where the sum cancels.
  ck.atol = 1e-6;
  check_ops(std::move(g), ck);
}

// Clip with min > max is max everywhere (numpy's minimum(maximum(x, lo), hi), as
// torch): alone, and fused after an Add (trn.Elementwise). Checked against the value
// itself, not only the interpreter.
TEST(LoweringOps, ClipMinAboveMaxGivesMax) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  g.add_output(node(g, "Clip", {x}, {{"min", Attribute(2.0f)}, {"max", Attribute(1.0f)}}));
  Value* s = node(g, "Add", {x, scalar_const(g, "k", 0.5f)});
  g.add_output(node(g, "Clip", {s}, {{"min", Attribute(0.5f)}, {"max", Attribute(-3.0f)}}));
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  const Tensor xv = random_tensor(kShape, 4, -6, 6);
  compiler::CompileOnnxResult r = compiler::compile_graph(g.clone(), o);
  runtime::Device dev(cfg);
  runtime::Launch l{&r.program, {}, 0};
  l.inputs["x"] = runtime::HostTensor::from_float(kShape, isa::DType::fp32, xv.floats());
  runtime::RunReport rep = dev.run({l});
  const float want[] = {1.0f, -3.0f};
  ASSERT_EQ(r.graph.outputs().size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const auto& got = rep.launches.at(0).outputs.at(r.graph.outputs()[k]->name).to_float();
    ASSERT_EQ(got.size(), static_cast<size_t>(xv.numel()));
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[k]) << "output " << k << " at " << i;
  }
  const interp::TensorMap ref = interp::run(g, {{"x", xv}});
  for (size_t k = 0; k < 2; ++k)
    for (float v : ref.at(g.outputs()[k]->name).floats()) ASSERT_EQ(v, want[k]) << "interpreter";
}

// Elu, Selu, Celu: expm1 via tanh, a few ulp; inputs in [-20, 5] reach the
// saturated tail; tiny |x| (where exp(x) - 1 would cancel) must stay relative.
TEST(LoweringOps, ExpFamilyFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  Value* t = g.add_input("t", {ElemType::fp32, kShape});  // tiny values
  g.add_output(node(g, "Elu", {x}, {{"alpha", Attribute(0.7f)}}));
  g.add_output(node(g, "Selu", {x}));
  g.add_output(node(g, "Celu", {x}, {{"alpha", Attribute(1.5f)}}));
  g.add_output(node(g, "Elu", {t}));
  Check ck;
  ck.ranges["x"] = {-20, 5};
  ck.ranges["t"] = {-1e-4f, 1e-4f};
  ck.atol = 0;  // relative error only, even near 0
  ck.rtol = 2e-6;
  check_ops(std::move(g), ck);
}

// PRelu with a per-channel slope [50, 1] (broadcast over the batch: rows 50..99
// read slope rows 0..49 again, not at a DMA partition boundary -> the slope is
// expanded in HBM) and with a row slope [70].
TEST(LoweringOps, PReluBroadcastFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  Value* s1 = g.add_constant("s1", random_tensor({50, 1}, 11, 0, 0.5f));
  Value* s2 = g.add_constant("s2", random_tensor({70}, 12, 0, 0.5f));
  g.add_output(node(g, "PRelu", {x, s1}));
  g.add_output(node(g, "PRelu", {x, s2}));
  check_ops(std::move(g), {});
}

// Broadcasts whose runs of rows do not start at DMA partition boundaries ([2,1,8]
// to [2,70,8]: row 70 starts a new run; [2,1,1]: a column, same runs): expanded
// once into an HBM scratch tensor, then loaded like full operands.
TEST(LoweringOps, BroadcastExpandedInHbmFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {2, 70, 8}});
  Value* m = g.add_input("m", {ElemType::fp32, {2, 1, 8}});
  Value* z = g.add_input("z", {ElemType::fp32, {2, 1, 1}});
  g.add_output(node(g, "Add", {x, m}));
  g.add_output(node(g, "Sub", {z, x}));
  check_ops(std::move(g), {});
}

// Pow with constant exponents 2, -1 (specialised), 3, 0.5 and a tensor exponent.
// Negative bases: x^3 stays negative, x^0.5 is NaN as in the reference.
TEST(LoweringOps, PowFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  Value* e = g.add_input("e", {ElemType::fp32, {70}});
  for (float k : {2.0f, -1.0f, 3.0f, 0.5f})
    g.add_output(node(g, "Pow", {x, scalar_const(g, "k" + std::to_string(g.outputs().size()), k)}));
  Value* ax = node(g, "Abs", {x});
  g.add_output(node(g, "Pow", {ax, e}));
  Check ck;
  ck.ranges["x"] = {-3, 3};
  ck.ranges["e"] = {-2, 2};
  ck.rtol = 2e-6;  // powf vs the reference's double pow: within an ulp or two
  check_ops(std::move(g), ck);
}

// Floor, Ceil, Round, Sign: exact, through ties, +-0, 2^22..2^23+, inf and NaN.
TEST(LoweringOps, RoundingExact) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  for (const char* op : {"Floor", "Ceil", "Round", "Sign"}) g.add_output(node(g, op, {x}));
  Check ck;
  ck.inputs["x"] = rounding_values(kShape);
  ck.rtol = 0;
  ck.atol = 0;
  check_ops(std::move(g), ck);
}

// Variadic Sum/Mean/Max/Min over three operands (one a row, one a scalar constant).
TEST(LoweringOps, VariadicFp32) {
  Graph g;
  Value* a = g.add_input("a", {ElemType::fp32, kShape});
  Value* b = g.add_input("b", {ElemType::fp32, {70}});
  Value* k = scalar_const(g, "k", 0.25f);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) g.add_output(node(g, op, {a, b, k}));
  check_ops(std::move(g), {});
}

// New ops fuse into one trn.Elementwise (fuse_elementwise) and run as one kernel:
// Clip(LeakyRelu(x * 4) ^ 2, max = 9) + Floor(x * 4).
TEST(LoweringOps, FusedChainFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  Value* s = node(g, "Mul", {x, scalar_const(g, "four", 4.0f)});
  Value* l = node(g, "LeakyRelu", {s}, {{"alpha", Attribute(0.2f)}});
  Value* p = node(g, "Pow", {l, scalar_const(g, "two", 2.0f)});
  Value* c = node(g, "Clip", {p}, {{"max", Attribute(9.0f)}});
  Value* f = node(g, "Floor", {s});
  g.add_output(node(g, "Add", {c, f}));
  Check ck;
  ck.expect_op = "trn.Elementwise";
  check_ops(std::move(g), ck);
}

// The same steps in a matmul epilogue (applied while PSUM is evacuated; their
// temporaries come from a pool made on demand in the matmul's kernel).
TEST(LoweringOps, MatMulEpilogueStepsFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {70, 40}});
  Value* w = g.add_constant("w", random_tensor({40, 50}, 5, -0.3f, 0.3f));
  Value* y = node(g, "MatMul", {x, w});
  y = node(g, "Elu", {y});
  y = node(g, "HardSwish", {y});
  g.add_output(node(g, "Softsign", {node(g, "Mul", {y, scalar_const(g, "eight", 8.0f)})}));
  Check ck;
  ck.expect_op = "trn.MatMulEpilogue";
  ck.atol = 1e-5;
  check_ops(std::move(g), ck);
}

// bf16 autocast does not touch these ops (they run in fp32 on chip); the check is
// against the interpreter emulating the same precision.
TEST(LoweringOps, ActivationsBf16) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {130, 33}});
  g.add_output(node(g, "Elu", {x}));
  g.add_output(node(g, "HardSwish", {x}));
  g.add_output(node(g, "LeakyRelu", {x}));
  g.add_output(node(g, "Floor", {x}));
  Check ck;
  ck.p = Precision::bf16;
  ck.ranges["x"] = {-5, 5};
  ck.rtol = 1e-2;
  ck.atol = 1e-3;
  check_ops(std::move(g), ck);
}

// ---- Comparisons, logic, Where (bool values are fp32 0/1 on the device) ----

// Where picks between branches that hold inf/NaN where not selected:
// Where(x > 0, log(x), x * 1/0-ish) -- log of x <= 0 is NaN/-inf but not taken.
TEST(LoweringOps, WhereMasksNaNAndInf) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, kShape});
  Value* y = g.add_input("y", {ElemType::fp32, kShape});
  Value* pos = node(g, "Greater", {x, scalar_const(g, "zero", 0.0f)});
  Value* lg = node(g, "Log", {x});                         // NaN for x < 0
  Value* inv = node(g, "Div", {y, node(g, "Relu", {x})});  // inf/NaN for x <= 0
  g.add_output(node(g, "Where", {pos, lg, y}));
  g.add_output(node(g, "Where", {node(g, "Not", {pos}), y, inv}));
  check_ops(std::move(g), {});
}

TEST(LoweringOps, ComparisonsAndLogic) {
  Graph g;
  Value* a = g.add_input("a", {ElemType::fp32, kShape});
  Value* b = g.add_input("b", {ElemType::fp32, {70}});
  Value* fa = node(g, "Floor", {node(g, "Mul", {a, scalar_const(g, "three", 3.0f)})});
  Value* fb = node(g, "Floor", {node(g, "Mul", {b, scalar_const(g, "three2", 3.0f)})});
  Value* lt = node(g, "Less", {fa, fb});
  Value* eq = node(g, "Equal", {fa, fb});
  Value* gt = node(g, "Greater", {fa, fb});
  Value* le = node(g, "LessOrEqual", {fa, fb});
  Value* ge = node(g, "GreaterOrEqual", {fa, fb});
  Value *one = scalar_const(g, "one", 1.0f), *zero = scalar_const(g, "zero", 0.0f);
  for (Value* v : {node(g, "And", {lt, le}), node(g, "Or", {eq, gt}), node(g, "Xor", {ge, le}),
                   node(g, "Not", {eq})})
    g.add_output(node(g, "Where", {v, one, zero}));
  check_ops(std::move(g), {});
}

// ---- Row-wise on any axis ---------------------------------------------------

// Reductions: axis 0 (strided rows), a middle axis, several axes, all axes, with
// keepdims 0 and 1.
TEST(LoweringOps, ReduceAnyAxesFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {6, 45, 35}});
  auto red = [&](const char* op, std::vector<int64_t> axes, int64_t keep) {
    g.add_output(node(g, op, {x}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(keep)}}));
  };
  red("ReduceSum", {0}, 0);
  red("ReduceMean", {1}, 1);
  red("ReduceMax", {0, 2}, 0);
  red("ReduceMin", {1, 2}, 1);
  red("ReduceSum", {}, 0);  // all axes
  red("ReduceMean", {-1}, 0);
  Check ck;
  ck.atol = 1e-5;  // sums of +-1 values cancel
  check_ops(std::move(g), ck);
}

// Reductions over leading axes (a linear layer's bias gradient sums over the batch)
// go through tensor-engine transposes: read directly as [kept, reduced] rows, every
// element would be a DMA descriptor of its own (partition stride 1).
TEST(LoweringOps, ReduceOverLeadingAxesTransposesOnTheTensorEngine) {
  auto graph = [] {
    Graph g;
    Value* x = g.add_input("x", {ElemType::fp32, {4, 64, 96}});
    auto red = [&](const char* op, std::vector<int64_t> axes, int64_t keep) {
      g.add_output(node(g, op, {x}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(keep)}}));
    };
    red("ReduceSum", {0, 1}, 0);
    red("ReduceMean", {0}, 1);
    red("ReduceMax", {0, 1}, 1);
    return g;
  };
  Check ck;
  ck.atol = 1e-5;  // sums of +-1 values cancel
  check_ops(graph(), ck);
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(platform::load_config("tiny"));
  const compiler::CompileOnnxResult r = compiler::compile_graph(graph(), o);
  int transposes = 0, element_loads = 0;
  for (const isa::Queue& q : r.program.queues)
    for (const isa::Instruction& in : q.instrs) {
      transposes += in.op == isa::Opcode::transpose;
      if (in.op == isa::Opcode::dma_copy && in.src[0].space == isa::MemSpace::hbm &&
          in.src[0].partition_count > 1 && in.src[0].partition_stride == 1)
        ++element_loads;
    }
  EXPECT_GT(transposes, 0);
  EXPECT_EQ(element_loads, 0);
}

TEST(LoweringOps, ReduceVariantsFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {6, 45, 35}});
  Value* ax = node(g, "Abs", {x});
  auto red = [&](const char* op, Value* in, std::vector<int64_t> axes, int64_t keep) {
    g.add_output(node(g, op, {in}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(keep)}}));
  };
  red("ReduceL1", x, {1}, 0);
  red("ReduceL2", x, {0}, 1);
  red("ReduceSumSquare", x, {2}, 0);
  red("ReduceLogSum", ax, {0, 1}, 0);
  red("ReduceLogSumExp", x, {1}, 1);
  red("ReduceProd", x, {0}, 0);  // tensor_scalar accumulating with mul
  check_ops(std::move(g), {});
}

// Softmax over axis 0 (strided rows), LogSoftmax over a middle axis (scratch
// transposes in and out) and Softmax over the last axis.
TEST(LoweringOps, SoftmaxAnyAxisFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {37, 150}});
  Value* z = g.add_input("z", {ElemType::fp32, {4, 33, 20}});
  g.add_output(node(g, "Softmax", {x}, {{"axis", Attribute(int64_t{0})}}));
  g.add_output(node(g, "LogSoftmax", {z}, {{"axis", Attribute(int64_t{1})}}));
  g.add_output(node(g, "Softmax", {z}, {{"axis", Attribute(int64_t{-1})}}));
  Check ck;
  ck.ranges["x"] = {-10, 10};
  check_ops(std::move(g), ck);
}

TEST(LoweringOps, SoftmaxAxis0Bf16) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {37, 150}});
  g.add_output(node(g, "Softmax", {x}, {{"axis", Attribute(int64_t{0})}}));
  Check ck;
  ck.p = Precision::bf16;
  ck.rtol = 1e-2;
  ck.atol = 1e-4;
  check_ops(std::move(g), ck);
}

// Rows of 65536 elements (256 KiB, 4x a tiny SBUF partition): two passes over
// 1024-column chunks, the max rescaling the running sum as it grows. Inputs in
// [-30, 30] so that the running max moves often.
TEST(LoweringOps, LongRowSoftmaxFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {4, 65536}});
  g.add_output(node(g, "Softmax", {x}, {{"axis", Attribute(int64_t{1})}}));
  g.add_output(node(g, "LogSoftmax", {x}, {{"axis", Attribute(int64_t{1})}}));
  g.add_output(
      node(g, "ReduceLogSumExp", {x},
           {{"axes", Attribute(std::vector<int64_t>{1})}, {"keepdims", Attribute(int64_t{0})}}));
  Check ck;
  ck.ranges["x"] = {-30, 30};
  ck.atol = 1e-12;  // tiny probabilities: relative error only
  check_ops(std::move(g), ck);
}

// LayerNorm / RMSNorm over long rows (scale and bias reloaded per chunk), and a
// reduction of all of a long tensor onto one row.
TEST(LoweringOps, LongRowNormsFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {3, 20000}});
  Value* sc = g.add_constant("scale", random_tensor({20000}, 21, 0.5f, 1.5f));
  Value* bi = g.add_constant("bias", random_tensor({20000}, 22));
  g.add_output(node(g, "trn.LayerNorm", {x, sc, bi},
                    {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(1e-5f)}}));
  g.add_output(node(g, "trn.RMSNorm", {x, sc},
                    {{"axis", Attribute(int64_t{1})}, {"epsilon", Attribute(1e-6f)}}));
  g.add_output(
      node(g, "ReduceMax", {x},
           {{"axes", Attribute(std::vector<int64_t>{})}, {"keepdims", Attribute(int64_t{1})}}));
  Check ck;
  ck.atol = 1e-5;
  check_ops(std::move(g), ck);
}

// Reductions of few long rows: each row spread over up to 128 partitions ([3, 20000]
// -> [120, 500]; all of it -> [125, 480]) and the partials combined after a
// transpose; prod over all stays on one partition per row (chunked).
TEST(LoweringOps, SplitReductionsFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {3, 20000}});
  Value* ax = node(g, "Add", {node(g, "Abs", {x}), scalar_const(g, "half", 0.5f)});
  auto red = [&](const char* op, Value* in, std::vector<int64_t> axes, int64_t keep) {
    g.add_output(node(g, op, {in}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(keep)}}));
  };
  red("ReduceSum", x, {1}, 0);
  red("ReduceMean", x, {}, 0);
  red("ReduceL2", x, {1}, 1);
  red("ReduceMin", x, {0, 1}, 1);
  red("ReduceLogSum", ax, {1}, 0);
  red("ReduceSumSquare", x, {}, 1);
  Check ck;
  ck.atol = 1e-4;  // sums of 60000 values of +-1: float accumulation order
  check_ops(std::move(g), ck);
}

// trn.LayerNorm over the last two axes (axis = 1 of [6, 10, 150]).
TEST(LoweringOps, LayerNormTrailingAxesFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {6, 10, 150}});
  Value* sc = g.add_constant("scale", random_tensor({10, 150}, 31, 0.5f, 1.5f));
  g.add_output(node(g, "trn.LayerNorm", {x, sc},
                    {{"axis", Attribute(int64_t{1})}, {"epsilon", Attribute(1e-5f)}}));
  Check ck;
  ck.atol = 1e-5;
  check_ops(std::move(g), ck);
}

// ---- Step families checked against the spec --------------------------------

// Compiles `g` for tiny at fp32 and runs it with `inputs`; the outputs by name.
std::map<std::string, std::vector<float>> run_fp32(Graph g, const interp::TensorMap& inputs) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  std::vector<std::string> names;
  for (const Value* v : g.outputs()) names.push_back(v->name);
  const std::map<std::string, std::string> io = lower::io_tensor_names(g);
  const compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  const auto got = run_on_tiny(cfg, r.program, inputs);
  std::map<std::string, std::vector<float>> out;
  for (const std::string& name : names) out[name] = got.at(io.at(name)).to_float();
  return out;
}

// The one-instruction steps (Neg, both forms of trn.Gelu, Not, Where) against
// their definitions computed here in double. (Identity never reaches the lowering:
// canonicalize forwards it.)
TEST(LoweringOps, SingleInstructionStepsMatchSpec) {
  const ir::Shape shape = {150, 40};
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, shape});
  Value* z = g.add_input("z", {ElemType::fp32, shape});
  Value* m = g.add_input("m", {ElemType::boolean, shape});
  Value* neg = node(g, "Neg", {x});
  Value* ge = node(g, "trn.Gelu", {x}, {{"approximate", Attribute("none")}});
  Value* gt = node(g, "trn.Gelu", {x}, {{"approximate", Attribute("tanh")}});
  Value* nm = node(g, "Not", {m});
  Value* wh = node(g, "Where", {m, x, z});
  for (Value* v : {neg, ge, gt, nm, wh}) g.add_output(v);
  // The values' names (the graph is consumed by the compile).
  const std::string n_neg = neg->name, n_ge = ge->name, n_gt = gt->name, n_not = nm->name,
                    n_where = wh->name;
  const Tensor xt = random_tensor(shape, 41, -4, 4), zt = random_tensor(shape, 42);
  std::vector<int64_t> mv(static_cast<size_t>(ir::num_elements(shape)));
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = (i * 7) % 3 == 0;
  const Tensor mt = Tensor::from_ints(shape, mv, ElemType::boolean);
  const auto got = run_fp32(std::move(g), {{"x", xt}, {"z", zt}, {"m", mt}});

  const std::vector<float> xs = xt.floats(), zs = zt.floats();
  std::vector<double> w_neg, w_ge, w_gt, w_not, w_where;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    w_neg.push_back(-v);
    w_ge.push_back(gelu_erf(v));
    const double k = std::sqrt(2.0 / std::numbers::pi);
    w_gt.push_back(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
    w_not.push_back(mv[i] ? 0.0 : 1.0);
    w_where.push_back(mv[i] ? v : zs[i]);
  }
  EXPECT_TRUE(all_close("Neg", got.at(n_neg), w_neg, shape, 0, 0));
  EXPECT_TRUE(all_close("Gelu none", got.at(n_ge), w_ge, shape, 1e-5, 1e-4));
  EXPECT_TRUE(all_close("Gelu tanh", got.at(n_gt), w_gt, shape, 1e-5, 1e-4));
  EXPECT_TRUE(all_close("Not", got.at(n_not), w_not, shape, 0, 0));
  EXPECT_TRUE(all_close("Where", got.at(n_where), w_where, shape, 0, 0));
}

// The norms with one-element scale and bias (broadcast along the row), resident
// ([150, 96]: two row tiles) and in column chunks ([3, 20000]), against the
// definitions (reference.h's layer norm, RMS norm written here).
TEST(LoweringOps, NormsWithOneValueParametersMatchSpec) {
  const std::vector<ir::Shape> shapes = {{150, 96}, {3, 20000}};
  Graph g;
  Value* sc = g.add_constant("scale", Tensor::from_floats({1}, {1.75f}));
  Value* bi = g.add_constant("bias", Tensor::from_floats({1}, {-0.5f}));
  interp::TensorMap inputs;
  std::vector<std::string> ln, rms;  // output names per shape
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::string name = "x" + std::to_string(k);
    Value* x = g.add_input(name, {ElemType::fp32, shapes[k]});
    inputs[name] = random_tensor(shapes[k], 43 + static_cast<uint32_t>(k), -2, 3);
    Value* l = node(g, "trn.LayerNorm", {x, sc, bi},
                    {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(1e-5f)}});
    Value* r = node(g, "trn.RMSNorm", {x, sc},
                    {{"axis", Attribute(int64_t{1})}, {"epsilon", Attribute(1e-6f)}});
    g.add_output(l);
    g.add_output(r);
    ln.push_back(l->name);
    rms.push_back(r->name);
  }
  const auto got = run_fp32(std::move(g), inputs);

  for (size_t k = 0; k < shapes.size(); ++k) {
    const ir::Shape& shape = shapes[k];
    const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
    const std::vector<float> xs = inputs.at("x" + std::to_string(k)).floats();
    const std::vector<double> w_ln = ref_layernorm(
        xs, std::vector<float>(cols, 1.75f), std::vector<float>(cols, -0.5f), rows, cols, 1e-5);
    std::vector<double> w_rms(xs.size());
    for (int r = 0; r < rows; ++r) {
      const float* row = &xs[size_t(r) * cols];
      double ss = 0;
      for (int c = 0; c < cols; ++c) ss += double(row[c]) * row[c];
      const double rstd = 1.0 / std::sqrt(ss / cols + 1e-6);
      for (int c = 0; c < cols; ++c) w_rms[size_t(r) * cols + c] = row[c] * rstd * 1.75;
    }
    EXPECT_TRUE(
        all_close("LayerNorm " + ir::shape_str(shape), got.at(ln[k]), w_ln, shape, 1e-4, 1e-4));
    EXPECT_TRUE(
        all_close("RMSNorm " + ir::shape_str(shape), got.at(rms[k]), w_rms, shape, 1e-4, 1e-4));
  }
}

// ---- Refusals -----------------------------------------------------------------

TEST(LoweringOps, RefusesClearly) {
  const compiler::Target t = runtime::target_from_config(platform::load_config("tiny"));
  auto expect_unsupported = [&](Graph g, const std::string& needle) {
    try {
      lower::lower_graph(g, t);
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const ir::UnsupportedError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {  // integers are fp32 on the device: a truncating integer Mean / ReduceMean / Pow
    Graph g;
    Value* i = g.add_input("i", {ElemType::int64, {4, 5}});
    g.add_output(node(g, "Mean", {i, i}));
    expect_unsupported(std::move(g), "integer Mean (truncating)");
  }
  {
    Graph g;
    Value* i = g.add_input("i", {ElemType::int64, {4, 5}});
    g.add_output(node(g, "ReduceMean", {i}, {{"axes", Attribute(std::vector<int64_t>{1})}}));
    expect_unsupported(std::move(g), "integer ReduceMean (truncating)");
  }
  {
    Graph g;
    Value* i = g.add_input("i", {ElemType::int64, {4, 5}});
    Value* e = g.add_constant("e", Tensor::from_ints({}, {-1}, ElemType::int64));
    g.add_output(node(g, "Pow", {i, e}));
    expect_unsupported(std::move(g), "constant non-negative integral exponents");
  }
  {  // a fused step without a lowering
    Graph g;
    Value* x = g.add_input("x", {ElemType::fp32, {4, 5}});
    g.add_output(node(g, "trn.Elementwise", {x}, {{"expr", Attribute("Sin(%0); Relu($0)")}}));
    expect_unsupported(std::move(g), "elementwise step Sin is not lowered yet");
  }
  {
    Graph g;
    Value* x = g.add_input("x", {ElemType::fp32, {4, 5}});
    g.add_output(node(g, "Celu", {x}, {{"alpha", Attribute(-1.0f)}}));
    expect_unsupported(std::move(g), "Celu with alpha");
  }
  {
    Graph g;
    Value* x = g.add_input("x", {ElemType::fp32, {4, 5}});
    g.add_output(node(g, "Sin", {x}));
    expect_unsupported(std::move(g), "op type 'Sin'");
  }
}

}  // namespace
// core.vector.bn_stats_max_free is read by the compiler: a LayerNorm row of 1024
// takes 1024 / 512 = 2 bn_stats at the default and 1024 / 128 = 8 with 128 (4 rows:
// one row tile), and the split program computes the same (one Device per process:
// only the 128 case runs).
TEST(LoweringOps, LayerNormSplitsBnStatsAtTheConfiguredLimit) {
  const interp::TensorMap in = {{"x", random_tensor({4, 1024}, 7)}};
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {4, 1024}});
  g.add_output(node(g, "trn.LayerNorm", {x, g.add_constant("s", random_tensor({1024}, 3))},
                    {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(1e-5f)}}));
  const auto compile = [&](int64_t limit, platform::platform_config& cfg) {
    cfg = platform::load_config("tiny", {"core.vector.bn_stats_max_free=" + std::to_string(limit)});
    compiler::CompileOnnxOptions o;
    o.target = runtime::target_from_config(cfg);
    return compiler::compile_graph(g.clone(), o).program;
  };
  const auto bn_stats = [](const isa::Program& p) {
    int n = 0;
    for (const auto& q : p.queues)
      for (const auto& i : q.instrs) n += i.op == isa::Opcode::bn_stats;
    return n;
  };
  platform::platform_config cfg;
  EXPECT_EQ(bn_stats(compile(512, cfg)), 2);
  const isa::Program split = compile(128, cfg);
  EXPECT_EQ(bn_stats(split), 8);
  const interp::TensorMap want = reference_outputs(g, in, Precision::fp32);
  expect_outputs_close(g, want, run_on_tiny(cfg, split, in), 1e-4, 1e-5);
}

}  // namespace trnsim::e2e
