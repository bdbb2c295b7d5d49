// Recurrent (LSTM, GRU, RNN) and control-flow (If, Loop, Scan) ops end to end:
// ONNX import, shape inference and the reference interpreter.
//  - InterpRnn.SpecModes: modes the packaged ONNX tests leave out (bidirectional,
//    reverse, layout 1, sequence_lens, initial states, peepholes, clip,
//    non-default activations with alpha/beta, linear_before_reset, input_forget,
//    every output) against a numpy reference written from the ONNX spec;
//  - InterpRnn.TorchLstmGru, InterpControl.TorchScript*: modules exported with
//    torch.onnx.export against eager torch;
//  - InterpControl.*: IR-level behaviour of graphs with bodies (verification,
//    type agreement, dead-code elimination, printing, cloning, partitioning).
// Python runs through /usr/bin/python3 (tests/common/python_env.h rules).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/frontend/onnx_import.h"
#include "compiler/interp/fold.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/text.h"
#include "compiler/partition.h"
#include "tests/common/python_env.h"
#include "tests/compiler/onnx_conformance.h"

namespace trnsim {
namespace {

namespace fs = std::filesystem;

fs::path case_root(const std::string& suite) {
  fs::path d = fs::path(TRNSIM_BINARY_DIR) / "interp_control" / suite;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Writes the cases in the packaged ONNX test layout (model.onnx,
// test_data_set_0/{input,output}_K.pb) with a numpy reference from the spec.
constexpr const char* kRnnScript = R"PY(
import sys, os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper as nh

root = sys.argv[1]
rng = np.random.default_rng(7)

def act(name, x, a, b):
    n = name.lower()
    if n == "sigmoid": return 1 / (1 + np.exp(-x))
    if n == "tanh": return np.tanh(x)
    if n == "relu": return np.maximum(x, 0)
    if n == "affine": return a * x + b
    if n == "leakyrelu": return np.where(x >= 0, x, a * x)
    if n == "thresholdedrelu": return np.where(x > a, x, 0)
    if n == "scaledtanh": return a * np.tanh(b * x)
    if n == "hardsigmoid": return np.clip(a * x + b, 0, 1)
    if n == "elu": return np.where(x >= 0, x, a * (np.exp(x) - 1))
    if n == "softsign": return x / (1 + np.abs(x))
    if n == "softplus": return np.log1p(np.exp(x))
    raise ValueError(n)

TAKES_ALPHA = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
TAKES_BETA = {"affine", "scaledtanh", "hardsigmoid"}
DEFAULTS = {"leakyrelu": (0.01, 0), "thresholdedrelu": (1, 0), "elu": (1, 0),
            "hardsigmoid": (0.2, 0.5), "affine": (1, 0), "scaledtanh": (1, 1)}
PER = {"LSTM": 3, "GRU": 2, "RNN": 1}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEF_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}

def resolve(op, dirs, names, alphas, betas):
    names = names or DEF_ACTS[op]
    ai = bi = 0
    fns = []
    for nm in names:
        a, b = DEFAULTS.get(nm.lower(), (0, 0))
        if nm.lower() in TAKES_ALPHA and ai < len(alphas): a = alphas[ai]; ai += 1
        if nm.lower() in TAKES_BETA and bi < len(betas): b = betas[bi]; bi += 1
        fns.append((lambda nm, a, b: (lambda x: act(nm, x, a, b)))(nm, a, b))
    if len(fns) == PER[op] and dirs == 2: fns = fns + fns
    return [fns[d * PER[op]:(d + 1) * PER[op]] for d in range(dirs)]

def reference(op, X, W, R, B, lens, h0, c0, P, direction, layout, fns, clip, lbr, coupled):
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    S, N, _ = X.shape
    D, H, G = W.shape[0], R.shape[2], GATES[op]
    Y = np.zeros((S, D, N, H)); Yh = np.zeros((D, N, H)); Yc = np.zeros((D, N, H))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(D):
        rev = direction == "reverse" or d == 1
        f = fns[d]
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb = B[d][:G * H] if B is not None else np.zeros(G * H)
        Rb = B[d][G * H:] if B is not None else np.zeros(G * H)
        g = lambda k: slice(k * H, (k + 1) * H)
        for n in range(N):
            h = h0[d, n].astype(np.float64) if h0 is not None else np.zeros(H)
            c = c0[d, n].astype(np.float64) if c0 is not None else np.zeros(H)
            L = S if lens is None else lens[n]
            for step in range(L):
                t = L - 1 - step if rev else step
                x = X[t, n].astype(np.float64)
                if op == "RNN":
                    h = f[0](cl(x @ Wd.T + h @ Rd.T + Wb + Rb))
                elif op == "GRU":
                    z = f[0](cl(x @ Wd[g(0)].T + h @ Rd[g(0)].T + Wb[g(0)] + Rb[g(0)]))
                    r = f[0](cl(x @ Wd[g(1)].T + h @ Rd[g(1)].T + Wb[g(1)] + Rb[g(1)]))
                    if lbr:
                        hh = f[1](cl(x @ Wd[g(2)].T + r * (h @ Rd[g(2)].T + Rb[g(2)]) + Wb[g(2)]))
                    else:
                        hh = f[1](cl(x @ Wd[g(2)].T + (r * h) @ Rd[g(2)].T + Rb[g(2)] + Wb[g(2)]))
                    h = (1 - z) * hh + z * h
                else:
                    p = P[d] if P is not None else np.zeros(3 * H)
                    pre = lambda k: x @ Wd[g(k)].T + h @ Rd[g(k)].T + Wb[g(k)] + Rb[g(k)]
                    i = f[0](cl(pre(0) + p[g(0)] * c))
                    ff = 1 - i if coupled else f[0](cl(pre(2) + p[g(2)] * c))
                    cc = f[1](cl(pre(3)))
                    c = ff * c + i * cc
                    o = f[0](cl(pre(1) + p[g(1)] * c))
                    h = o * f[2](cl(c))
                Y[t, d, n] = h
            Yh[d, n] = h
            Yc[d, n] = c
    if layout:
        Y = Y.transpose(2, 0, 1, 3); Yh = Yh.transpose(1, 0, 2); Yc = Yc.transpose(1, 0, 2)
    return [Y.astype(np.float32), Yh.astype(np.float32), Yc.astype(np.float32)]

def case(name, op, S=4, N=3, I=5, H=4, direction="forward", layout=0, bias=True, lens=None,
         h0=False, c0=False, peep=False, acts=None, alphas=(), betas=(), clip=None, lbr=0,
         input_forget=0):
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    X = rng.standard_normal((N, S, I) if layout else (S, N, I)).astype(np.float32)
    W = (rng.standard_normal((D, G * H, I)) * 0.5).astype(np.float32)
    R = (rng.standard_normal((D, G * H, H)) * 0.5).astype(np.float32)
    B = (rng.standard_normal((D, 2 * G * H)) * 0.5).astype(np.float32) if bias else None
    st = (N, D, H) if layout else (D, N, H)
    H0 = rng.standard_normal(st).astype(np.float32) if h0 else None
    C0 = rng.standard_normal(st).astype(np.float32) if c0 else None
    P = (rng.standard_normal((D, 3 * H)) * 0.5).astype(np.float32) if peep else None
    L = None if lens is None else np.array(lens, dtype=np.int32)
    fns = resolve(op, D, acts, list(alphas), list(betas))
    want = reference(op, X, W, R, B, L, H0, C0, P, direction, layout, fns, clip, lbr,
                     input_forget)
    feeds = [("X", X), ("W", W), ("R", R), ("B", B), ("sequence_lens", L), ("initial_h", H0)]
    if op == "LSTM": feeds += [("initial_c", C0), ("P", P)]
    while feeds[-1][1] is None: feeds.pop()
    names = [n if v is not None else "" for n, v in feeds]
    attrs = dict(hidden_size=H, direction=direction, layout=layout)
    if acts: attrs["activations"] = acts
    if alphas: attrs["activation_alpha"] = list(alphas)
    if betas: attrs["activation_beta"] = list(betas)
    if clip: attrs["clip"] = clip
    if op == "GRU": attrs["linear_before_reset"] = lbr
    if input_forget: attrs["input_forget"] = input_forget
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    want = want[:len(outs)]
    node = helper.make_node(op, names, outs, **attrs)
    vi = lambda n, a: helper.make_tensor_value_info(
        n, TensorProto.INT32 if a.dtype == np.int32 else TensorProto.FLOAT, a.shape)
    graph = helper.make_graph([node], name, [vi(n, v) for n, v in feeds if v is not None],
                              [vi(n, w) for n, w in zip(outs, want)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, v) in enumerate([(n, v) for n, v in feeds if v is not None]):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, n).SerializeToString())
    for k, (n, v) in enumerate(zip(outs, want)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, n).SerializeToString())

case("lstm_bidir_layout1_all", "LSTM", direction="bidirectional", layout=1, lens=[4, 2, 3],
     h0=True, c0=True, peep=True)
case("lstm_reverse_clip_acts", "LSTM", direction="reverse", clip=0.9, h0=True,
     acts=["HardSigmoid", "LeakyRelu", "Softsign"], alphas=[0.3, 0.2], betas=[0.4])
case("lstm_bidir_one_act_set", "LSTM", direction="bidirectional", acts=["Sigmoid", "Elu", "Tanh"],
     alphas=[0.7], lens=[1, 4, 0])
case("lstm_nobias_forward", "LSTM", bias=False, c0=True)
case("lstm_input_forget", "LSTM", input_forget=1, peep=True, c0=True, h0=True)
case("gru_bidir_lbr", "GRU", direction="bidirectional", lbr=1, lens=[3, 4, 1], h0=True,
     acts=["Sigmoid", "Tanh", "HardSigmoid", "Elu"], alphas=[0.25, 0.9], betas=[0.45])
case("gru_reverse_layout1", "GRU", direction="reverse", layout=1, h0=True, lens=[2, 4, 3])
case("gru_forward_clip", "GRU", clip=0.5, lbr=0)
case("rnn_bidir_layout1", "RNN", direction="bidirectional", layout=1, lens=[4, 1, 2], h0=True,
     acts=["Relu", "Tanh"])
case("rnn_reverse_scaledtanh", "RNN", direction="reverse", acts=["ScaledTanh"], alphas=[0.8],
     betas=[1.2])
case("rnn_affine_softplus", "RNN", direction="bidirectional", acts=["Affine", "Softplus"],
     alphas=[0.5], betas=[0.1], bias=False)
)PY";

