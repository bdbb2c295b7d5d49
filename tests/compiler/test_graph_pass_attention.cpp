// fuse_patterns: softmax(Q K^T * scale [+ causal mask]) V as torch exports manual
// attention -> trn.Attention, and the forms it must leave alone. Each fused graph
// computes what the unfused one does (the interpreter on random inputs).
#include <gtest/gtest.h>

#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes::testing {
namespace {

// Additive causal mask [4,4]: 0 on and below the diagonal, `m` above.
std::string mask4(const std::string& m) {
  return "[0, " + m + ", " + m + ", " + m + ", 0, 0, " + m + ", " + m + ", 0, 0, 0, " + m +
         ", 0, 0, 0, 0]";
}

// Q K^T * scale + mask, softmax, @ V over [1,2,4,8] heads (V head size 6).
std::string additive(const std::string& mask, const std::string& softmax_axis = "3") {
  return R"IR(
    input %q: fp32[1,2,4,8]
    input %k: fp32[1,2,4,8]
    input %v: fp32[1,2,4,6]
    const %s: fp32[] = [0.353553385]
    const %m: fp32[4,4] = )IR" +
         mask + R"IR(
    %kt: fp32[1,2,8,4] = Transpose(%k) {perm=[0,1,3,2]} @/attn/Transpose
    %sc: fp32[1,2,4,4] = MatMul(%q, %kt) @/attn/MatMul
    %ss: fp32[1,2,4,4] = Mul(%sc, %s) @/attn/Mul
    %sm: fp32[1,2,4,4] = Add(%ss, %m) @/attn/Add
    %p: fp32[1,2,4,4] = Softmax(%sm) {axis=)IR" +
         softmax_axis + R"IR(} @/attn/Softmax
    %y: fp32[1,2,4,6] = MatMul(%p, %v) @/attn/MatMul_1
    output %y)IR";
}

TEST(GraphPassesFuseAttention, AdditiveCausalMask) {
  PassContext ctx;
  check_pass("fuse_patterns", additive(mask4("-1e+09")), R"IR(
    input %q: fp32[1,2,4,8]
    input %k: fp32[1,2,4,8]
    input %v: fp32[1,2,4,6]
    %y: fp32[1,2,4,6] = trn.Attention(%q, %k, %v) {causal=1, scale=0.353553385} @/attn/Attention
    output %y)IR",
             1e-5, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.Attention"], 2);  // check_pass runs the pass twice
  // -inf above the diagonal is the same mask.
  ir::Graph g = run_on_copy(parse_body(additive(mask4("-inf"))), {"fuse_patterns"});
  EXPECT_EQ(count_op(g, "trn.Attention"), 1);
}

TEST(GraphPassesFuseAttention, MaskedFillNoScaleAndNoMask) {
  // att.masked_fill(triu(ones, 1), -inf) without a scale (Where(c, fill, s)), and a
  // plain softmax(Q K^T / 2) V with fewer queries than keys (Div by a constant).
  check_pass("fuse_patterns", R"IR(
    input %q: fp32[3,5,4]
    input %k: fp32[3,5,4]
    input %v: fp32[3,5,4]
    input %q2: fp32[2,3,8]
    input %k2: fp32[2,7,8]
    input %v2: fp32[2,7,5]
    const %c: bool[5,5] = [0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    const %ninf: fp32[] = [-inf]
    const %two: fp32[] = [2]
    %kt: fp32[3,4,5] = Transpose(%k) {perm=[0,2,1]} @/a/Transpose
    %sc: fp32[3,5,5] = MatMul(%q, %kt) @/a/MatMul
    %sm: fp32[3,5,5] = Where(%c, %ninf, %sc) @/a/Where
    %p: fp32[3,5,5] = Softmax(%sm) {axis=2} @/a/Softmax
    %y: fp32[3,5,4] = MatMul(%p, %v) @/a/MatMul_1
    %kt2: fp32[2,8,7] = Transpose(%k2) {perm=[0,2,1]} @/b/Transpose
    %sc2: fp32[2,3,7] = MatMul(%q2, %kt2) @/b/MatMul
    %ss2: fp32[2,3,7] = Div(%sc2, %two) @/b/Div
    %p2: fp32[2,3,7] = Softmax(%ss2) {axis=2} @/b/Softmax
    %y2: fp32[2,3,5] = MatMul(%p2, %v2) @/b/MatMul_1
    output %y, %y2)IR",
             R"IR(
    input %q: fp32[3,5,4]
    input %k: fp32[3,5,4]
    input %v: fp32[3,5,4]
    input %q2: fp32[2,3,8]
    input %k2: fp32[2,7,8]
    input %v2: fp32[2,7,5]
    %y: fp32[3,5,4] = trn.Attention(%q, %k, %v) {causal=1, scale=1.0} @/a/Attention
    %y2: fp32[2,3,5] = trn.Attention(%q2, %k2, %v2) {causal=0, scale=0.5} @/b/Attention
    output %y, %y2)IR",
             1e-5);
}

