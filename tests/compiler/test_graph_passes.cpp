// Graph passes one at a time on hand-written IR: the text after the pass, and the
// reference interpreter's outputs before and after on random inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/text.h"
#include "compiler/ir/trn_ops.h"
#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes {
namespace {

using namespace testing;

// ---------------------------------------------------------------------------
// canonicalize

TEST(GraphPassesCanonicalize, IdentityAndNeutralArithmetic) {
  // x*1, 0+x, x-0, Identity and Cast to fp32 of fp32 go; x + zeros[2,2,3] stays
  // because it broadcasts x up to [2,2,3].
  check_pass("canonicalize", R"IR(
    input %x: fp32[2,3]
    const %one: fp32[] = [1]
    const %zero: fp32[3] = [0, 0, 0]
    const %zb: fp32[2,2,3] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    %i: fp32[2,3] = Identity(%x) @id
    %a: fp32[2,3] = Cast(%i) {to="fp32"} @cast
    %b: fp32[2,3] = Mul(%a, %one) @mul1
    %c: fp32[2,3] = Add(%zero, %b) @add0
    %d: fp32[2,3] = Relu(%c) @relu
    %e: fp32[2,3] = Sub(%d, %zero) @sub0
    %f: fp32[2,2,3] = Add(%e, %zb) @bcast
    output %f)IR",
             R"IR(
    input %x: fp32[2,3]
    const %zb: fp32[2,2,3] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    %d: fp32[2,3] = Relu(%x) @relu
    %f: fp32[2,2,3] = Add(%d, %zb) @bcast
    output %f)IR");
}

TEST(GraphPassesCanonicalize, SubDivByConstantsAndConstantsSecond) {
  // x - 4 -> x + (-4); x / [1,2,4,8] -> x * [1,.5,.25,.125] (exact: powers of 2);
  // 1 / y -> Reciprocal(y); 4 * r -> r * 4.
  check_pass("canonicalize", R"IR(
    input %x: fp32[4]
    input %y: fp32[4]
    const %c: fp32[] = [4]
    const %two: fp32[4] = [1, 2, 4, 8]
    const %ones: fp32[] = [1]
    %a: fp32[4] = Sub(%x, %c) @sub
    %b: fp32[4] = Div(%a, %two) @div
    %r: fp32[4] = Div(%ones, %y) @recip
    %m: fp32[4] = Mul(%c, %r) @mul
    %s: fp32[4] = Add(%b, %m) @sum
    output %s)IR",
             R"IR(
    input %x: fp32[4]
    input %y: fp32[4]
    const %c: fp32[] = [4]
    const %c.neg: fp32[] = [-4]
    const %two.recip: fp32[4] = [1, 0.5, 0.25, 0.125]
    %a: fp32[4] = Add(%x, %c.neg) @sub
    %b: fp32[4] = Mul(%a, %two.recip) @div
    %r: fp32[4] = Reciprocal(%y) @recip
    %m: fp32[4] = Mul(%r, %c) @mul
    %s: fp32[4] = Add(%b, %m) @sum
    output %s)IR");
}

TEST(GraphPassesCanonicalize, IntegerArithmeticIsLeftAlone) {
  // Integer Div truncates: x / 2 is not x * 0.5.
  const char* body = R"IR(
    input %x: int64[3]
    const %two: int64[] = [2]
    %y: int64[3] = Div(%x, %two) @div
    output %y)IR";
  ir::Graph g = run_on_copy(parse_body(body), {"canonicalize"});
  EXPECT_EQ(ir::print_graph(g), canon(body));
}

TEST(GraphPassesCanonicalize, ReshapeChainsBecomeOneReshape) {
  // Flatten -> Unsqueeze -> Reshape is one Reshape of x; Reshape to the same shape,
  // then Unsqueeze -> Squeeze back are removed, and the graph output keeps its name.
  check_pass("canonicalize", R"IR(
    input %x: fp32[2,3,4]
    %a: fp32[2,12] = Flatten(%x) {axis=1} @flat
    %b: fp32[2,1,12] = Unsqueeze(%a) {axes=[1]} @unsq
    %c: fp32[6,4] = Reshape(%b) {shape=[6,4]} @rs
    %d: fp32[6,4] = Relu(%c) @relu
    %e: fp32[6,4] = Reshape(%d) {shape=[6,4]} @same
    %f: fp32[1,6,4] = Unsqueeze(%e) {axes=[0]} @u2
    %g: fp32[6,4] = Squeeze(%f) {axes=[0]} @sq
    output %g)IR",
             R"IR(
    input %x: fp32[2,3,4]
    %c: fp32[6,4] = Reshape(%x) {shape=[6,4]} @rs
    %g: fp32[6,4] = Relu(%c) @relu
    output %g)IR");
}

TEST(GraphPassesCanonicalize, TransposePairsCompose) {
  // perm [1,2,0] then [1,0,2]: out[i] = x[[1,2,0][[1,0,2][i]]] = perm [2,1,0].
  // [1,0,2] twice is the identity and goes.
  check_pass("canonicalize", R"IR(
    input %x: fp32[2,3,4]
    %a: fp32[3,4,2] = Transpose(%x) {perm=[1,2,0]} @t1
    %b: fp32[4,3,2] = Transpose(%a) {perm=[1,0,2]} @t2
    %c: fp32[4,3,2] = Relu(%b) @relu
    %d: fp32[3,4,2] = Transpose(%c) {perm=[1,0,2]} @t3
    %e: fp32[4,3,2] = Transpose(%d) {perm=[1,0,2]} @t4
    output %e)IR",
             R"IR(
    input %x: fp32[2,3,4]
    %b: fp32[4,3,2] = Transpose(%x) {perm=[2,1,0]} @t2
    %e: fp32[4,3,2] = Relu(%b) @relu
    output %e)IR");
}