interp::TensorMap run_interp(const ir::Graph& g, const interp::TensorMap& feed) {
  return interp::run(g, feed);
}

TEST(InterpRnn, SpecModes) {
  const fs::path root = case_root("rnn_spec");
  const fs::path script = root / "make_cases.py";
  std::ofstream(script) << test::python_require({"numpy", "onnx"}) << kRnnScript;
  TRNSIM_REQUIRE_PYTHON(test::run_python(script.string() + " " + root.string()));
  int cases = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    ++cases;
    const std::string id = e.path().filename().string();
    conformance::CaseResult r = conformance::run_case(e.path(), id, run_interp);
    EXPECT_EQ(r.status, conformance::Status::kPass) << id << ": " << r.detail;
  }
  EXPECT_EQ(cases, 11);
}

// torch modules: export, import, run, compare with eager torch (fp32, 1e-4 of the
// largest output magnitude).
constexpr const char* kTorchScript = R"PY(
import sys, os
import numpy as np
import torch
from torch import nn
import onnx
from onnx import numpy_helper as nh

name, d = sys.argv[1], sys.argv[2]
torch.manual_seed(0)

class Rnns(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(6, 4, num_layers=2, bidirectional=True, batch_first=True)
    def forward(self, x):
        y1, (h1, c1) = self.lstm(x)
        y2, h2 = self.gru(x)
        return y1, h1, c1, y2, h2

class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
    def forward(self, x, n: int):
        y = self.lin(x)
        if bool(y.sum() > 0):
            y = y * 2.0 + 1.0
        else:
            y = torch.tanh(y) - 3.0
        acc = torch.zeros_like(y)
        for i in range(n):
            acc = acc + torch.relu(y - float(i))
            y = y * 0.5
        # A while loop: a runtime condition, fixed-shape carried values (acc >= 0).
        while bool(acc.sum() < 40.0):
            acc = acc * 2.0 + 1.0
        return acc, y

if name == "rnns":
    module = Rnns().eval()
    args = (torch.randn(3, 7, 6),)
    out_names = ["y1", "h1", "c1", "y2", "h2"]
else:
    module = torch.jit.script(Branchy().eval())
    x = torch.randn(2, 4) + (2.0 if name == "script_pos" else -2.0)
    args = (x, 3)
    out_names = ["acc", "y"]
with torch.no_grad():
    want = module(*args)
torch.onnx.export(module, args, os.path.join(d, "model.onnx"), input_names=["x", "n"][:len(args)],
                  output_names=out_names, opset_version=14)
os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
model = onnx.load(os.path.join(d, "model.onnx"))
inits = {i.name for i in model.graph.initializer}
graph_inputs = [i.name for i in model.graph.input if i.name not in inits]
for k, gi in enumerate(graph_inputs):
    a = args[k].numpy() if isinstance(args[k], torch.Tensor) else np.array(args[k], dtype=np.int64)
    with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
        f.write(nh.from_array(a, gi).SerializeToString())
for k, w in enumerate(want):
    with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
        f.write(nh.from_array(w.numpy(), out_names[k]).SerializeToString())
print("ops:", sorted({n.op_type for n in model.graph.node}))
)PY";