TEST(GraphPassesFuseAttention, KvCacheConcatBecomesPairs) {
  // A decode step: keys and values are the cache concatenated with the new token's.
  check_pass("fuse_patterns", R"IR(
    input %q: fp32[2,1,8]
    input %kc: fp32[2,6,8]
    input %vc: fp32[2,6,4]
    input %kn: fp32[2,1,8]
    input %vn: fp32[2,1,4]
    const %s: fp32[] = [0.5]
    %k: fp32[2,7,8] = Concat(%kc, %kn) {axis=1} @/a/Concat
    %v: fp32[2,7,4] = Concat(%vc, %vn) {axis=1} @/a/Concat_1
    %kt: fp32[2,8,7] = Transpose(%k) {perm=[0,2,1]} @/a/Transpose
    %sc: fp32[2,1,7] = MatMul(%q, %kt) @/a/MatMul
    %ss: fp32[2,1,7] = Mul(%sc, %s) @/a/Mul
    %p: fp32[2,1,7] = Softmax(%ss) {axis=2} @/a/Softmax
    %y: fp32[2,1,4] = MatMul(%p, %v) @/a/MatMul_1
    output %y)IR",
             R"IR(
    input %q: fp32[2,1,8]
    input %kc: fp32[2,6,8]
    input %vc: fp32[2,6,4]
    input %kn: fp32[2,1,8]
    input %vn: fp32[2,1,4]
    %y: fp32[2,1,4] = trn.Attention(%q, %kc, %vc, %kn, %vn) {causal=0, scale=0.5} @/a/Attention
    output %y)IR",
             1e-5);
}

TEST(GraphPassesFuseAttention, OtherFormsAreLeftAlone) {
  // A mask that is not causal (one entry off), a mask value exp() does not
  // surely zero (-1e4), a softmax over another axis.
  std::string off = mask4("-1e+09");
  off.replace(off.find("0, 0, 0, 0]"), 10, "0, 0, -1e+09, 0");
  for (const std::string& body :
       {additive(off), additive(mask4("-10000")), additive(mask4("-1e+09"), "2")}) {
    ir::Graph src = parse_body(body);
    ir::Graph g = run_on_copy(src, {"fuse_patterns"});
    EXPECT_EQ(count_op(g, "trn.Attention"), 0) << body;
  }
  // The scores are also an output: the pattern is not self-contained.
  std::string shared = additive(mask4("-1e+09"));
  shared.replace(shared.find("output %y"), 9, "output %y, %sc");
  ir::Graph g = run_on_copy(parse_body(shared), {"fuse_patterns"});
  EXPECT_EQ(count_op(g, "trn.Attention"), 0);
}

