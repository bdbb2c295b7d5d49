// Shared by the lowering tests: random tensors, a simulated-vs-interpreter check of a
// graph on the `tiny` chip, and torch export of small models (skipped without torch,
// outside CI: tests/common/python_env.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/ops.h"
#include "platform/config.h"
#include "runtime/device.h"
#include "runtime/target_from_config.h"
#include "runtime/tensor.h"
#include "tests/common/python_env.h"

namespace trnsim::e2e {

namespace fs = std::filesystem;
using graph_passes::Precision;
using ir::ElemType;
using ir::Tensor;

inline Tensor random_tensor(const ir::Shape& shape, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(ir::num_elements(shape)));
  for (float& x : v) x = dist(gen);
  return Tensor::from_floats(shape, v);
}

// fp32 values of any tensor (integers and bools are fp32 on the device).
inline std::vector<float> as_floats(const Tensor& t) {
  return t.holds_floats() ? t.floats() : t.cast(ElemType::fp32).floats();
}

// Every element of `got` within atol + rtol * |want| of `want`; NaN and inf must match
// exactly (a NaN or inf where the reference is finite, or the other way round, fails:
// |got - want| alone would let a NaN through). Reports up to 5 elements.
inline void expect_close(const std::string& name, const std::vector<float>& got,
                         const std::vector<float>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size()) << name;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = want[i], g = got[i];
    bool ok;
    if (std::isnan(e) || std::isnan(g)) {
      ok = std::isnan(e) && std::isnan(g);
    } else if (std::isinf(e) || std::isinf(g)) {
      ok = e == g;
    } else {
      const double d = std::fabs(g - e);
      worst = std::max(worst, d);
      ok = d <= atol + rtol * std::fabs(e);
    }
    if (!ok && bad++ < 5) ADD_FAILURE() << name << "[" << i << "]: got " << g << ", want " << e;
  }
  EXPECT_EQ(bad, 0u) << name << " worst abs error " << worst;
}

// The reference for a compiled graph: the interpreter on the graph as imported, not on
// the compiler's output (a fusion bug must not be computed the same way on both sides).
// Below fp32 only the precision policy is applied first (autocast marks the tensor-engine
// operands to round), so the reference rounds what the chip rounds and nothing else.
inline interp::TensorMap reference_outputs(const ir::Graph& original, const interp::TensorMap& in,
                                           Precision p) {
  return compiler::reference_outputs(original, in, p);
}

// Runs a compiled program on a fresh tiny Device and returns launch 0's outputs.
inline std::map<std::string, runtime::HostTensor> run_on_tiny(const platform::platform_config& cfg,
                                                              const isa::Program& program,
                                                              const interp::TensorMap& inputs) {
  runtime::Device dev(cfg);
  runtime::Launch l{&program, {}, 0};
  for (const auto& [name, t] : inputs) {
    std::vector<int64_t> shape = t.shape();
    if (shape.empty()) shape = {1};
    l.inputs[name] = runtime::HostTensor::from_float(shape, isa::DType::fp32, as_floats(t));
  }
  runtime::RunReport rep = dev.run({l});
  std::printf("[lowering] %zu instructions, %.0f ns simulated\n",
              static_cast<size_t>(rep.instructions), rep.simulated_ns);
  return rep.launches.at(0).outputs;
}

// Every output of `original` (the graph as imported) against the device's, element by
// element (expect_close).
inline void expect_outputs_close(const ir::Graph& original, const interp::TensorMap& want,
                                 const std::map<std::string, runtime::HostTensor>& got, double rtol,
                                 double atol) {
  for (const ir::Value* v : original.outputs()) {
    auto w = want.find(v->name);
    ASSERT_NE(w, want.end()) << v->name;
    auto it = got.find(v->name);
    ASSERT_NE(it, got.end()) << "the device wrote no output " << v->name;
    expect_close(v->name, it->second.to_float(), as_floats(w->second), rtol, atol);
  }
}