TEST(GraphPassesCanonicalize, FoldsConstantsAndErasesDeadNodes) {
  // Folded constants keep the folded value's name; %dead feeds no output.
  check_pass("canonicalize", R"IR(
    input %x: fp32[2,2]
    const %a: fp32[2] = [1, 2]
    const %b: fp32[2] = [3, 4]
    const %unused: fp32[2] = [9, 9]
    %s: fp32[2] = Add(%a, %b) @fold_add
    %n: fp32[2] = Neg(%s) @fold_neg
    %y: fp32[2,2] = Mul(%x, %n) @mul
    %dead: fp32[2,2] = Exp(%x) @dead
    output %y)IR",
             R"IR(
    input %x: fp32[2,2]
    const %n: fp32[2] = [-4, -6]
    %y: fp32[2,2] = Mul(%x, %n) @mul
    output %y)IR");
}

TEST(GraphPassesCanonicalize, GemmBecomesMatMulPlusBias) {
  // transB with a constant B: B is transposed at compile time. A Gemm with
  // alpha != 1 or a non-constant transposed B stays.
  check_pass("canonicalize", R"IR(
    input %x: fp32[2,3]
    input %w2: fp32[4,3]
    const %w: fp32[4,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    const %b: fp32[4] = [0.5, -1, 2, 0]
    %y: fp32[2,4] = Gemm(%x, %w, %b) {transB=1} @fc
    %z: fp32[2,4] = Gemm(%x, %w2, _) {transB=1} @fc2
    %u: fp32[2,4] = Gemm(%x, %w, %b) {alpha=0.5, transB=1} @fc3
    output %y, %z, %u)IR",
             R"IR(
    input %x: fp32[2,3]
    input %w2: fp32[4,3]
    const %w: fp32[4,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    const %b: fp32[4] = [0.5, -1, 2, 0]
    const %w.T: fp32[3,4] = [1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12]
    %y.mm: fp32[2,4] = MatMul(%x, %w.T) @fc
    %y: fp32[2,4] = Add(%y.mm, %b) @fc/bias
    %z: fp32[2,4] = Gemm(%x, %w2, _) {alpha=1.0, beta=1.0, transA=0, transB=1} @fc2
    %u: fp32[2,4] = Gemm(%x, %w, %b) {alpha=0.5, beta=1.0, transA=0, transB=1} @fc3
    output %y, %z, %u)IR");
}

TEST(GraphPassesCanonicalize, BatchNormFoldsIntoConvOrBecomesAffine) {
  // eps = 0, so s = scale / sqrt(var) = [2/1, 1/2, 1/0.5] = [2, 0.5, 2] and
  // t = bias - mean * s = [0 - 0.5*2, 1 + 0.5*0.5, -1 - 0] = [-1, 1.25, -1].
  // Conv: W' = W * s[out channel] = [1,2]*2, [3,4]*0.5, [5,6]*2; b' = b*s + t =
  // [0.5*2 - 1, 0.25*0.5 + 1.25, -0.5*2 - 1] = [0, 1.375, -2].
  // Standalone BN on %x (2 channels): s = [1/2, 1/1], t = [-1*0.5, -2*1].
  check_pass("canonicalize", R"IR(
    input %x: fp32[1,2,3,3]
    const %w: fp32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
    const %cb: fp32[3] = [0.5, 0.25, -0.5]
    const %s: fp32[3] = [2, 1, 1]
    const %bb: fp32[3] = [0, 1, -1]
    const %m: fp32[3] = [0.5, -0.5, 0]
    const %v: fp32[3] = [1, 4, 0.25]
    const %s2: fp32[2] = [1, 1]
    const %b2: fp32[2] = [0, 0]
    const %m2: fp32[2] = [1, 2]
    const %v2: fp32[2] = [4, 1]
    %c: fp32[1,3,3,3] = Conv(%x, %w, %cb) @conv
    %y: fp32[1,3,3,3] = BatchNormalization(%c, %s, %bb, %m, %v) {epsilon=0.0} @bn
    %z: fp32[1,2,3,3] = BatchNormalization(%x, %s2, %b2, %m2, %v2) {epsilon=0.0} @bn2
    output %y, %z)IR",
             R"IR(
    input %x: fp32[1,2,3,3]
    const %w.bn: fp32[3,2,1,1] = [2, 4, 1.5, 2, 10, 12]
    const %cb.bn_bias: fp32[3] = [0, 1.375, -2]
    const %s2.bn_scale: fp32[2,1,1] = [0.5, 1]
    const %b2.bn_shift: fp32[2,1,1] = [-0.5, -2]
    %y: fp32[1,3,3,3] = Conv(%x, %w.bn, %cb.bn_bias) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} @conv
    %z.scaled: fp32[1,2,3,3] = Mul(%x, %s2.bn_scale) @bn2/scale
    %z: fp32[1,2,3,3] = Add(%z.scaled, %b2.bn_shift) @bn2/shift
    output %y, %z)IR",
             1e-5);
}

TEST(GraphPassesCanonicalize, GraphOutputsKeepTheirNames) {
  // Identity(%a) -> %a takes the name %y. Identity of a graph input, and an
  // Identity between two graph outputs, must stay: each output needs its own name.
  check_pass("canonicalize", R"IR(
    input %x: fp32[3]
    %a: fp32[3] = Relu(%x) @relu
    %y: fp32[3] = Identity(%a) @id
    %z: fp32[3] = Identity(%x) @id2
    %b: fp32[3] = Exp(%x) @exp
    %w: fp32[3] = Identity(%b) @id3
    output %y, %z, %b, %w)IR",
             R"IR(
    input %x: fp32[3]
    %y: fp32[3] = Relu(%x) @relu
    %z: fp32[3] = Identity(%x) @id2
    %b: fp32[3] = Exp(%x) @exp
    %w: fp32[3] = Identity(%b) @id3
    output %y, %z, %b, %w)IR");
}

