// The graph pass pipeline: registry, dumps, errors, and the default pipeline on
// graphs exported from real torch modules (torch.onnx.export through
// /usr/bin/python3; skipped when torch is missing, outside CI: tests/common/python_env.h). For each
// module the fused node counts are asserted and the outputs match before/after the pipeline
// (reference interpreter) and torch's own output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx_import.h"
#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "compiler/ir/trn_ops.h"
#include "tests/common/python_env.h"
#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes {
namespace {

using namespace testing;

// A small block with a bit of everything: Gemm, a torch-style erf GELU, an
// opset < 17 LayerNorm, and a residual.
constexpr const char* kBlock = R"IR(
    input %x: fp32[4,8]
    const %w: fp32[16,8]
    const %b: fp32[16]
    const %w2: fp32[8,16]
    const %b2: fp32[8]
    const %g: fp32[8]
    const %beta: fp32[8]
    const %sqrt2: fp32[] = [1.41421354]
    const %one: fp32[] = [1]
    const %half: fp32[] = [0.5]
    const %two: fp32[] = [2]
    const %eps: fp32[] = [9.99999975e-06]
    %h: fp32[4,16] = Gemm(%x, %w, %b) {transB=1} @/fc1/Gemm
    %d: fp32[4,16] = Div(%h, %sqrt2) @/act/Div
    %e: fp32[4,16] = Erf(%d) @/act/Erf
    %a: fp32[4,16] = Add(%e, %one) @/act/Add
    %m: fp32[4,16] = Mul(%h, %a) @/act/Mul
    %gl: fp32[4,16] = Mul(%m, %half) @/act/Mul_1
    %o: fp32[4,8] = Gemm(%gl, %w2, %b2) {transB=1} @/fc2/Gemm
    %r: fp32[4,8] = Add(%x, %o) @/Add
    %mu: fp32[4,1] = ReduceMean(%r) {axes=[1]} @/ln/ReduceMean
    %c: fp32[4,8] = Sub(%r, %mu) @/ln/Sub
    %p: fp32[4,8] = Pow(%c, %two) @/ln/Pow
    %var: fp32[4,1] = ReduceMean(%p) {axes=[1]} @/ln/ReduceMean_1
    %ve: fp32[4,1] = Add(%var, %eps) @/ln/Add
    %sd: fp32[4,1] = Sqrt(%ve) @/ln/Sqrt
    %n: fp32[4,8] = Div(%c, %sd) @/ln/Div
    %ng: fp32[4,8] = Mul(%n, %g) @/ln/Mul
    %y: fp32[4,8] = Add(%ng, %beta) @/ln/Add_1
    output %y)IR";

TEST(GraphPipeline, RegistryNamesSummariesAndDefaultOrder) {
  std::vector<std::string> names;
  for (const PassInfo* p : all_passes()) {
    EXPECT_FALSE(p->summary.empty()) << p->name;
    EXPECT_EQ(&find_pass(p->name), p);
    names.emplace_back(p->name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"decompose", "unroll_rnn", "decompose_3d",
                                             "canonicalize", "fuse_patterns", "fuse_epilogue",
                                             "fuse_elementwise", "autocast"}));
  EXPECT_EQ(default_graph_pipeline(Precision::bf16), names);
  names.pop_back();
  EXPECT_EQ(default_graph_pipeline(Precision::fp32), names);
  EXPECT_EQ(parse_precision("fp8"), Precision::fp8);
  EXPECT_EQ(parse_precision("int8"), std::nullopt);
  EXPECT_EQ(precision_name(Precision::bf16), "bf16");
}

TEST(GraphPipeline, UnknownPassNamesAreErrorsListingThePasses) {
  ir::Graph g = parse_body(kBlock);
  PassContext ctx;
  try {
    run_passes(g, ctx, {"canonicalize", "fuse_everything"});
    FAIL();
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "unknown graph pass 'fuse_everything'; known passes: decompose, unroll_rnn, "
                  "decompose_3d, canonicalize, fuse_patterns, fuse_epilogue, fuse_elementwise, "
                  "autocast"),
              std::string::npos)
        << e.what();
  }
  ctx.dump_after = {"canonicalise"};
  EXPECT_THROW(run_passes(g, ctx, {"canonicalize"}), ir::CompileError);
  // Names are checked before anything runs: the graph is untouched.
  EXPECT_EQ(ir::print_graph(g), canon(kBlock));
}