// Runs the export for `name` into its own directory; returns the directory.
fs::path export_torch(const std::string& name, test::PyRun& r) {
  const fs::path d = case_root("torch_" + name);
  const fs::path script = d / "export.py";
  std::ofstream(script) << test::python_require({"torch", "onnx", "numpy"}) << kTorchScript;
  r = test::run_python(script.string() + " " + name + " " + d.string());
  return d;
}

// Compares every output with eager torch: |got - want| <= 1e-4 * max |want|.
void expect_matches_torch(const fs::path& d, const std::string& must_have_op) {
  onnx::ModelProto m;
  {
    std::ifstream f(d / "model.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&f));
  }
  bool has_op = false;
  for (const auto& n : m.graph().node()) has_op = has_op || n.op_type() == must_have_op;
  EXPECT_TRUE(has_op) << "the export has no " << must_have_op << " node";
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  frontend::ImportOptions opts;
  interp::TensorMap feed;
  int k = 0;
  for (const auto& i : m.graph().input()) {
    if (inits.count(i.name())) continue;
    ir::Tensor t = frontend::read_tensor_pb(
        (d / "test_data_set_0" / ("input_" + std::to_string(k++) + ".pb")).string());
    opts.input_shapes[i.name()] = t.shape();
    feed[i.name()] = t;
  }
  ir::Graph g = frontend::import_onnx_model(m, (d / "model.onnx").string(), opts);
  interp::TensorMap got = interp::run(g, feed);
  for (int o = 0; o < m.graph().output_size(); ++o) {
    const std::string& name = m.graph().output(o).name();
    ir::Tensor want = frontend::read_tensor_pb(
        (d / "test_data_set_0" / ("output_" + std::to_string(o) + ".pb")).string());
    ASSERT_TRUE(got.count(name)) << name;
    const ir::Tensor& t = got.at(name);
    ASSERT_EQ(t.type(), want.type()) << name;
    double scale = 0, worst = 0;
    for (float w : want.floats()) scale = std::max(scale, static_cast<double>(std::fabs(w)));
    for (int64_t i = 0; i < t.numel(); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(t.floats()[i]) - want.floats()[i]));
    EXPECT_LE(worst, 1e-4 * std::max(scale, 1e-6)) << name << ": largest |want| " << scale;
  }
}