TEST(GraphPassesFuseAttention, RotateHalfSignGoesIntoTheConstant) {
  // Rotary embeddings: x * cos + cat(-x[..., 2:], x[..., :2]) * sin. The Neg goes
  // into sin (negated over the first half); a Concat that is used twice keeps it.
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[2,3,4]
    const %sin: fp32[3,4] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    %hi: fp32[2,3,2] = Slice(%x) {axes=[2], ends=[4], starts=[2], steps=[1]} @/r/Slice
    %lo: fp32[2,3,2] = Slice(%x) {axes=[2], ends=[2], starts=[0], steps=[1]} @/r/Slice_1
    %n: fp32[2,3,2] = Neg(%hi) @/r/Neg
    %c: fp32[2,3,4] = Concat(%n, %lo) {axis=2} @/r/Concat
    %y: fp32[2,3,4] = Mul(%c, %sin) @/r/Mul
    %n2: fp32[2,3,2] = Neg(%lo) @/s/Neg
    %c2: fp32[2,3,4] = Concat(%n2, %hi) {axis=2} @/s/Concat
    %y2: fp32[2,3,4] = Mul(%c2, %sin) @/s/Mul
    %z: fp32[2,3,4] = Add(%y2, %c2) @/s/Add
    output %y, %z)IR",
             R"IR(
    input %x: fp32[2,3,4]
    const %sin: fp32[3,4] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    const %sin.signed: fp32[3,4] = [-1, -2, 3, 4, -5, -6, 7, 8, -9, -10, 11, 12]
    %hi: fp32[2,3,2] = Slice(%x) {axes=[2], ends=[4], starts=[2], steps=[1]} @/r/Slice
    %lo: fp32[2,3,2] = Slice(%x) {axes=[2], ends=[2], starts=[0], steps=[1]} @/r/Slice_1
    %c: fp32[2,3,4] = Concat(%hi, %lo) {axis=2} @/r/Concat
    %y: fp32[2,3,4] = Mul(%c, %sin.signed) @/r/Mul
    %n2: fp32[2,3,2] = Neg(%lo) @/s/Neg
    %c2: fp32[2,3,4] = Concat(%n2, %hi) {axis=2} @/s/Concat
    %y2: fp32[2,3,4] = Mul(%c2, %sin) @/s/Mul
    %z: fp32[2,3,4] = Add(%y2, %c2) @/s/Add
    output %y, %z)IR",
             0.0);
}