TEST(GraphPassesCanonicalize, IsIdempotent) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[2,3]
    const %w: fp32[4,3]
    const %b: fp32[4]
    const %c: fp32[] = [2]
    %h: fp32[2,4] = Gemm(%x, %w, %b) {transB=1} @fc
    %d: fp32[2,4] = Div(%h, %c) @div
    %t: fp32[4,2] = Transpose(%d) @t
    %y: fp32[1,8] = Flatten(%t) {axis=0} @flat
    output %y)IR");
  fill_constants(g, 3);
  ir::Graph once = run_on_copy(g, {"canonicalize"});
  ir::Graph twice = run_on_copy(once, {"canonicalize"});
  EXPECT_EQ(ir::print_graph(once), ir::print_graph(twice));
  expect_same_outputs(g, once, 1e-6);
}

// ---------------------------------------------------------------------------
// fuse_patterns

TEST(GraphPassesFusePatterns, GeluErfAsTorchWritesIt) {
  // torch 1.13: Div(x, sqrt2) -> Erf -> Add 1 -> Mul(x, .) -> Mul(., 0.5).
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[2,8]
    const %sqrt2: fp32[] = [1.41421354]
    const %one: fp32[] = [1]
    const %half: fp32[] = [0.5]
    %d: fp32[2,8] = Div(%x, %sqrt2) @/act/Div
    %e: fp32[2,8] = Erf(%d) @/act/Erf
    %a: fp32[2,8] = Add(%e, %one) @/act/Add
    %m: fp32[2,8] = Mul(%x, %a) @/act/Mul
    %y: fp32[2,8] = Mul(%m, %half) @/act/Mul_1
    output %y)IR",
             R"IR(
    input %x: fp32[2,8]
    %y: fp32[2,8] = trn.Gelu(%x) {approximate="none"} @/act/Gelu
    output %y)IR",
             1e-6);
}

TEST(GraphPassesFusePatterns, GeluErfOtherOrdersAndCanonicalizedDiv) {
  // x * 0.5 * (1 + erf(x * 0.70710678)): the Mul-by-reciprocal form canonicalize
  // makes, constants first, a different Mul tree shape.
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[3,5]
    const %rs2: fp32[] = [0.707106769]
    const %one: fp32[1] = [1]
    const %half: fp32[] = [0.5]
    %d: fp32[3,5] = Mul(%rs2, %x) @d
    %e: fp32[3,5] = Erf(%d) @e
    %a: fp32[3,5] = Add(%one, %e) @a
    %h: fp32[3,5] = Mul(%x, %half) @h
    %y: fp32[3,5] = Mul(%h, %a) @y
    output %y)IR",
             R"IR(
    input %x: fp32[3,5]
    %y: fp32[3,5] = trn.Gelu(%x) {approximate="none"} @Gelu
    output %y)IR",
             1e-6);
}

TEST(GraphPassesFusePatterns, GeluTanhTorchCubeAndPowForms) {
  // torch: x*(x*x); hand-written GELUs: Pow(x, 3).
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[2,8]
    const %k: fp32[] = [0.0447149985]
    const %c: fp32[] = [0.797884583]
    const %one: fp32[] = [1]
    const %half: fp32[] = [0.5]
    const %three: fp32[] = [3]
    %sq: fp32[2,8] = Mul(%x, %x) @/g/Mul
    %cu: fp32[2,8] = Mul(%x, %sq) @/g/Mul_1
    %kc: fp32[2,8] = Mul(%k, %cu) @/g/Mul_2
    %in: fp32[2,8] = Add(%x, %kc) @/g/Add
    %u: fp32[2,8] = Mul(%c, %in) @/g/Mul_3
    %t: fp32[2,8] = Tanh(%u) @/g/Tanh
    %a: fp32[2,8] = Add(%one, %t) @/g/Add_1
    %m: fp32[2,8] = Mul(%x, %a) @/g/Mul_4
    %y: fp32[2,8] = Mul(%half, %m) @/g/Mul_5
    %p: fp32[2,8] = Pow(%y, %three) @/h/Pow
    %kp: fp32[2,8] = Mul(%p, %k) @/h/Mul
    %in2: fp32[2,8] = Add(%kp, %y) @/h/Add
    %u2: fp32[2,8] = Mul(%in2, %c) @/h/Mul_1
    %t2: fp32[2,8] = Tanh(%u2) @/h/Tanh
    %a2: fp32[2,8] = Add(%t2, %one) @/h/Add_1
    %h2: fp32[2,8] = Mul(%y, %half) @/h/Mul_2
    %z: fp32[2,8] = Mul(%h2, %a2) @/h/Mul_3
    output %z)IR",
             R"IR(
    input %x: fp32[2,8]
    %y: fp32[2,8] = trn.Gelu(%x) {approximate="tanh"} @/g/Gelu
    %z: fp32[2,8] = trn.Gelu(%y) {approximate="tanh"} @/h/Gelu
    output %z)IR",
             1e-6);
}