TEST(InterpRnn, TorchLstmGru) {
  test::PyRun r;
  const fs::path d = export_torch("rnns", r);
  TRNSIM_REQUIRE_PYTHON(r);
  expect_matches_torch(d, "LSTM");
  expect_matches_torch(d, "GRU");
}

TEST(InterpControl, TorchScriptIfLoopPositive) {
  test::PyRun r;
  const fs::path d = export_torch("script_pos", r);
  TRNSIM_REQUIRE_PYTHON(r);
  expect_matches_torch(d, "If");
  expect_matches_torch(d, "Loop");
}

TEST(InterpControl, TorchScriptIfLoopNegative) {
  test::PyRun r;
  const fs::path d = export_torch("script_neg", r);
  TRNSIM_REQUIRE_PYTHON(r);
  expect_matches_torch(d, "If");
}

// --- IR-level behaviour of nodes with bodies ---------------------------------

using ir::ElemType;
using ir::Tensor;

// A body of `op` over one input of `type`: then -> Neg, else -> Exp.
std::shared_ptr<const ir::Graph> unary_body(const std::string& name, const std::string& op,
                                            const ir::TensorType& type) {
  auto b = std::make_shared<ir::Graph>();
  b->name = name;
  ir::Value* x = b->add_input(name + "_x", type);
  b->add_output(ir::make_node(*b, op, {x}, {}, name + "_op")->outputs[0]);
  return b;
}

// x -> Relu -> If(x.sum > 0) {Neg} else {Exp} -> Add(x): the If reads the Relu
// only through its branches.
ir::Graph if_graph() {
  ir::Graph g;
  g.name = "ifg";
  const ir::TensorType t{ElemType::fp32, {4, 8}};
  ir::Value* x = g.add_input("x", t);
  ir::Value* c = g.add_input("c", {ElemType::boolean, {}});
  ir::Value* r = ir::make_node(g, "Relu", {x}, {}, "relu")->outputs[0];
  ir::Node* n = ir::make_node(g, "If", {c, r},
                              {{"then_branch", ir::Attribute(unary_body("then", "Neg", t))},
                               {"else_branch", ir::Attribute(unary_body("else", "Exp", t))}},
                              "branch");
  ir::Value* y = ir::make_node(g, "Add", {n->outputs[0], x}, {}, "add")->outputs[0];
  g.add_output(y);
  return g;
}

TEST(InterpControl, IfRunsTheTakenBranch) {
  ir::Graph g = if_graph();
  g.verify();
  std::vector<float> xs(32);
  for (int i = 0; i < 32; ++i) xs[i] = static_cast<float>(i % 7) - 3.0f;
  const Tensor x = Tensor::from_floats({4, 8}, xs);
  for (bool c : {true, false}) {
    interp::TensorMap out =
        interp::run(g, {{"x", x}, {"c", Tensor::from_ints({}, {c ? 1 : 0}, ElemType::boolean)}});
    const auto& y = out.at(g.outputs()[0]->name).floats();
    for (int i = 0; i < 32; ++i) {
      const float r = std::max(xs[i], 0.0f);
      EXPECT_FLOAT_EQ(y[i], (c ? -r : std::exp(r)) + xs[i]) << i;
    }
  }
}