// Llama's attention over q, k, v [1,4,2,4] as the projections write them ([B, S, H, D]):
// heads moved first, rotary embeddings on q (rotate_half's sign already in sin) and k
// (torch's Neg form), causal attention, the output's heads moved back. `out_perm`, `out_shape`: the
// last Transpose's.
std::string llama_attention(const std::string& out_perm, const std::string& out_shape) {
  return R"IR(
    input %q: fp32[1,4,2,4]
    input %k: fp32[1,4,2,4]
    input %v: fp32[1,4,2,4]
    const %cos: fp32[4,4] = [1, 1, 1, 1, 0.5, 0.25, 0.5, 0.25, -0.5, 0.75, -0.5, 0.75, -1, 0.5, -1, 0.5]
    const %sin: fp32[4,4] = [0, 0, 0, 0, -0.5, -0.75, 0.5, 0.75, -0.25, -0.5, 0.25, 0.5, 0, -1, 0, 1]
    const %sin_k: fp32[4,4] = [0, 0, 0, 0, 0.5, 0.75, 0.5, 0.75, 0.25, 0.5, 0.25, 0.5, 0, 1, 0, 1]
    const %s: fp32[] = [0.5]
    const %m: fp32[4,4] = )IR" +
         mask4("-1e+09") + R"IR(
    %qt: fp32[1,2,4,4] = Transpose(%q) {perm=[0,2,1,3]} @/attn/Transpose
    %kt0: fp32[1,2,4,4] = Transpose(%k) {perm=[0,2,1,3]} @/attn/Transpose_1
    %vt: fp32[1,2,4,4] = Transpose(%v) {perm=[0,2,1,3]} @/attn/Transpose_2
    %qhi: fp32[1,2,4,2] = Slice(%qt) {axes=[3], ends=[9223372036854775807], starts=[2], steps=[1]} @/attn/Slice
    %qlo: fp32[1,2,4,2] = Slice(%qt) {axes=[3], ends=[2], starts=[0], steps=[1]} @/attn/Slice_1
    %qc: fp32[1,2,4,4] = Concat(%qhi, %qlo) {axis=3} @/attn/Concat
    %qa: fp32[1,2,4,4] = Mul(%qt, %cos) @/attn/Mul
    %qb: fp32[1,2,4,4] = Mul(%qc, %sin) @/attn/Mul_1
    %qr: fp32[1,2,4,4] = Add(%qa, %qb) @/attn/Add
    %khi: fp32[1,2,4,2] = Slice(%kt0) {axes=[3], ends=[4], starts=[-2], steps=[1]} @/attn/Slice_2
    %klo: fp32[1,2,4,2] = Slice(%kt0) {axes=[3], ends=[2], starts=[0], steps=[1]} @/attn/Slice_3
    %kn: fp32[1,2,4,2] = Neg(%khi) @/attn/Neg
    %kc: fp32[1,2,4,4] = Concat(%kn, %klo) {axis=3} @/attn/Concat_1
    %ka: fp32[1,2,4,4] = Mul(%cos, %kt0) @/attn/Mul_2
    %kb: fp32[1,2,4,4] = Mul(%sin_k, %kc) @/attn/Mul_3
    %kr: fp32[1,2,4,4] = Add(%kb, %ka) @/attn/Add_1
    %kt: fp32[1,2,4,4] = Transpose(%kr) {perm=[0,1,3,2]} @/attn/Transpose_3
    %sc: fp32[1,2,4,4] = MatMul(%qr, %kt) @/attn/MatMul
    %ss: fp32[1,2,4,4] = Mul(%sc, %s) @/attn/Mul_4
    %sm: fp32[1,2,4,4] = Add(%ss, %m) @/attn/Add_2
    %p: fp32[1,2,4,4] = Softmax(%sm) {axis=3} @/attn/Softmax
    %o: fp32[1,2,4,4] = MatMul(%p, %vt) @/attn/MatMul_1
    %y: fp32)IR" +
         out_shape + " = Transpose(%o) {perm=" + out_perm + R"IR(} @/attn/Transpose_4
    output %y)IR";
}

TEST(GraphPassesFuseAttention, RotaryAndHeadTransposesGoIntoTheNode) {
  // q, k, v stay [B, S, H, D]: no head transpose, no rotated copy of q or k.
  PassContext ctx;
  check_pass("fuse_patterns", llama_attention("[0,2,1,3]", "[1,4,2,4]"), R"IR(
    input %q: fp32[1,4,2,4]
    input %k: fp32[1,4,2,4]
    input %v: fp32[1,4,2,4]
    const %cos: fp32[4,4] = [1, 1, 1, 1, 0.5, 0.25, 0.5, 0.25, -0.5, 0.75, -0.5, 0.75, -1, 0.5, -1, 0.5]
    const %sin: fp32[4,4] = [0, 0, 0, 0, -0.5, -0.75, 0.5, 0.75, -0.25, -0.5, 0.25, 0.5, 0, -1, 0, 1]
    const %sin_k.signed: fp32[4,4] = [-0, -0, 0, 0, -0.5, -0.75, 0.5, 0.75, -0.25, -0.5, 0.25, 0.5, -0, -1, 0, 1]
    %y: fp32[1,4,2,4] = trn.Attention(%q, %k, %v, %cos, %sin, %cos, %sin_k.signed) {causal=1, rotary=1, scale=0.5, seq_first=1} @/attn/Attention
    output %y)IR",
             1e-5, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.Attention"], 2);  // check_pass runs the pass twice
}