TEST(GraphPipeline, ErrorsNameThePass) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[3]
    %y: fp32[3] = Relu(%x) @relu
    output %y)IR");
  g.find_value("y")->type.shape = {5};  // break the graph: inference says [3]
  PassContext ctx;
  try {
    run_passes(g, ctx, {"fuse_elementwise"});
    FAIL();
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("graph pass 'fuse_elementwise': graph 't': node 'relu' "
                                         "(op Relu): output 'y' is typed fp32[5] but inference "
                                         "gives fp32[3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(GraphPipeline, DumpAfterNamedPassesToStringOrCallback) {
  ir::Graph g = parse_body(kBlock);
  fill_constants(g, 5);  // Gemm -> MatMul needs B's data
  PassContext ctx;
  ctx.precision = Precision::fp32;
  ctx.dump_after = {"fuse_patterns"};
  run_default_pipeline(g, ctx);
  // After fuse_patterns: Gemms are MatMul + Add, GELU and LayerNorm are fused, no
  // epilogue yet.
  const std::string& d = ctx.dump_text;
  ASSERT_EQ(d.rfind(dump_header("fuse_patterns"), 0), 0u) << d;
  EXPECT_NE(d.find("trn.Gelu("), std::string::npos) << d;
  EXPECT_NE(d.find("trn.LayerNorm("), std::string::npos) << d;
  EXPECT_NE(d.find("= MatMul("), std::string::npos) << d;
  EXPECT_EQ(d.find("trn.MatMulEpilogue"), std::string::npos) << d;
  EXPECT_EQ(d.find("# IR after", 1), std::string::npos) << "one dump only";

  ir::Graph g2 = parse_body(kBlock);
  PassContext all;
  all.dump_after = {"*"};
  std::vector<std::string> seen;
  all.dump = [&](const std::string& pass, const std::string& text) {
    seen.push_back(pass);
    EXPECT_NO_THROW(ir::parse_graph(text)) << "a dump must parse back";
  };
  run_default_pipeline(g2, all);
  EXPECT_EQ(seen, default_graph_pipeline(Precision::bf16));
  EXPECT_TRUE(all.dump_text.empty());
}

TEST(GraphPipeline, DefaultPipelineOnAHandWrittenBlock) {
  ir::Graph g = parse_body(kBlock);
  fill_constants(g, 5);
  PassContext ctx;
  ctx.precision = Precision::bf16;
  ir::Graph out = run_on_copy(g, default_graph_pipeline(ctx.precision), &ctx);
  ir::PrintOptions po;
  po.max_const_elems = 0;
  EXPECT_EQ(ir::print_graph(out, po), ir::print_graph(parse_body(R"IR(
    input %x: fp32[4,8]
    const %b: fp32[16]
    const %b2: fp32[8]
    const %g: fp32[8]
    const %beta: fp32[8]
    const %w.T: fp32[8,16]
    const %w2.T: fp32[16,8]
    %gl: fp32[4,16] = trn.MatMulEpilogue(%x, %w.T, %b) {compute_dtype="bf16", expr="MatMul(%0, %1); Add($0, %2); trn.Gelu($1){approximate=none}"} @/fc1/Gemm
    %r: fp32[4,8] = trn.MatMulEpilogue(%gl, %w2.T, %b2, %x) {compute_dtype="bf16", expr="MatMul(%0, %1); Add($0, %2); Add(%3, $1)"} @/fc2/Gemm
    %y: fp32[4,8] = trn.LayerNorm(%r, %g, %beta) {axis=1, epsilon=9.99999975e-06} @/ln/LayerNorm
    output %y)IR"),
                                                      po));
  // Reference semantics unchanged (compute_dtype is ignored without emulation).
  expect_same_outputs(g, out, 1e-5);
  EXPECT_EQ(ctx.stats.at("fuse_epilogue.fused"), 2);
  EXPECT_EQ(ctx.stats.at("autocast.bf16"), 2);
}

// ---------------------------------------------------------------------------
// Real torch exports

constexpr const char* kExportScript = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import torch
import torch.nn as nn

name, out_dir = sys.argv[1], sys.argv[2]
torch.manual_seed(0)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class HardSwishManual(nn.Module):
    def forward(self, x):
        return x * nn.functional.relu6(x + 3) / 6


def encoder(act):
    return nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                      activation=act, batch_first=True)