TEST(GraphPassesFusePatterns, NearMissesAreLeftAlone) {
  // Div by 1.5 instead of sqrt2; tanh form with 0.05 instead of 0.044715; an Erf
  // whose result is also a graph output; a Sigmoid of another value.
  const char* body = R"IR(
    input %x: fp32[2,4]
    input %w: fp32[2,4]
    const %c: fp32[] = [1.5]
    const %sqrt2: fp32[] = [1.41421354]
    const %one: fp32[] = [1]
    const %half: fp32[] = [0.5]
    const %k: fp32[] = [0.05]
    const %r: fp32[] = [0.797884583]
    %d: fp32[2,4] = Div(%x, %c) @d
    %e: fp32[2,4] = Erf(%d) @e
    %a: fp32[2,4] = Add(%e, %one) @a
    %m: fp32[2,4] = Mul(%x, %a) @m
    %y1: fp32[2,4] = Mul(%m, %half) @y1
    %cu: fp32[2,4] = Mul(%x, %x) @cu
    %cu2: fp32[2,4] = Mul(%cu, %x) @cu2
    %kc: fp32[2,4] = Mul(%cu2, %k) @kc
    %in: fp32[2,4] = Add(%x, %kc) @in
    %u: fp32[2,4] = Mul(%in, %r) @u
    %t: fp32[2,4] = Tanh(%u) @t
    %ta: fp32[2,4] = Add(%t, %one) @ta
    %tm: fp32[2,4] = Mul(%x, %ta) @tm
    %y2: fp32[2,4] = Mul(%tm, %half) @y2
    %d3: fp32[2,4] = Div(%x, %sqrt2) @d3
    %e3: fp32[2,4] = Erf(%d3) @e3
    %a3: fp32[2,4] = Add(%e3, %one) @a3
    %m3: fp32[2,4] = Mul(%x, %a3) @m3
    %y3: fp32[2,4] = Mul(%m3, %half) @y3
    %s: fp32[2,4] = Sigmoid(%w) @s
    %y4: fp32[2,4] = Mul(%x, %s) @y4
    output %y1, %y2, %y3, %e3, %y4)IR";
  PassContext ctx;
  ir::Graph g = run_on_copy(parse_body(body), {"fuse_patterns"}, &ctx);
  EXPECT_EQ(ir::print_graph(g), canon(body));
  EXPECT_TRUE(ctx.stats.empty());
}

TEST(GraphPassesFusePatterns, LayerNormDecomposedAndOpset17) {
  // torch's opset < 17 LayerNorm with gamma/beta; the opset 17 op with unused
  // statistics; one without affine parameters over the last two axes.
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[2,3,8]
    const %two: fp32[] = [2]
    const %eps: fp32[] = [9.99999975e-06]
    const %g: fp32[8] = [1, 0.5, 2, 1.5, 1, 1, 0.25, 3]
    const %b: fp32[8] = [0, 1, -1, 0.5, 0, 0, 2, -2]
    %mu: fp32[2,3,1] = ReduceMean(%x) {axes=[2]} @/ln/ReduceMean
    %d: fp32[2,3,8] = Sub(%x, %mu) @/ln/Sub
    %p: fp32[2,3,8] = Pow(%d, %two) @/ln/Pow
    %var: fp32[2,3,1] = ReduceMean(%p) {axes=[-1]} @/ln/ReduceMean_1
    %ve: fp32[2,3,1] = Add(%var, %eps) @/ln/Add
    %sd: fp32[2,3,1] = Sqrt(%ve) @/ln/Sqrt
    %n: fp32[2,3,8] = Div(%d, %sd) @/ln/Div
    %ng: fp32[2,3,8] = Mul(%n, %g) @/ln/Mul
    %y: fp32[2,3,8] = Add(%ng, %b) @/ln/Add_1
    %z: fp32[2,3,8] = LayerNormalization(%y, %g, %b) {epsilon=0.001} @ln17
    %mu2: fp32[2,1,1] = ReduceMean(%z) {axes=[1,2]} @m2
    %d2: fp32[2,3,8] = Sub(%z, %mu2) @s2
    %q2: fp32[2,3,8] = Mul(%d2, %d2) @q2
    %var2: fp32[2,1,1] = ReduceMean(%q2) {axes=[1,2]} @v2
    %ve2: fp32[2,1,1] = Add(%eps, %var2) @e2
    %sd2: fp32[2,1,1] = Sqrt(%ve2) @r2
    %inv2: fp32[2,1,1] = Reciprocal(%sd2) @i2
    %w: fp32[2,3,8] = Mul(%inv2, %d2) @n2
    output %w)IR",
             R"IR(
    input %x: fp32[2,3,8]
    const %g: fp32[8] = [1, 0.5, 2, 1.5, 1, 1, 0.25, 3]
    const %b: fp32[8] = [0, 1, -1, 0.5, 0, 0, 2, -2]
    %y: fp32[2,3,8] = trn.LayerNorm(%x, %g, %b) {axis=2, epsilon=9.99999975e-06} @/ln/LayerNorm
    %z: fp32[2,3,8] = trn.LayerNorm(%y, %g, %b) {axis=2, epsilon=0.001} @LayerNorm
    %w: fp32[2,3,8] = trn.LayerNorm(%z) {axis=1, epsilon=9.99999975e-06} @LayerNorm
    output %w)IR",
             1e-5);
}