TEST(InterpControl, IfBranchesMustAgreeOnTypes) {
  ir::Graph g;
  ir::Value* c = g.add_input("c", {ElemType::boolean, {}});
  ir::Value* x = g.add_input("x", {ElemType::fp32, {3}});
  auto tb = std::make_shared<ir::Graph>();
  tb->name = "then";
  tb->add_input("tx", {ElemType::fp32, {3}});
  tb->add_output(tb->add_constant("a", Tensor::from_floats({2}, {1, 2})));
  auto eb = std::make_shared<ir::Graph>();
  eb->name = "else";
  eb->add_output(eb->add_input("ex", {ElemType::fp32, {3}}));
  try {
    ir::make_node(g, "If", {c, x},
                  {{"then_branch", ir::Attribute(std::shared_ptr<const ir::Graph>(tb))},
                   {"else_branch", ir::Attribute(std::shared_ptr<const ir::Graph>(eb))}},
                  "pick");
    FAIL() << "branches of different types were accepted";
  } catch (const ir::CompileError& e) {
    EXPECT_NE((std::string(e.what()))
                  .find("node 'pick' (op If): the branches disagree on output 0: "
                        "then gives fp32[2], else gives fp32[3]"),
              std::string::npos)
        << std::string(e.what());
  }
}

TEST(InterpControl, DeadCodeSeesUsesInsideBodies) {
  ir::Graph g = if_graph();
  EXPECT_EQ(g.erase_dead_nodes(), 0);
  EXPECT_NE(g.find_value("relu_out"), nullptr);
  g.verify();
  // Folding with a constant condition keeps the graph valid.
  ir::Graph h = if_graph();
  EXPECT_EQ(interp::fold_constants(h), 0);
  h.verify();
}

TEST(InterpControl, CloneCopiesBodies) {
  ir::Graph g = if_graph();
  ir::Graph c = g.clone();
  const ir::Node* a = g.find_value("branch_out")->producer;
  const ir::Node* b = c.find_value("branch_out")->producer;
  ASSERT_TRUE(a && b);
  EXPECT_NE(&a->attr_graph("then_branch"), &b->attr_graph("then_branch"));
  EXPECT_EQ(ir::print_graph(g), ir::print_graph(c));
  c.verify();
}

TEST(InterpControl, TextPrintsBodiesAndRefusesToParseThem) {
  const std::string text = ir::print_graph(if_graph());
  EXPECT_NE((text).find("then_branch=graph then {"), std::string::npos) << text;
  EXPECT_NE((text).find("%then_op_out: fp32[4,8] = Neg(%then_x)"), std::string::npos) << text;
  try {
    ir::parse_graph(text, "if.ir");
    FAIL() << "a graph attribute was parsed";
  } catch (const ir::CompileError& e) {
    EXPECT_NE((std::string(e.what())).find("if.ir:"), std::string::npos) << std::string(e.what());
    EXPECT_NE((std::string(e.what()))
                  .find("graph attributes (the bodies of If, Loop and Scan) cannot be "
                        "read from text"),
              std::string::npos)
        << std::string(e.what());
  }
}

// The If is a host decision (its condition read on the host), not a fallback; its
// segment is the host's, with both bodies kept.
TEST(InterpControl, PartitionDecidesIfOnTheHost) {
  compiler::CompileOnnxOptions o;
  o.precision = graph_passes::Precision::fp32;
  o.print_after = {"*"};
  compiler::PartitionedModel m = compiler::compile_partitioned(if_graph(), o, true);
  bool if_decided = false;
  for (const auto& f : m.decisions) if_decided = if_decided || f.op == "If";
  EXPECT_TRUE(if_decided);
  for (const auto& f : m.fallback) EXPECT_NE(f.op, "If");
  int host_ifs = 0;
  for (const auto& s : m.segments) {
    s.graph.verify();
    for (const auto& n : s.graph.nodes())
      if (n->op == "If") {
        EXPECT_FALSE(s.on_device);
        EXPECT_TRUE(n->has_subgraphs());
        ++host_ifs;
      }
  }
  EXPECT_EQ(host_ifs, 1);
  EXPECT_NE((m.dump_text).find("graph then {"), std::string::npos) << m.dump_text;
}

// Loop with a runtime trip count and carried values of fixed shape: runs; the
// same loop with a scan output needs the trip count at compile time.
ir::Graph loop_graph(bool scan, ir::Value** trip_out = nullptr) {
  ir::Graph g;
  g.name = "loopg";
  ir::Value* m = g.add_input("m", {ElemType::int64, {}});
  ir::Value* x = g.add_input("x", {ElemType::fp32, {2}});
  auto b = std::make_shared<ir::Graph>();
  b->name = "body";
  ir::Value* it = b->add_input("it", {ElemType::int64, {}});
  ir::Value* cin = b->add_input("cin", {ElemType::boolean, {}});
  ir::Value* acc = b->add_input("acc", {ElemType::fp32, {2}});
  ir::Value* f = ir::make_node(*b, "Cast", {it}, {{"to", ir::Attribute("fp32")}}, "f")->outputs[0];
  ir::Value* nacc = ir::make_node(*b, "Add", {acc, f}, {}, "nacc")->outputs[0];
  b->add_output(ir::make_node(*b, "Identity", {cin}, {}, "cout")->outputs[0]);
  b->add_output(nacc);
  if (scan) b->add_output(ir::make_node(*b, "Identity", {nacc}, {}, "row")->outputs[0]);
  if (trip_out) *trip_out = m;
  ir::Node* n = ir::make_node(g, "Loop", {m, nullptr, x},
                              {{"body", ir::Attribute(std::shared_ptr<const ir::Graph>(b))}},
                              "loop", scan ? 2 : 1);
  for (ir::Value* o : n->outputs) g.add_output(o);
  return g;
}