models = {
    "gelu": (lambda: nn.GELU(), (4, 32)),
    "gelu_tanh": (lambda: nn.GELU(approximate="tanh"), (4, 32)),
    "layernorm": (lambda: nn.LayerNorm(32), (2, 5, 32)),
    "layernorm17": (lambda: nn.LayerNorm(32), (2, 5, 32)),
    "rmsnorm": (lambda: RMSNorm(32), (2, 5, 32)),
    "silu": (lambda: nn.SiLU(), (4, 32)),
    "hardswish": (lambda: HardSwishManual(), (4, 32)),
    "mlp": (lambda: nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 16)), (4, 32)),
    "mlp3d": (lambda: nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 16)), (2, 4, 32)),
    "encoder": (lambda: encoder("relu"), (2, 5, 64)),
    "encoder_gelu": (lambda: encoder("gelu"), (2, 5, 64)),
    "convbn": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
               (1, 3, 8, 8)),
}
make, shape = models[name]
m = make().eval()
with torch.no_grad():
    # Norm weights and biases start at 1 and 0: make them generic so nothing folds away.
    for pname, p in m.named_parameters():
        if p.dim() == 1:
            p.copy_(torch.rand_like(p) - 0.5 + (1.0 if pname.endswith("weight") else 0.0))
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    x = torch.randn(*shape)
    y = m(x)
kw = {}
if name == "convbn":  # keep BatchNormalization in the export (eval mode folds it)
    kw = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
torch.onnx.export(m, (x,), f"{out_dir}/{name}.onnx", input_names=["x"], output_names=["y"],
                  opset_version=17 if name == "layernorm17" else 14, **kw)
x.numpy().astype("float32").tofile(f"{out_dir}/{name}.x.bin")
y.numpy().astype("float32").tofile(f"{out_dir}/{name}.y.bin")
)PY";

struct TorchCase {
  ir::Graph graph;
  interp::TensorMap inputs;
  ir::Tensor torch_y;
};

ir::Tensor read_floats(const std::string& path, const ir::TensorType& type) {
  std::ifstream f(path, std::ios::binary);
  ir::Tensor t(type);
  f.read(reinterpret_cast<char*>(t.floats().data()),
         static_cast<std::streamsize>(t.floats().size() * sizeof(float)));
  EXPECT_TRUE(f.good() && f.peek() == EOF) << path << " does not hold " << type.str();
  return t;
}

// Exports `model` with torch into a directory of its own under the build tree and
// imports it into `tc`; the script's result is for TRNSIM_REQUIRE_PYTHON (a missing
// torch is kMissingPackageExit, a failed export fails the test with its output).
test::PyRun export_torch(const std::string& model, TorchCase& tc) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TRNSIM_BINARY_DIR) / "graph_pipeline_torch" / model;
  fs::create_directories(dir);
  const fs::path script = dir / "export.py";
  std::ofstream(script) << test::python_require({"torch"}) << kExportScript;
  const test::PyRun r = test::run_python(script.string() + " " + model + " " + dir.string());
  if (r.code != 0) return r;
  tc.graph = frontend::import_onnx_file((dir / (model + ".onnx")).string());
  EXPECT_EQ(tc.graph.inputs().size(), 1u);
  EXPECT_EQ(tc.graph.outputs().size(), 1u);
  const ir::Value* x = tc.graph.inputs()[0];
  tc.inputs[x->name] = read_floats((dir / (model + ".x.bin")).string(), x->type);
  tc.torch_y = read_floats((dir / (model + ".y.bin")).string(), tc.graph.outputs()[0]->type);
  return r;
}

#define EXPORT_OR_SKIP(model, tc) \
  TorchCase tc;                   \
  TRNSIM_REQUIRE_PYTHON(export_torch(model, tc))