TEST(GraphPassesFusePatterns, LayerNormOverWrongAxesIsLeftAlone) {
  // Mean over axis 1 of [2,3,8] is not a trailing-axes norm; the second mean is
  // over a different axis than the first.
  const char* body = R"IR(
    input %x: fp32[2,3,8]
    const %two: fp32[] = [2]
    const %eps: fp32[] = [1e-05]
    %mu: fp32[2,1,8] = ReduceMean(%x) {axes=[1]} @mu
    %d: fp32[2,3,8] = Sub(%x, %mu) @d
    %p: fp32[2,3,8] = Pow(%d, %two) @p
    %var: fp32[2,1,8] = ReduceMean(%p) {axes=[1]} @var
    %ve: fp32[2,1,8] = Add(%var, %eps) @ve
    %sd: fp32[2,1,8] = Sqrt(%ve) @sd
    %y: fp32[2,3,8] = Div(%d, %sd) @y
    %mu2: fp32[2,3,1] = ReduceMean(%x) {axes=[2]} @mu2
    %d2: fp32[2,3,8] = Sub(%x, %mu2) @d2
    %p2: fp32[2,3,8] = Pow(%d2, %two) @p2
    %var2: fp32[2,1,1] = ReduceMean(%p2) {axes=[1,2]} @var2
    %ve2: fp32[2,1,1] = Add(%var2, %eps) @ve2
    %sd2: fp32[2,1,1] = Sqrt(%ve2) @sd2
    %z: fp32[2,3,8] = Div(%d2, %sd2) @z
    output %y, %z)IR";
  PassContext ctx;
  ir::Graph g = run_on_copy(parse_body(body), {"fuse_patterns"}, &ctx);
  EXPECT_EQ(count_op(g, "trn.LayerNorm"), 0);
  // The second one's numerator d2 is normalised by a mean over [1,2]: it is an
  // RMSNorm of d2 over those axes, which is what it computes.
  EXPECT_EQ(count_op(g, "trn.RMSNorm"), 1);
  ir::Graph src = parse_body(body);
  expect_same_outputs(src, g, 1e-5);
}

TEST(GraphPassesFusePatterns, RmsNormForms) {
  // Div form with weight first; Reciprocal form; torch's rsqrt export (1 / Sqrt)
  // then x * r * weight.
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[2,4,8]
    const %two: fp32[] = [2]
    const %eps: fp32[] = [9.99999997e-07]
    const %one: fp32[] = [1]
    const %w: fp32[8] = [1, 2, 3, 4, 0.5, 0.25, 1, 1]
    %p: fp32[2,4,8] = Pow(%x, %two) @/a/Pow
    %m: fp32[2,4,1] = ReduceMean(%p) {axes=[2]} @/a/ReduceMean
    %e: fp32[2,4,1] = Add(%m, %eps) @/a/Add
    %s: fp32[2,4,1] = Sqrt(%e) @/a/Sqrt
    %n: fp32[2,4,8] = Div(%x, %s) @/a/Div
    %y: fp32[2,4,8] = Mul(%w, %n) @/a/Mul
    %p2: fp32[2,4,8] = Mul(%y, %y) @/b/Mul
    %m2: fp32[2,4,1] = ReduceMean(%p2) {axes=[2]} @/b/ReduceMean
    %e2: fp32[2,4,1] = Add(%m2, %eps) @/b/Add
    %s2: fp32[2,4,1] = Sqrt(%e2) @/b/Sqrt
    %r2: fp32[2,4,1] = Reciprocal(%s2) @/b/Reciprocal
    %z: fp32[2,4,8] = Mul(%y, %r2) @/b/Mul_1
    %p3: fp32[2,4,8] = Pow(%z, %two) @/c/Pow
    %m3: fp32[2,4,1] = ReduceMean(%p3) {axes=[2]} @/c/ReduceMean
    %e3: fp32[2,4,1] = Add(%m3, %eps) @/c/Add
    %s3: fp32[2,4,1] = Sqrt(%e3) @/c/Sqrt
    %r3: fp32[2,4,1] = Div(%one, %s3) @/c/Div
    %n3: fp32[2,4,8] = Mul(%z, %r3) @/c/Mul
    %v: fp32[2,4,8] = Mul(%n3, %w) @/c/Mul_1
    output %v)IR",
             R"IR(
    input %x: fp32[2,4,8]
    const %w: fp32[8] = [1, 2, 3, 4, 0.5, 0.25, 1, 1]
    %y: fp32[2,4,8] = trn.RMSNorm(%x, %w) {axis=2, epsilon=9.99999997e-07} @/a/RMSNorm
    %z: fp32[2,4,8] = trn.RMSNorm(%y) {axis=2, epsilon=9.99999997e-07} @/b/RMSNorm
    %v: fp32[2,4,8] = trn.RMSNorm(%z, %w) {axis=2, epsilon=9.99999997e-07} @/c/RMSNorm
    output %v)IR",
             1e-5);
}

TEST(GraphPassesFusePatterns, SiluAndHardSwish) {
  // x * Sigmoid(x) both ways round; x * relu6(x + 3) / 6 as torch writes it (Relu
  // then Clip, then Div); x * HardSigmoid(x){1/6, 1/2} (opset < 14 Hardswish).
  check_pass("fuse_patterns", R"IR(
    input %x: fp32[4,6]
    const %three: fp32[] = [3]
    const %six: fp32[] = [6]
    %s: fp32[4,6] = Sigmoid(%x) @/a/Sigmoid
    %y: fp32[4,6] = Mul(%x, %s) @/a/Mul
    %s2: fp32[4,6] = Sigmoid(%y) @/b/Sigmoid
    %z: fp32[4,6] = Mul(%s2, %y) @/b/Mul
    %a: fp32[4,6] = Add(%z, %three) @/c/Add
    %r: fp32[4,6] = Relu(%a) @/c/Relu
    %c: fp32[4,6] = Clip(%r) {max=6.0, min=0.0} @/c/Clip
    %m: fp32[4,6] = Mul(%z, %c) @/c/Mul
    %h: fp32[4,6] = Div(%m, %six) @/c/Div
    %hs: fp32[4,6] = HardSigmoid(%h) {alpha=0.166666672, beta=0.5} @/d/HardSigmoid
    %w: fp32[4,6] = Mul(%h, %hs) @/d/Mul
    output %w)IR",
             R"IR(
    input %x: fp32[4,6]
    %y: fp32[4,6] = trn.Silu(%x) @/a/Silu
    %z: fp32[4,6] = trn.Silu(%y) @/b/Silu
    %h: fp32[4,6] = HardSwish(%z) @/c/HardSwish
    %w: fp32[4,6] = HardSwish(%h) @/d/HardSwish
    output %w)IR",
             1e-6);
}