TEST(GraphPassesFuseAttention, RotaryWithoutTheOutputTranspose) {
  // The output keeps heads first ([0,1,2,3] is no head swap): the rotary tables still
  // go into the node, the input transposes stay.
  ir::Graph g =
      run_on_copy(parse_body(llama_attention("[0,1,2,3]", "[1,2,4,4]")), {"fuse_patterns"});
  EXPECT_EQ(count_op(g, "trn.Attention"), 1);
  EXPECT_EQ(count_op(g, "Transpose"), 4);
  EXPECT_EQ(count_op(g, "Concat"), 0);
  for (const auto& n : g.nodes())
    if (n->op == "trn.Attention") {
      EXPECT_EQ(n->attr_int("rotary", 0), 1);
      EXPECT_EQ(n->attr_int("seq_first", 0), 0);
      EXPECT_EQ(n->inputs.size(), 7u);
    }
  // A rotation table that is not a constant is left to the elementwise ops.
  std::string body = llama_attention("[0,2,1,3]", "[1,4,2,4]");
  const size_t at = body.find("const %cos"), end = body.find('\n', at);
  body.replace(at, end - at, "input %cos: fp32[4,4]");
  ir::Graph g2 = run_on_copy(parse_body(body), {"fuse_patterns"});
  EXPECT_EQ(count_op(g2, "trn.Attention"), 1);
  EXPECT_EQ(count_op(g2, "Concat"), 2);
  for (const auto& n : g2.nodes())
    if (n->op == "trn.Attention") {
      EXPECT_EQ(n->attr_int("rotary", 0), 0);
      EXPECT_EQ(n->attr_int("seq_first", 0), 0);
    }
}

TEST(GraphPassesFuseAttention, HeadsLastKeysInOneTranspose) {
  // torch writes K^T of [B, S, H, D] as one Transpose (heads and the last two axes):
  // with the output's heads moved back, the node reads K in place too.
  const std::string body = R"IR(
    input %q: fp32[1,4,2,4]
    input %k: fp32[1,4,2,4]
    input %v: fp32[1,4,2,3]
    const %s: fp32[] = [0.5]
    %qt: fp32[1,2,4,4] = Transpose(%q) {perm=[0,2,1,3]} @/a/Transpose
    %vt: fp32[1,2,4,3] = Transpose(%v) {perm=[0,2,1,3]} @/a/Transpose_1
    %kt: fp32[1,2,4,4] = Transpose(%k) {perm=[0,2,3,1]} @/a/Transpose_2
    %sc: fp32[1,2,4,4] = MatMul(%qt, %kt) @/a/MatMul
    %ss: fp32[1,2,4,4] = Mul(%sc, %s) @/a/Mul
    %p: fp32[1,2,4,4] = Softmax(%ss) {axis=3} @/a/Softmax
    %o: fp32[1,2,4,3] = MatMul(%p, %vt) @/a/MatMul_1
    %y: fp32[1,4,2,3] = Transpose(%o) {perm=[0,2,1,3]} @/a/Transpose_3
    output %y)IR";
  check_pass("fuse_patterns", body, R"IR(
    input %q: fp32[1,4,2,4]
    input %k: fp32[1,4,2,4]
    input %v: fp32[1,4,2,3]
    %y: fp32[1,4,2,3] = trn.Attention(%q, %k, %v) {causal=0, scale=0.5, seq_first=1} @/a/Attention
    output %y)IR",
             1e-5);
  // The output left heads first: the node cannot read K in place, so K's one
  // Transpose is split (heads first, then K^T, attention_forms) and the node reads
  // the heads-first tensors.
  std::string first = body;
  const std::string last = "%y: fp32[1,4,2,3] = Transpose(%o) {perm=[0,2,1,3]}";
  first.replace(first.find(last), last.size(),
                "%y: fp32[1,2,4,3] = Transpose(%o) {perm=[0,1,2,3]}");
  ir::Graph g = run_on_copy(parse_body(first), {"fuse_patterns"});
  EXPECT_EQ(count_op(g, "trn.Attention"), 1);
  for (const auto& n : g.nodes())
    if (n->op == "trn.Attention") {
      EXPECT_EQ(n->attr_int("seq_first", 0), 0);
    }
}

}  // namespace
}  // namespace trnsim::graph_passes::testing