// Compiles `g` for tiny at `p`, runs it with random inputs (`given` ones as given;
// integer inputs uniform in [0, 8), bools 0/1) and compares every output with the
// interpreter on the graph as imported (reference_outputs).
inline void check_graph(ir::Graph g, Precision p, double rtol, double atol,
                        const interp::TensorMap& given = {}) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = p;
  o.target = runtime::target_from_config(cfg);
  interp::TensorMap inputs;
  uint32_t seed = 1;
  for (const ir::Value* v : g.inputs()) {
    if (given.count(v->name)) {
      inputs[v->name] = given.at(v->name);
    } else if (ir::is_float(v->elem())) {
      inputs[v->name] = random_tensor(v->shape(), seed++);
    } else {
      std::mt19937 gen(seed++);
      std::vector<int64_t> iv(static_cast<size_t>(ir::num_elements(v->shape())));
      for (int64_t& x : iv)
        x = static_cast<int64_t>(gen() % (v->elem() == ElemType::boolean ? 2 : 8));
      inputs[v->name] = Tensor::from_ints(v->shape(), iv, v->elem());
    }
  }
  const ir::Graph original = g.clone();
  const interp::TensorMap want = reference_outputs(original, inputs, p);
  const interp::TensorMap want_fp32 = p == Precision::fp32 ? want : interp::run(original, inputs);
  compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  const auto got = run_on_tiny(cfg, r.program, inputs);
  expect_outputs_close(original, want, got, rtol, atol);
  // The emulation reference itself stays near fp32 (sanity of the comparison);
  // fp8 (e4m3, 3 mantissa bits) operands are much coarser.
  const double loose = p == Precision::fp8 ? 0.25 : 0.05;
  for (const auto& [name, w] : want) {
    const std::vector<float> e = as_floats(w), f = as_floats(want_fp32.at(name));
    ASSERT_EQ(e.size(), f.size()) << name;
    for (size_t i = 0; i < e.size(); i += 97)
      EXPECT_NEAR(e[i], f[i], loose + loose * std::fabs(f[i])) << name << "[" << i << "]";
  }
}

// Compiles one node of `op` over input X (fp32, shape s) for tiny, checks the node was
// lowered as itself (not rewritten), runs it and compares its output with `want`.
inline void check_single_node(const std::string& op, const ir::Shape& s,
                              std::map<std::string, ir::Attribute> attrs,
                              const std::vector<float>& x, const std::vector<float>& want,
                              double rtol) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g;
  ir::Value* xv = g.add_input("X", {ElemType::fp32, s});
  ir::Node* nd = ir::make_node(g, op, {xv}, std::move(attrs), "node");
  g.add_output(nd->outputs[0]);
  const std::string name = nd->outputs[0]->name;
  compiler::CompileOnnxResult r = compiler::compile_graph(std::move(g), o);
  bool lowered = false;
  for (const auto& np : r.graph.nodes()) lowered |= np->op == op;
  EXPECT_TRUE(lowered) << op << " was rewritten, not lowered";
  const auto got = run_on_tiny(cfg, r.program, {{"X", Tensor::from_floats(s, x)}});
  ASSERT_TRUE(got.count(name));
  expect_close(op, got.at(name).to_float(), want, rtol, 1e-6);
}

// Runs a torch export script (`body` defines the module m and its input x) writing
// *path; for TRNSIM_REQUIRE_PYTHON: exit kMissingPackageExit when one of `modules`
// is not installed.
inline test::PyRun export_model(const std::string& name, const std::string& body, std::string* path,
                                std::initializer_list<const char*> modules = {"torch"}) {
  const fs::path dir = fs::path(TRNSIM_BINARY_DIR) / "lowering_models";
  fs::create_directories(dir);
  *path = (dir / (name + ".onnx")).string();
  fs::remove(*path);
  const std::string script = (dir / (name + ".py")).string();
  std::ofstream(script) << test::python_require(modules) << "import torch\ntorch.manual_seed(0)\n"
                        << body << "\ntorch.onnx.export(m.eval(), x, '" << *path
                        << "', opset_version=17, input_names=['x'], output_names=['y'])\n";
  test::PyRun r = test::run_python(script);
  if (r.code == 0 && !fs::exists(*path)) {
    r.code = 1;
    r.out += "\nthe script wrote no " + *path;
  }
  return r;
}

}  // namespace trnsim::e2e