TEST(InterpControl, LoopRuntimeTripCountWithFixedCarriedShapes) {
  ir::Graph g = loop_graph(false);
  g.verify();
  for (int64_t trip : {0, 1, 4}) {
    interp::TensorMap out =
        interp::run(g, {{"m", Tensor::scalar_int(trip)}, {"x", Tensor::from_floats({2}, {1, 2})}});
    const float add = static_cast<float>(trip * (trip - 1) / 2);
    EXPECT_EQ(out.at("loop_out").floats(), (std::vector<float>{1 + add, 2 + add})) << trip;
  }
}

TEST(InterpControl, LoopScanOutputsNeedAConstantTripCount) {
  try {
    loop_graph(true);
    FAIL() << "a scan output with a runtime trip count was accepted";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE((std::string(e.what()))
                  .find("node 'loop' (op Loop): the trip count 'm' must be a constant"),
              std::string::npos)
        << std::string(e.what());
  }
}

TEST(InterpControl, LoopScanOutputsNeedABoundedTripCount) {
  // A trip count of INT64_MAX (a while loop's) cannot size a scan output.
  ir::Graph g;
  ir::Value* m = g.add_constant("m", Tensor::scalar_int(std::numeric_limits<int64_t>::max()));
  ir::Value* x = g.add_input("x", {ElemType::fp32, {2}});
  auto b = std::make_shared<ir::Graph>();
  b->name = "body";
  b->add_input("it", {ElemType::int64, {}});
  ir::Value* cin = b->add_input("cin", {ElemType::boolean, {}});
  ir::Value* acc = b->add_input("acc", {ElemType::fp32, {2}});
  b->add_output(cin);
  b->add_output(acc);
  b->add_output(acc);
  try {
    ir::make_node(g, "Loop", {m, nullptr, x},
                  {{"body", ir::Attribute(std::shared_ptr<const ir::Graph>(b))}}, "big", 2);
    FAIL() << "a scan output of 2^63 rows was accepted";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("is too large to size scan outputs"), std::string::npos)
        << e.what();
  }
}

