// fuse_patterns: attention as GPT-2-style code and nn.MultiheadAttention export it --
// K's head transpose and the K^T swap in one Transpose, the scale applied to Q -- is
// brought to the matcher's form and fused. Each fused graph computes what the
// unfused one does (the interpreter on random inputs).
#include <gtest/gtest.h>

#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes::testing {
namespace {

TEST(GraphPassesAttentionForms, CombinedHeadTransposeOfK) {
  // k.reshape(B, S, H, D).transpose(1, 2).transpose(-2, -1) exported as one
  // Transpose{perm=[0,2,3,1]} of [B, S, H, D]; causal additive mask.
  PassContext ctx;
  check_pass("fuse_patterns", R"IR(
    input %q: fp32[1,2,4,8]
    input %k: fp32[1,4,2,8]
    input %v: fp32[1,2,4,6]
    const %s: fp32[] = [0.353553385]
    const %m: fp32[4,4] = [0, -1e+09, -1e+09, -1e+09, 0, 0, -1e+09, -1e+09, 0, 0, 0, -1e+09, 0, 0, 0, 0]
    %kt: fp32[1,2,8,4] = Transpose(%k) {perm=[0,2,3,1]} @/attn/Transpose
    %sc: fp32[1,2,4,4] = MatMul(%q, %kt) @/attn/MatMul
    %ss: fp32[1,2,4,4] = Mul(%sc, %s) @/attn/Mul
    %sm: fp32[1,2,4,4] = Add(%ss, %m) @/attn/Add
    %p: fp32[1,2,4,4] = Softmax(%sm) {axis=3} @/attn/Softmax
    %y: fp32[1,2,4,6] = MatMul(%p, %v) @/attn/MatMul_1
    output %y)IR",
             R"IR(
    input %q: fp32[1,2,4,8]
    input %k: fp32[1,4,2,8]
    input %v: fp32[1,2,4,6]
    %kt.heads: fp32[1,2,4,8] = Transpose(%k) {perm=[0,2,1,3]} @/attn/Transpose_heads
    %y: fp32[1,2,4,6] = trn.Attention(%q, %kt.heads, %v) {causal=1, scale=0.353553385} @/attn/Attention
    output %y)IR",
             1e-5, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.Attention"], 2);  // check_pass runs the pass twice
  EXPECT_EQ(ctx.stats["fuse_patterns.AttentionKTransposeSplit"], 2);
}

TEST(GraphPassesAttentionForms, ScaleOnQueriesAndHeadsFirstTranspose) {
  // nn.MultiheadAttention: q / sqrt(D) (a Mul by the reciprocal after canonicalize),
  // then bmm(q, k.transpose(-2, -1)) with k in [S, H, D] moved to [H, D, S] at once.
  PassContext ctx;
  check_pass("fuse_patterns", R"IR(
    input %q: fp32[2,5,8]
    input %k: fp32[5,2,8]
    input %v: fp32[2,5,4]
    const %r: fp32[] = [0.353553385]
    %qs: fp32[2,5,8] = Mul(%q, %r) @/mha/Div_1
    %kt: fp32[2,8,5] = Transpose(%k) {perm=[1,2,0]} @/mha/Transpose_3
    %sc: fp32[2,5,5] = MatMul(%qs, %kt) @/mha/MatMul_1
    %p: fp32[2,5,5] = Softmax(%sc) {axis=2} @/mha/Softmax
    %y: fp32[2,5,4] = MatMul(%p, %v) @/mha/MatMul_2
    output %y)IR",
             R"IR(
    input %q: fp32[2,5,8]
    input %k: fp32[5,2,8]
    input %v: fp32[2,5,4]
    %kt.heads: fp32[2,5,8] = Transpose(%k) {perm=[1,0,2]} @/mha/Transpose_3_heads
    %y: fp32[2,5,4] = trn.Attention(%q, %kt.heads, %v) {causal=0, scale=0.353553385} @/mha/Attention
    output %y)IR",
             1e-5, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.AttentionScaleMoved"], 2);
}

TEST(GraphPassesAttentionForms, NotAttentionIsLeftAlone) {
  // The same scaled Q and combined Transpose, but the softmax is an output (no
  // P @ V): nothing moves. The scaled Q is also an output: the scale stays, and the
  // attention reads the scaled Q.
  const std::string body = R"IR(
    input %q: fp32[2,5,8]
    input %k: fp32[5,2,8]
    const %r: fp32[] = [0.353553385]
    %qs: fp32[2,5,8] = Mul(%q, %r) @/a/Mul
    %kt: fp32[2,8,5] = Transpose(%k) {perm=[1,2,0]} @/a/Transpose
    %sc: fp32[2,5,5] = MatMul(%qs, %kt) @/a/MatMul
    %p: fp32[2,5,5] = Softmax(%sc) {axis=2} @/a/Softmax
    output %p)IR";
  check_pass("fuse_patterns", body, body);
  const std::string shared = R"IR(
    input %q: fp32[2,5,8]
    input %k: fp32[2,5,8]
    input %v: fp32[2,5,4]
    const %r: fp32[] = [0.353553385]
    %qs: fp32[2,5,8] = Mul(%q, %r) @/a/Mul
    %kt: fp32[2,8,5] = Transpose(%k) {perm=[0,2,1]} @/a/Transpose
    %sc: fp32[2,5,5] = MatMul(%qs, %kt) @/a/MatMul
    %p: fp32[2,5,5] = Softmax(%sc) {axis=2} @/a/Softmax
    %y: fp32[2,5,4] = MatMul(%p, %v) @/a/MatMul_1
    output %y, %qs)IR";
  PassContext ctx;
  ir::Graph g = run_on_copy(parse_body(shared), {"fuse_patterns"}, &ctx);
  EXPECT_EQ(ctx.stats["fuse_patterns.AttentionScaleMoved"], 0);
  EXPECT_EQ(count_op(g, "trn.Attention"), 1);
  EXPECT_EQ(count_op(g, "Mul"), 1);
}

}  // namespace
}  // namespace trnsim::graph_passes::testing