// ---------------------------------------------------------------------------
// fuse_epilogue

TEST(GraphPassesFuseEpilogue, MatMulBiasActivationResidual) {
  // compute_dtype moves from the MatMul onto the fused node.
  check_pass("fuse_epilogue", R"IR(
    input %x: fp32[4,8]
    input %r: fp32[4,16]
    const %w: fp32[8,16]
    const %b: fp32[16]
    %mm: fp32[4,16] = MatMul(%x, %w) {compute_dtype="bf16"} @fc
    %h: fp32[4,16] = Add(%mm, %b) @fc/bias
    %g: fp32[4,16] = trn.Gelu(%h) {approximate="tanh"} @act
    %y: fp32[4,16] = Add(%r, %g) @res
    output %y)IR",
             R"IR(
    input %x: fp32[4,8]
    input %r: fp32[4,16]
    const %w: fp32[8,16]
    const %b: fp32[16]
    %y: fp32[4,16] = trn.MatMulEpilogue(%x, %w, %b, %r) {compute_dtype="bf16", expr="MatMul(%0, %1); Add($0, %2); trn.Gelu($1){approximate=tanh}; Add(%3, $2)"} @fc
    output %y)IR");
}

TEST(GraphPassesFuseEpilogue, ConvWithBiasAndClip) {
  check_pass("fuse_epilogue", R"IR(
    input %x: fp32[1,2,5,5]
    const %w: fp32[4,2,3,3]
    const %cb: fp32[4]
    const %s: fp32[4,1,1]
    %c: fp32[1,4,5,5] = Conv(%x, %w, %cb) {pads=[1,1,1,1]} @conv
    %m: fp32[1,4,5,5] = Mul(%c, %s) @scale
    %y: fp32[1,4,5,5] = Clip(%m) {max=6.0, min=0.0} @relu6
    output %y)IR",
             R"IR(
    input %x: fp32[1,2,5,5]
    const %w: fp32[4,2,3,3]
    const %cb: fp32[4]
    const %s: fp32[4,1,1]
    %y: fp32[1,4,5,5] = trn.MatMulEpilogue(%x, %w, %cb, %s) {expr="Conv(%0, %1, %2){dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]}; Mul($0, %3); Clip($1){max=6.0, min=0.0}"} @conv
    output %y)IR");
}

TEST(GraphPassesFuseEpilogue, ChainStopsAtSharedValuesBroadcastsAndOtherOps) {
  // %h feeds two nodes: the chain is MatMul + Add only. %k [4,1] would be
  // broadcast up by the Add: no epilogue. Softmax is not elementwise.
  check_pass("fuse_epilogue", R"IR(
    input %x: fp32[4,8]
    input %q: fp32[4,16]
    const %w: fp32[8,16]
    const %v: fp32[8,1]
    const %b: fp32[16]
    %mm: fp32[4,16] = MatMul(%x, %w) @fc
    %h: fp32[4,16] = Add(%b, %mm) @bias
    %e: fp32[4,16] = Exp(%h) @exp
    %f: fp32[4,16] = Add(%h, %e) @sum
    %k: fp32[4,1] = MatMul(%x, %v) @narrow
    %z: fp32[4,16] = Add(%k, %q) @bcast
    %s: fp32[4,16] = MatMul(%x, %w) @fc2
    %t: fp32[4,16] = Softmax(%s) @sm
    output %f, %z, %t)IR",
             R"IR(
    input %x: fp32[4,8]
    input %q: fp32[4,16]
    const %w: fp32[8,16]
    const %v: fp32[8,1]
    const %b: fp32[16]
    %h: fp32[4,16] = trn.MatMulEpilogue(%x, %w, %b) {expr="MatMul(%0, %1); Add(%2, $0)"} @fc
    %e: fp32[4,16] = Exp(%h) @exp
    %f: fp32[4,16] = Add(%h, %e) @sum
    %k: fp32[4,1] = MatMul(%x, %v) @narrow
    %z: fp32[4,16] = Add(%k, %q) @bcast
    %s: fp32[4,16] = MatMul(%x, %w) @fc2
    %t: fp32[4,16] = Softmax(%s) @sm
    output %f, %z, %t)IR");
}

TEST(GraphPassesFuseEpilogue, EpilogueReadingAnAnchorInputGetsItsOwnSlot) {
  // Found by trnsim fuzz (seed 185): x * MatMul(x, w) read x as %0, a matmul layout
  // the lowering cannot use in the epilogue; x is now also %2.
  check_pass("fuse_epilogue", R"IR(
    input %x: fp32[4,1]
    input %w: fp32[1,1]
    %mm: fp32[4,1] = MatMul(%x, %w) @fc
    %y: fp32[4,1] = Mul(%x, %mm) @scale
    output %y)IR",
             R"IR(
    input %x: fp32[4,1]
    input %w: fp32[1,1]
    %y: fp32[4,1] = trn.MatMulEpilogue(%x, %w, %x) {expr="MatMul(%0, %1); Mul(%2, $0)"} @fc
    output %y)IR");
}

// ---------------------------------------------------------------------------
// fuse_elementwise