// Runs the default fp32 and bf16 pipelines on the export; returns the fp32 result.
// Checks: reference outputs before == after (fp32 pipeline) and == torch; the bf16
// graph has compute_dtype on every tensor-engine node, computes the fp32 result
// without emulation, and stays within bf16 error of torch with emulation.
ir::Graph check_pipelines(const TorchCase& tc, double bf16_tol = 3e-2) {
  PassContext ctx;
  ctx.precision = Precision::fp32;
  ir::Graph fp32 = run_on_copy(tc.graph, default_graph_pipeline(Precision::fp32), &ctx);
  const std::string y = tc.graph.outputs()[0]->name;
  EXPECT_EQ(fp32.outputs()[0]->name, y);
  ir::Tensor before = interp::run(tc.graph, tc.inputs).at(y);
  ir::Tensor after = interp::run(fp32, tc.inputs).at(y);
  EXPECT_LE(max_rel_diff(before, after), 1e-5);
  EXPECT_LE(max_rel_diff(tc.torch_y, after), 1e-4);

  PassContext ctx16;
  ctx16.precision = Precision::bf16;
  ir::Graph bf16 = run_on_copy(tc.graph, default_graph_pipeline(Precision::bf16), &ctx16);
  int tensor_engine = 0;
  for (const auto& n : bf16.nodes())
    if (ir::is_matmul_anchor(n->op) || n->op == "trn.MatMulEpilogue") {
      ++tensor_engine;
      EXPECT_EQ(n->attr_string("compute_dtype", ""), "bf16") << n->label();
    }
  EXPECT_LE(max_rel_diff(after, interp::run(bf16, tc.inputs).at(y)), 1e-6);
  interp::RunOptions emu;
  emu.emulate_precision = true;
  ir::Tensor emulated = interp::run(bf16, tc.inputs, emu).at(y);
  double d = max_rel_diff(tc.torch_y, emulated);
  EXPECT_LE(d, bf16_tol);
  if (tensor_engine) {
    EXPECT_GT(d, 1e-5) << "bf16 emulation changed nothing";
  }
  return fp32;
}

TEST(GraphPipelineTorch, Gelu) {
  EXPORT_OR_SKIP("gelu", tc);
  ir::Graph g = check_pipelines(tc);
  EXPECT_EQ(g.num_nodes(), 1u);
  ASSERT_EQ(count_op(g, "trn.Gelu"), 1);
  EXPECT_EQ(g.nodes()[0]->attr_string("approximate"), "none");
}

TEST(GraphPipelineTorch, GeluTanh) {
  EXPORT_OR_SKIP("gelu_tanh", tc);
  ir::Graph g = check_pipelines(tc);
  EXPECT_EQ(g.num_nodes(), 1u);
  ASSERT_EQ(count_op(g, "trn.Gelu"), 1);
  EXPECT_EQ(g.nodes()[0]->attr_string("approximate"), "tanh");
}

TEST(GraphPipelineTorch, LayerNormOpset14And17) {
  for (const char* model : {"layernorm", "layernorm17"}) {
    SCOPED_TRACE(model);
    EXPORT_OR_SKIP(model, tc);
    ir::Graph g = check_pipelines(tc);
    ASSERT_EQ(g.num_nodes(), 1u);
    ASSERT_EQ(count_op(g, "trn.LayerNorm"), 1);
    const ir::Node& n = *g.nodes()[0];
    EXPECT_EQ(n.num_inputs(), 3u);  // x, weight, bias
    EXPECT_EQ(n.attr_int("axis"), 2);
    EXPECT_EQ(n.attr_float("epsilon"), 1e-5f);
  }
}

TEST(GraphPipelineTorch, RmsNorm) {
  EXPORT_OR_SKIP("rmsnorm", tc);
  ir::Graph g = check_pipelines(tc);
  ASSERT_EQ(g.num_nodes(), 1u);
  ASSERT_EQ(count_op(g, "trn.RMSNorm"), 1);
  EXPECT_EQ(g.nodes()[0]->num_inputs(), 2u);
  EXPECT_EQ(g.nodes()[0]->attr_float("epsilon"), 1e-6f);
}

TEST(GraphPipelineTorch, SiluAndHardSwish) {
  {
    EXPORT_OR_SKIP("silu", tc);
    ir::Graph g = check_pipelines(tc);
    EXPECT_EQ(g.num_nodes(), 1u);
    EXPECT_EQ(count_op(g, "trn.Silu"), 1);
  }
  {
    EXPORT_OR_SKIP("hardswish", tc);
    ir::Graph g = check_pipelines(tc);
    EXPECT_EQ(g.num_nodes(), 1u);
    EXPECT_EQ(count_op(g, "HardSwish"), 1);
  }
}

