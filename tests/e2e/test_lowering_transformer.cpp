// Transformer blocks exported from torch at opsets 13, 14 and 17, compiled for
// `tiny`, simulated and compared with the reference interpreter (lowering_check.h):
// torch.nn.TransformerEncoderLayer, and a GPT-style block (token + position
// embeddings, causal self-attention with explicit matmuls, LayerNorm, GELU MLP).
// Skipped when torch is missing (outside CI: tests/common/python_env.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "compiler/frontend/onnx_import.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

// Exports `body` (defines m and x) at `opset` with one input named `in`; for
// TRNSIM_REQUIRE_PYTHON (a missing torch is kMissingPackageExit).
test::PyRun export_at(const std::string& name, const std::string& body, int opset,
                      const std::string& in, std::string* path) {
  const fs::path dir = fs::path(TRNSIM_BINARY_DIR) / "lowering_models";
  fs::create_directories(dir);
  *path = (dir / (name + ".onnx")).string();
  fs::remove(*path);
  const std::string script = (dir / (name + ".py")).string();
  std::ofstream(script) << test::python_require({"torch"}) << "import torch\ntorch.manual_seed(0)\n"
                        << body << "\ntorch.onnx.export(m.eval(), x, '" << *path
                        << "', opset_version=" << opset << ", input_names=['" << in
                        << "'], output_names=['y'])\n";
  test::PyRun r = test::run_python(script);
  if (r.code == 0 && !fs::exists(*path)) {
    r.code = 1;
    r.out += "\nthe script wrote no " + *path;
  }
  return r;
}

std::string encoder_body(int seq) {
  return "m = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,\n"
         "    batch_first=True, dropout=0.0)\n"
         "x = torch.randn(2, " +
         std::to_string(seq) + ", 64)";
}

// nanoGPT-style block over T tokens, batch 2. `masked_fill`: the causal mask as
// Where(triu mask, -inf, att); otherwise an additive mask (0 / -inf). The token ids
// are clamped to the vocabulary: the device cannot check run-time Gather indices, so
// only provably in-range ones are looked up there (unproven ones go to the host).
std::string gpt_body(bool masked_fill, int T) {
  std::string b =
      "class Block(torch.nn.Module):\n"
      "  def __init__(s, V=50, T=" +
      std::to_string(T) +
      ", D=64, H=4):\n"
      "    super().__init__()\n"
      "    s.tok = torch.nn.Embedding(V, D); s.pos = torch.nn.Embedding(T, D)\n"
      "    s.ln1 = torch.nn.LayerNorm(D); s.ln2 = torch.nn.LayerNorm(D)\n"
      "    s.qkv = torch.nn.Linear(D, 3 * D); s.proj = torch.nn.Linear(D, D)\n"
      "    s.fc1 = torch.nn.Linear(D, 4 * D); s.fc2 = torch.nn.Linear(4 * D, D); s.H = H\n"
      "    tri = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)\n"
      "    s.register_buffer('mask', tri)\n"
      "    s.register_buffer('addmask', torch.zeros(T, T).masked_fill(tri, float('-inf')))\n"
      "  def forward(s, idx):\n"
      "    B, T = idx.shape\n"
      "    D = s.tok.weight.shape[1]; hd = D // s.H\n"
      "    V = s.tok.num_embeddings\n"
      "    x = s.tok(idx.clamp(-V, V - 1)) + s.pos(torch.arange(T))\n"
      "    q, k, v = s.qkv(s.ln1(x)).split(D, dim=-1)\n"
      "    q = q.view(B, T, s.H, hd).transpose(1, 2)\n"
      "    k = k.view(B, T, s.H, hd).transpose(1, 2)\n"
      "    v = v.view(B, T, s.H, hd).transpose(1, 2)\n"
      "    att = (q @ k.transpose(-2, -1)) * (hd ** -0.5)\n";
  b += masked_fill ? "    att = att.masked_fill(s.mask[:T, :T], float('-inf'))\n"
                   : "    att = att + s.addmask[:T, :T]\n";
  b += "    att = torch.softmax(att, dim=-1)\n"
       "    y = (att @ v).transpose(1, 2).reshape(B, T, D)\n"
       "    x = x + s.proj(y)\n"
       "    return x + s.fc2(torch.nn.functional.gelu(s.fc1(s.ln2(x))))\n"
       "m = Block()\n"
       "x = torch.randint(0, 50, (2, " +
       std::to_string(T) + "))";
  return b;
}

// Token ids covering the whole vocabulary, some given from the end (negative).
interp::TensorMap gpt_tokens(int T) {
  std::vector<int64_t> v(2 * static_cast<size_t>(T));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int64_t>((i * 37) % 50) - (i % 5 == 0 ? 50 : 0);
  return {{"idx", Tensor::from_ints({2, T}, v)}};
}

TEST(LoweringTransformer, EncoderLayerOpset17Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("encoder17", encoder_body(17), 17, "x", &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4);
}

// Opset 13/14 export LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div (fused back by
// fuse_patterns).
TEST(LoweringTransformer, EncoderLayerOpset13Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("encoder13", encoder_body(10), 13, "x", &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4);
}

TEST(LoweringTransformer, EncoderLayerOpset14Bf16) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("encoder14", encoder_body(40), 14, "x", &path));
  check_graph(frontend::import_onnx_file(path), Precision::bf16, 2e-2, 2e-2);
}

TEST(LoweringTransformer, GptBlockAdditiveMaskOpset17Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("gpt_add17", gpt_body(false, 32), 17, "idx", &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4, gpt_tokens(32));
}

TEST(LoweringTransformer, GptBlockAdditiveMaskOpset14Bf16) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("gpt_add14", gpt_body(false, 32), 14, "idx", &path));
  check_graph(frontend::import_onnx_file(path), Precision::bf16, 2e-2, 2e-2, gpt_tokens(32));
}

// masked_fill exports Where(mask, -inf, att) (the Where lowering is elementwise.cpp's);
// T = 23: the [23,64] position embedding broadcasts over the batch in 23-row runs.
TEST(LoweringTransformer, GptBlockMaskedFillOpset13Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(export_at("gpt_where13", gpt_body(true, 23), 13, "idx", &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4, gpt_tokens(23));
}

}  // namespace
}  // namespace trnsim::e2e