TEST(GraphPassesFuseElementwise, TreesOfSingleUseOps) {
  // %v is read twice, so it ends one group and feeds another; %b broadcasts into
  // the group; the lone Relu stays.
  check_pass("fuse_elementwise", R"IR(
    input %a: fp32[4,8]
    input %b: fp32[8]
    const %c: fp32[] = [0.5]
    %s: fp32[4,8] = Sigmoid(%a) @sig
    %m: fp32[4,8] = Mul(%s, %b) @mul
    %t: fp32[4,8] = Tanh(%a) @tanh
    %u: fp32[4,8] = Add(%m, %t) @add
    %v: fp32[4,8] = Mul(%u, %c) @scale
    %w: fp32[4,8] = Exp(%v) @exp
    %z: fp32[4,8] = Add(%v, %w) @add2
    %lone: fp32[4,8] = Relu(%a) @lone
    output %z, %lone)IR",
             R"IR(
    input %a: fp32[4,8]
    input %b: fp32[8]
    const %c: fp32[] = [0.5]
    %v: fp32[4,8] = trn.Elementwise(%a, %b, %c) {expr="Sigmoid(%0); Mul($0, %1); Tanh(%0); Add($1, $2); Mul($3, %2)"} @scale
    %z: fp32[4,8] = trn.Elementwise(%v) {expr="Exp(%0); Add(%0, $0)"} @add2
    %lone: fp32[4,8] = Relu(%a) @lone
    output %z, %lone)IR");
}

TEST(GraphPassesFuseElementwise, StopsAtBroadcastAndNonFloat) {
  // Exp of a [8] vector then Add to [4,8]: the Exp result would be broadcast, so
  // it is not absorbed. Integer ops are not fused.
  const char* body = R"IR(
    input %a: fp32[4,8]
    input %b: fp32[8]
    input %i: int64[3]
    %e: fp32[8] = Exp(%b) @exp
    %y: fp32[4,8] = Add(%a, %e) @add
    %n: int64[3] = Neg(%i) @neg
    %m: int64[3] = Abs(%n) @abs
    output %y, %m)IR";
  ir::Graph g = run_on_copy(parse_body(body), {"fuse_elementwise"});
  EXPECT_EQ(ir::print_graph(g), canon(body));
}

// ---------------------------------------------------------------------------
// autocast and the interpreter's precision emulation

constexpr const char* kMatmuls = R"IR(
    input %x: fp32[2,4]
    const %w: fp32[4,4]
    %a: fp32[2,4] = MatMul(%x, %w) @mm
    %b: fp32[2,4] = Gemm(%a, %w, _) @gemm
    %y: fp32[2,4] = trn.MatMulEpilogue(%b, %w) {expr="MatMul(%0, %1); Relu($0)"} @fused
    output %y)IR";

TEST(GraphPassesAutocast, Bf16Fp8AndFp32Policies) {
  PassContext bf16;
  bf16.precision = Precision::bf16;
  check_pass("autocast", kMatmuls, R"IR(
    input %x: fp32[2,4]
    const %w: fp32[4,4]
    %a: fp32[2,4] = MatMul(%x, %w) {compute_dtype="bf16"} @mm
    %b: fp32[2,4] = Gemm(%a, %w, _) {alpha=1.0, beta=1.0, compute_dtype="bf16", transA=0, transB=0} @gemm
    %y: fp32[2,4] = trn.MatMulEpilogue(%b, %w) {compute_dtype="bf16", expr="MatMul(%0, %1); Relu($0)"} @fused
    output %y)IR",
             0, &bf16);
  EXPECT_EQ(bf16.stats.at("autocast.bf16"), 6);  // 3 nodes, counted by both check runs

  PassContext fp8;
  fp8.precision = Precision::fp8;
  ir::Graph g = run_on_copy(parse_body(kMatmuls), {"autocast"}, &fp8);
  for (const auto& n : g.nodes()) EXPECT_EQ(n->attr_string("compute_dtype"), "fp8e4m3");

  PassContext fp32;
  fp32.precision = Precision::fp32;
  EXPECT_EQ(ir::print_graph(run_on_copy(parse_body(kMatmuls), {"autocast"}, &fp32)),
            canon(kMatmuls));
}

TEST(GraphPassesAutocast, InterpreterEmulatesComputeDtypeOnlyWhenAsked) {
  // 1 + 2^-10 is not a bf16 (8 significant bits): it rounds to 1. The bias add
  // of 2^-12 stays fp32. Reference: 1.0009765625 + 0.000244140625; emulated:
  // 1 + 0.000244140625.
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[1,1]
    const %w: fp32[1,1] = [1]
    const %b: fp32[1] = [0.000244140625]
    %y: fp32[1,1] = trn.MatMulEpilogue(%x, %w, %b) {compute_dtype="bf16", expr="MatMul(%0, %1); Add($0, %2)"} @fc
    %z: fp32[1,1] = MatMul(%x, %w) {compute_dtype="fp8e4m3"} @fc8
    output %y, %z)IR");
  interp::TensorMap in{{"x", ir::Tensor::from_floats({1, 1}, {1.0009765625f})}};
  interp::TensorMap ref = interp::run(g, in);
  EXPECT_EQ(ref.at("y").floats()[0], 1.0009765625f + 0.000244140625f);
  EXPECT_EQ(ref.at("z").floats()[0], 1.0009765625f);
  interp::RunOptions emu;
  emu.emulate_precision = true;
  interp::TensorMap got = interp::run(g, in, emu);
  EXPECT_EQ(got.at("y").floats()[0], 1.0f + 0.000244140625f);
  EXPECT_EQ(got.at("z").floats()[0], 1.0f);  // fp8e4m3 has 4 significant bits
}