TEST(InterpControl, LoopThatStopsEarlyWithScanOutputsIsAnError) {
  // M = 3, but the body's condition (iteration < 1) ends the loop after 2
  // iterations: the scan output was typed for 3 rows.
  ir::Graph g;
  ir::Value* m = g.add_constant("m", Tensor::scalar_int(3));
  ir::Value* x = g.add_input("x", {ElemType::fp32, {2}});
  auto b = std::make_shared<ir::Graph>();
  b->name = "body";
  ir::Value* it = b->add_input("it", {ElemType::int64, {}});
  b->add_input("cin", {ElemType::boolean, {}});
  ir::Value* acc = b->add_input("acc", {ElemType::fp32, {2}});
  ir::Value* one = b->add_constant("one", Tensor::scalar_int(1));
  b->add_output(ir::make_node(*b, "Less", {it, one}, {}, "more")->outputs[0]);
  b->add_output(acc);
  b->add_output(acc);
  ir::Node* n =
      ir::make_node(g, "Loop", {m, nullptr, x},
                    {{"body", ir::Attribute(std::shared_ptr<const ir::Graph>(b))}}, "early", 2);
  EXPECT_EQ(n->outputs[1]->type.str(), "fp32[3,2]");
  for (ir::Value* o : n->outputs) g.add_output(o);
  try {
    interp::run(g, {{"x", Tensor::from_floats({2}, {1, 2})}});
    FAIL() << "a short loop filled a scan output typed for more rows";
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'early' (op Loop): stopped after 2 iterations, but "
                                         "its scan outputs were sized for 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(InterpControl, ScanAxesAndDirections) {
  // states s[2]; scanned x[2,3] along axis 1, read in reverse; body: s += x_t,
  // emits s; the scan output stacks along axis 1, written in reverse.
  ir::Graph g;
  ir::Value* s0 = g.add_input("s0", {ElemType::fp32, {2}});
  ir::Value* x = g.add_input("x", {ElemType::fp32, {2, 3}});
  auto b = std::make_shared<ir::Graph>();
  b->name = "body";
  ir::Value* s = b->add_input("s", {ElemType::fp32, {2}});
  ir::Value* xt = b->add_input("xt", {ElemType::fp32, {2}});
  ir::Value* ns = ir::make_node(*b, "Add", {s, xt}, {}, "acc")->outputs[0];
  b->add_output(ns);
  b->add_output(ns);
  ir::Node* n = ir::make_node(g, "Scan", {s0, x},
                              {{"body", ir::Attribute(std::shared_ptr<const ir::Graph>(b))},
                               {"num_scan_inputs", ir::Attribute(int64_t{1})},
                               {"scan_input_axes", ir::Attribute(std::vector<int64_t>{-1})},
                               {"scan_input_directions", ir::Attribute(std::vector<int64_t>{1})},
                               {"scan_output_axes", ir::Attribute(std::vector<int64_t>{1})},
                               {"scan_output_directions", ir::Attribute(std::vector<int64_t>{1})}},
                              "scan", 2);
  EXPECT_EQ(n->attr_ints("scan_input_axes"), std::vector<int64_t>{1});
  EXPECT_EQ(n->outputs[1]->type.str(), "fp32[2,3]");
  for (ir::Value* o : n->outputs) g.add_output(o);
  g.verify();
  const std::vector<float> xs{1, 2, 3, 10, 20, 30}, s0v{0.5f, -1};
  interp::TensorMap out = interp::run(
      g, {{"s0", Tensor::from_floats({2}, s0v)}, {"x", Tensor::from_floats({2, 3}, xs)}});
  // Step t reads column 2 - t; its running sum lands in column 2 - t.
  std::vector<float> want_rows(6);
  std::vector<float> acc = s0v;
  for (int t = 0; t < 3; ++t)
    for (int r = 0; r < 2; ++r) {
      acc[r] += xs[r * 3 + (2 - t)];
      want_rows[r * 3 + (2 - t)] = acc[r];
    }
  EXPECT_EQ(out.at(n->outputs[0]->name).floats(), acc);
  EXPECT_EQ(out.at(n->outputs[1]->name).floats(), want_rows);
}

TEST(InterpRnn, BadInputsAreNamed) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {ElemType::fp32, {4, 2, 3}});
  ir::Value* w = g.add_constant("w", ir::TensorType{ElemType::fp32, {1, 20, 3}});
  ir::Value* r = g.add_constant("r", ir::TensorType{ElemType::fp32, {1, 16, 4}});
  try {
    ir::make_node(g, "LSTM", {x, w, r}, {}, "lstm");
    FAIL() << "W of the wrong gate count was accepted";
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "node 'lstm' (op LSTM): W 'w' is fp32[1,20,3], expected [1,16,3]"),
              std::string::npos)
        << e.what();
  }
  ir::Value* w2 = g.add_constant("w2", ir::TensorType{ElemType::fp32, {1, 16, 3}});
  try {
    ir::make_node(g, "LSTM", {x, w2, r}, {{"activations", ir::Attribute("Sigmoid,Cube,Tanh")}},
                  "lstm");
    FAIL() << "an unknown activation was accepted";
  } catch (const ir::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("activation 'Cube' is not supported"), std::string::npos)
        << e.what();
  }
  ir::Node* ok = ir::make_node(g, "LSTM", {x, w2, r}, {}, "lstm", 3);
  EXPECT_EQ(ok->attr_string("activations"), "Sigmoid,Tanh,Tanh");
  EXPECT_EQ(ok->attr_int("hidden_size"), 4);
  EXPECT_EQ(ok->outputs[0]->type.str(), "fp32[4,1,2,4]");
  EXPECT_EQ(ok->outputs[2]->type.str(), "fp32[1,2,4]");
}

// An If whose then-branch runs a Loop whose body reads the model's input x (a
// capture through two scopes), and whose else-branch reads x directly.
constexpr const char* kNestedScript = R"PY(
import sys, os
import numpy as np
import onnx
from onnx import helper, TensorProto as TP, numpy_helper as nh

d = sys.argv[1]
F, B, I = TP.FLOAT, TP.BOOL, TP.INT64
body = helper.make_graph(
    [helper.make_node("Cast", ["i"], ["fi"], to=F),
     helper.make_node("Mul", ["acc", "x"], ["ax"]),
     helper.make_node("Add", ["ax", "fi"], ["acc2"]),
     helper.make_node("Identity", ["ci"], ["co"])],
    "loop_body",
    [helper.make_tensor_value_info("i", I, []), helper.make_tensor_value_info("ci", B, []),
     helper.make_tensor_value_info("acc", F, [3])],
    [helper.make_tensor_value_info("co", B, []), helper.make_tensor_value_info("acc2", F, [3])])
then_g = helper.make_graph(
    [helper.make_node("Constant", [], ["m"], value=nh.from_array(np.array(3, np.int64))),
     helper.make_node("Loop", ["m", "", "x"], ["looped"], body=body)],
    "then", [], [helper.make_tensor_value_info("looped", F, [3])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["negx"])], "else", [],
                           [helper.make_tensor_value_info("negx", F, [3])])
g = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "nested",
    [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("c", B, [])],
    [helper.make_tensor_value_info("y", F, [3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(d, "model.onnx"))
x = np.array([0.5, -1.25, 2.0], np.float32)
for k, c in enumerate([True, False]):
    sd = os.path.join(d, f"test_data_set_{k}")
    os.makedirs(sd)
    if c:
        acc = x.astype(np.float64)
        for i in range(3):
            acc = acc * x + i
    else:
        acc = -x
    for n, (name, v) in enumerate([("x", x), ("c", np.array(c))]):
        open(os.path.join(sd, f"input_{n}.pb"), "wb").write(nh.from_array(v, name).SerializeToString())
    open(os.path.join(sd, "output_0.pb"), "wb").write(
        nh.from_array(acc.astype(np.float32), "y").SerializeToString())
)PY";

TEST(InterpControl, CapturesThroughNestedBodies) {
  const fs::path d = case_root("nested");
  const fs::path script = d / "make.py";
  std::ofstream(script) << test::python_require({"numpy", "onnx"}) << kNestedScript;
  TRNSIM_REQUIRE_PYTHON(test::run_python(script.string() + " " + d.string()));
  conformance::CaseResult r = conformance::run_case(d, "nested", run_interp);
  EXPECT_EQ(r.status, conformance::Status::kPass) << r.detail;
  // The If node reads x explicitly; so does the Loop inside its then-branch.
  ir::Graph g = frontend::import_onnx_file((d / "model.onnx").string());
  ASSERT_EQ(g.num_nodes(), 1u);
  const ir::Node& n = *g.nodes()[0];
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(n.inputs[1]->name, "x");
  const ir::Graph& then_g = n.attr_graph("then_branch");
  ASSERT_EQ(then_g.num_nodes(), 1u);
  EXPECT_EQ(then_g.nodes()[0]->op, "Loop");
  EXPECT_EQ(then_g.nodes()[0]->attr_int("num_captures"), 1);
}

// A value read only inside a body counts as used at the top level: MaxPool's Indices
// output, which only the then-branch reads, is imported and computed, not dropped.
constexpr const char* kBodyUseScript = R"PY(
import sys, os
import onnx
from onnx import helper, TensorProto as TP

d = sys.argv[1]
then_g = helper.make_graph([helper.make_node("Cast", ["idx"], ["fidx"], to=TP.FLOAT)], "then", [],
                           [helper.make_tensor_value_info("fidx", TP.FLOAT, [1, 1, 2, 2])])
else_g = helper.make_graph([helper.make_node("Identity", ["y"], ["yy"])], "else", [],
                           [helper.make_tensor_value_info("yy", TP.FLOAT, [1, 1, 2, 2])])
g = helper.make_graph(
    [helper.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2], strides=[2, 2]),
     helper.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)], "g",
    [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 4, 4]),
     helper.make_tensor_value_info("c", TP.BOOL, [])],
    [helper.make_tensor_value_info("out", TP.FLOAT, [1, 1, 2, 2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(d, "model.onnx"))
)PY";

TEST(InterpControl, UsesInsideBodiesCountAtTheTopLevel) {
  const fs::path d = case_root("body_use");
  const fs::path script = d / "make.py";
  std::ofstream(script) << test::python_require({"onnx"}) << kBodyUseScript;
  TRNSIM_REQUIRE_PYTHON(test::run_python(script.string() + " " + d.string()));
  const ir::Graph g = frontend::import_onnx_file((d / "model.onnx").string());
  // x = 0..15 in a 4x4 plane: each 2x2 window's maximum is its bottom-right element,
  // flat indices 5, 7, 13 and 15 (the ONNX Indices of MaxPool).
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = float(i);
  interp::TensorMap got = interp::run(g, {{"x", Tensor::from_floats({1, 1, 4, 4}, xs)},
                                          {"c", Tensor::from_ints({}, {1}, ElemType::boolean)}});
  const Tensor& out = got.at("out");
  ASSERT_EQ(out.numel(), 4);
  const float want[] = {5, 7, 13, 15};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.at(i), want[i]) << i;
}

TEST(InterpControl, LoopCarriedValuesKeepTheirType) {
  // The body grows the carried value from [2] to [4]: static shapes refuse it.
  ir::Graph g;
  ir::Value* x = g.add_input("x", {ElemType::fp32, {2}});
  auto b = std::make_shared<ir::Graph>();
  b->name = "grow";
  b->add_input("it", {ElemType::int64, {}});
  ir::Value* cin = b->add_input("cin", {ElemType::boolean, {}});
  ir::Value* acc = b->add_input("acc", {ElemType::fp32, {2}});
  b->add_output(cin);
  b->add_output(
      ir::make_node(*b, "Concat", {acc, acc}, {{"axis", ir::Attribute(int64_t{0})}}, "cat")
          ->outputs[0]);
  try {
    ir::make_node(g, "Loop", {nullptr, nullptr, x},
                  {{"body", ir::Attribute(std::shared_ptr<const ir::Graph>(b))}}, "grower");
    FAIL() << "a carried value that changes type was accepted";
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'grower' (op Loop): loop-carried value 0 ('x') is "
                                         "fp32[2] but the body gives fp32[4]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trnsim