TEST(GraphPipelineTorch, MlpBecomesTwoEpilogues) {
  // Linear -> GELU -> Linear on 2-D input: Gemm -> MatMul + bias, the GELU joins
  // the first epilogue.
  EXPORT_OR_SKIP("mlp", tc);
  ir::Graph g = check_pipelines(tc);
  ASSERT_EQ(g.num_nodes(), 2u);
  ASSERT_EQ(count_op(g, "trn.MatMulEpilogue"), 2);
  EXPECT_EQ(g.nodes()[0]->attr_string("expr"),
            "MatMul(%0, %1); Add($0, %2); trn.Gelu($1){approximate=none}");
  EXPECT_EQ(g.nodes()[1]->attr_string("expr"), "MatMul(%0, %1); Add($0, %2)");
}

TEST(GraphPipelineTorch, Mlp3dWithSilu) {
  // On 3-D input torch writes MatMul + Add(bias, .): same result as the 2-D case.
  EXPORT_OR_SKIP("mlp3d", tc);
  ir::Graph g = check_pipelines(tc);
  ASSERT_EQ(count_op(g, "trn.MatMulEpilogue"), 2);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.nodes()[0]->attr_string("expr"), "MatMul(%0, %1); Add($0, %2); trn.Silu($1)");
}

// The encoder layer after the pipeline: the two LayerNorms fused, the FFN's
// linear1 + bias + activation and linear2 + bias + residual as epilogues, the QKV
// projection split into Q, K and V projections with their biases as epilogues, the
// out-projection a MatMul + bias epilogue, scores, softmax and context one
// trn.Attention.
void check_encoder(const ir::Graph& g, const std::string& act_step) {
  EXPECT_EQ(count_op(g, "trn.LayerNorm"), 2);
  EXPECT_EQ(count_op(g, "trn.Attention"), 1);
  EXPECT_EQ(count_op(g, "Softmax"), 0);
  std::vector<std::string> exprs;
  for (const auto& n : g.nodes())
    if (n->op == "trn.MatMulEpilogue") exprs.push_back(n->attr_string("expr"));
  EXPECT_EQ(exprs, (std::vector<std::string>{"MatMul(%0, %1); Add($0, %2)",  // Q
                                             "MatMul(%0, %1); Add($0, %2)",  // K
                                             "MatMul(%0, %1); Add($0, %2)",  // V
                                             "MatMul(%0, %1); Add($0, %2)",  // out-proj
                                             "MatMul(%0, %1); Add($0, %2); " + act_step,
                                             "MatMul(%0, %1); Add($0, %2); Add(%3, $1)"}));
  EXPECT_EQ(count_op(g, "MatMul"), 0);
  for (const char* op :
       {"Gemm", "Div", "Sub", "Pow", "Sqrt", "ReduceMean", "Erf", "Relu", "Slice", "Split"})
    EXPECT_EQ(count_op(g, op), 0) << op;
}

TEST(GraphPipelineTorch, TransformerEncoderLayerRelu) {
  EXPORT_OR_SKIP("encoder", tc);
  ir::Graph g = check_pipelines(tc);
  check_encoder(g, "Relu($1)");
}

TEST(GraphPipelineTorch, TransformerEncoderLayerGelu) {
  EXPORT_OR_SKIP("encoder_gelu", tc);
  ir::Graph g = check_pipelines(tc);
  check_encoder(g, "trn.Gelu($1){approximate=none}");
}

TEST(GraphPipelineTorch, ConvBatchNormRelu) {
  // BatchNormalization folds into the Conv; Relu becomes its epilogue.
  EXPORT_OR_SKIP("convbn", tc);
  ASSERT_EQ(count_op(tc.graph, "BatchNormalization"), 1);
  ir::Graph g = check_pipelines(tc);
  ASSERT_EQ(g.num_nodes(), 1u);
  const ir::Node& n = *g.nodes()[0];
  EXPECT_EQ(n.op, "trn.MatMulEpilogue");
  EXPECT_EQ(n.attr_string("expr"),
            "Conv(%0, %1, %2){dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], "
            "strides=[1,1]}; Relu($0)");
}

}  // namespace
}  // namespace trnsim::graph_passes