TEST(GraphPassesAutocast, BadComputeDtypeIsRefused) {
  try {
    parse_body(R"IR(
      input %x: fp32[2,2]
      %y: fp32[2,2] = MatMul(%x, %x) {compute_dtype="int8"} @mm
      output %y)IR");
    FAIL() << "int8 compute_dtype accepted";
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("compute_dtype 'int8' is not a floating element type"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------
// trn ops: kernels, fused bodies, checks

TEST(GraphPassesTrnOps, KernelValues) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[1,4]
    %g: fp32[1,4] = trn.Gelu(%x) @g
    %t: fp32[1,4] = trn.Gelu(%x) {approximate="tanh"} @t
    %s: fp32[1,4] = trn.Silu(%x) @s
    %l: fp32[1,4] = trn.LayerNorm(%x) {epsilon=0.0} @l
    %r: fp32[1,4] = trn.RMSNorm(%x) {epsilon=0.0} @r
    output %g, %t, %s, %l, %r)IR");
  interp::TensorMap out =
      interp::run(g, {{"x", ir::Tensor::from_floats({1, 4}, {1.0f, 2.0f, 3.0f, 4.0f})}});
  const double x[4] = {1, 2, 3, 4};
  for (int k = 0; k < 4; ++k) {
    const double v = x[k];
    EXPECT_NEAR(out.at("g").floats()[k], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(out.at("t").floats()[k],
                0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))), 1e-6);
    EXPECT_NEAR(out.at("s").floats()[k], v / (1 + std::exp(-v)), 1e-6);
    // mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25; mean square 30/4.
    EXPECT_NEAR(out.at("l").floats()[k], (v - 2.5) / std::sqrt(1.25), 1e-6);
    EXPECT_NEAR(out.at("r").floats()[k], v / std::sqrt(7.5), 1e-6);
  }
}

TEST(GraphPassesTrnOps, FusedExprRoundTripAndBody) {
  const std::string expr =
      "Conv(%0, %1){pads=[1,1,1,1], strides=[1,1]}; Add($0, %2); Clip($1){max=6.0, min=0.0}; "
      "trn.Gelu($2){approximate=tanh}; LeakyRelu($3){alpha=0.125}";
  std::vector<ir::FusedStep> steps = ir::parse_fused_expr(expr);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[1].args, (std::vector<ir::FusedArg>{{true, 0}, {false, 2}}));
  EXPECT_EQ(ir::format_fused_expr(steps), expr);

  ir::Graph g = parse_body(R"IR(
    input %x: fp32[1,2,4,4]
    const %w: fp32[3,2,3,3]
    const %b: fp32[3,1,1] = [1, 2, 3]
    %y: fp32[1,3,4,4] = trn.MatMulEpilogue(%x, %w, %b) {compute_dtype="bf16", expr="Conv(%0, %1){pads=[1,1,1,1]}; Add($0, %2); Relu($1)"} @c
    output %y)IR");
  ir::Graph body = ir::fused_body(*g.nodes()[0]);
  EXPECT_EQ(ir::print_graph(body), ir::print_graph(ir::parse_graph(R"IR(
    graph c {
      input %0: fp32[1,2,4,4]
      const %1: fp32[3,2,3,3]
      const %2: fp32[3,1,1] = [1, 2, 3]
      %s0: fp32[1,3,4,4] = Conv(%0, %1) {compute_dtype="bf16", dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} @step0
      %s1: fp32[1,3,4,4] = Add(%s0, %2) @step1
      %s2: fp32[1,3,4,4] = Relu(%s1) @step2
      output %s2
    })IR")));
}

TEST(GraphPassesTrnOps, BadFusedNodesAreRefusedWithTheReason) {
  auto error_of = [](const std::string& node) {
    try {
      parse_body("input %x: fp32[2,3]\ninput %w: fp32[3,3]\n" + node + "\noutput %y");
    } catch (const ir::CompileError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto expect_error = [&](const std::string& node, const std::string& msg) {
    std::string e = error_of(node);
    EXPECT_NE(e.find(msg), std::string::npos) << e;
  };
  expect_error(R"IR(%y: fp32[2,3] = trn.Elementwise(%x) {expr="Relu($1)"})IR",
               "step 0 (Relu): reads $1, which is not an earlier step");
  expect_error(R"IR(%y: fp32[2,3] = trn.Elementwise(%x) {expr="Softmax(%0)"})IR",
               "step 0 (Softmax): is not an elementwise op that can be fused");
  expect_error(R"IR(%y: fp32[2,3] = trn.Elementwise(%x) {expr="Relu(%2)"})IR",
               "step 0 (Relu): reads %2 but the node has 1 inputs");
  expect_error(R"IR(%y: fp32[2,3] = trn.Elementwise(%x) {expr="Relu(%0"})IR",
               "expr col 8: expected ')'");
  expect_error(
      R"IR(%y: fp32[2,3] = trn.MatMulEpilogue(%x, %w) {expr="MatMul(%0, %1); Relu($0); Add($2, $0)"})IR",
      "reads $2, which is not an earlier step");
  expect_error(
      R"IR(%y: fp32[2,3] = trn.MatMulEpilogue(%x, %w) {expr="MatMul(%0, %1); Relu($0); Add($0, $1)"})IR",
      "epilogue steps may only read the previous step ($1)");
  expect_error(R"IR(%y: fp32[2,3] = trn.MatMulEpilogue(%x, %w) {expr="Relu(%0)"})IR",
               "step 0 of trn.MatMulEpilogue must be MatMul, Gemm, Conv or ConvTranspose");
  expect_error(
      R"IR(%y: fp32[2,3] = trn.MatMulEpilogue(%x, %w) {expr="MatMul(%0, %1){compute_dtype=bf16}"})IR",
      "compute_dtype belongs on the trn.MatMulEpilogue node");
  expect_error(R"IR(%y: fp32[2,3] = trn.Gelu(%x) {approximate="fast"})IR",
               "approximate must be \"none\" or \"tanh\", got 'fast'");
  expect_error(R"IR(%y: fp32[2,3] = trn.LayerNorm(%x, %w) {axis=1})IR",
               "input 1 fp32[3,3] does not broadcast to the normalized dims [3]");
}

}  // namespace
}  // namespace trnsim::graph_passes
