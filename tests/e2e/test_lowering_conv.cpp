// Conv and pooling lowered by compiler/lower (conv.cpp, pool.cpp), run on the
// simulated `tiny` chip and compared with the reference interpreter: hand-written
// IR graphs (constants get random data), and torch exports (a small CNN,
// torchvision resnet18 and mobilenet_v2 with random weights; skipped without torch).
// One process per test, so each test makes at most one check_graph call.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "tests/compiler/graph_pass_test_util.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

ir::Graph graph(const std::string& body, uint32_t seed = 3) {
  ir::Graph g = graph_passes::testing::parse_body(body);
  graph_passes::testing::fill_constants(g, seed, -0.5f, 0.5f);
  return g;
}

// ---- Conv: implicit GEMM on the tensor engine -----------------------------------

// Cin*kh*kw = 20*9 = 180 (k-tiles: 20 channels per slab, 4 slabs in the 32-partition
// quadrants, so 3 k-tiles), Cout = 130 (128 + 2), N*OH*OW = 2*6*7 = 84 pixels
// (OH = (11+2-3)/2+1 = 6, OW = (13+2-3)/2+1 = 7); bias + Relu fused by fuse_epilogue.
const char* kConvStride2 = R"IR(
    input %x: fp32[2,20,11,13]
    const %w: fp32[130,20,3,3]
    const %b: fp32[130]
    %c: fp32[2,130,6,7] = Conv(%x, %w, %b) {pads=[1,1,1,1], strides=[2,2]} @conv
    %y: fp32[2,130,6,7] = Relu(%c) @relu
    output %y)IR";

TEST(LoweringConv, Stride2PadsBiasReluTailsFp32) {
  check_graph(graph(kConvStride2), Precision::fp32, 1e-4, 1e-4);
}

TEST(LoweringConv, Stride2PadsBiasReluBf16) {
  check_graph(graph(kConvStride2), Precision::bf16, 2e-2, 2e-2);
}

// 31*24 = 744 output pixels per image (> 512: chunks of 21 output rows), asymmetric
// pads (OH = 30+1+2-3+1 = 31, OW = 25+0+1-3+1 = 24), no conv bias; the epilogue adds a
// per-channel bias [16,1,1], a full residual and clips (relu6).
TEST(LoweringConv, RowChunksAsymmetricPadsResidualClipFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[1,8,30,25]
    input %r: fp32[1,16,31,24]
    const %w: fp32[16,8,3,3]
    const %b: fp32[16,1,1]
    %c: fp32[1,16,31,24] = Conv(%x, %w) {pads=[1,0,2,1]} @conv
    %d: fp32[1,16,31,24] = Add(%c, %b) @bias
    %e: fp32[1,16,31,24] = Add(%d, %r) @residual
    %y: fp32[1,16,31,24] = Clip(%e) {max=6.0, min=0.0} @relu6
    output %y)IR"),
              Precision::fp32, 1e-4, 1e-4);
}

// Dilation 2: 70 channels (> 64: one slab per k-tile), OH = 12+4-5+1 = 12; a 1x1
// conv with Cin = 300 (slabs of 128, 128, 44) and Cout = 200 on the same input
// shape family; two outputs in one program.
TEST(LoweringConv, DilationAndPointwiseFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[1,70,12,12]
    input %p: fp32[2,300,7,5]
    const %w: fp32[40,70,3,3]
    const %wp: fp32[200,300,1,1]
    const %bp: fp32[200]
    %y: fp32[1,40,12,12] = Conv(%x, %w) {dilations=[2,2], pads=[2,2,2,2]} @dil
    %z: fp32[2,200,7,5] = Conv(%p, %wp, %bp) @pointwise
    output %y, %z)IR"),
              Precision::fp32, 1e-4, 1e-4);
}

// Groups = 2 (each group: 8 input, 12 output channels) and a 1-D conv with stride 2,
// dilation 2 (OW = (50+4-9)/2+1 = 23) on 3 images.
TEST(LoweringConv, GroupsAndConv1dFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[2,16,9,9]
    input %s: fp32[3,40,50]
    const %w: fp32[24,8,3,3]
    const %b: fp32[24]
    const %w1: fp32[33,40,5]
    %y: fp32[2,24,9,9] = Conv(%x, %w, %b) {group=2, pads=[1,1,1,1]} @grouped
    %z: fp32[3,33,23] = Conv(%s, %w1) {strides=[2], dilations=[2], pads=[2,2]} @conv1d
    output %y, %z)IR"),
              Precision::fp32, 1e-4, 1e-4);
}

// Depthwise (group = C = 150: channel tiles 128 + 22), stride 2, pads 1
// (OH = (10+2-3)/2+1 = 5), bias and relu6 in the epilogue.
const char* kDepthwise = R"IR(
    input %x: fp32[2,150,10,10]
    const %w: fp32[150,1,3,3]
    const %b: fp32[150]
    %c: fp32[2,150,5,5] = Conv(%x, %w, %b) {group=150, pads=[1,1,1,1], strides=[2,2]} @dw
    %y: fp32[2,150,5,5] = Clip(%c) {max=6.0, min=0.0} @relu6
    output %y)IR";

TEST(LoweringConv, DepthwiseStride2BiasClipFp32) {
  check_graph(graph(kDepthwise), Precision::fp32, 1e-4, 1e-4);
}

TEST(LoweringConv, DepthwiseBf16) {
  check_graph(graph(kDepthwise), Precision::bf16, 2e-2, 2e-2);
}

// fuse_epilogue makes Conv + per-channel Add + Relu one trn.MatMulEpilogue whose
// step 0 is the Conv; the lowering picks it up by its anchor.
TEST(LoweringConv, EpilogueFusedAndLowered) {
  const std::string body = R"IR(
    input %x: fp32[1,4,6,6]
    const %w: fp32[8,4,3,3]
    const %b: fp32[8,1,1]
    %c: fp32[1,8,6,6] = Conv(%x, %w) {pads=[1,1,1,1]} @conv
    %d: fp32[1,8,6,6] = Add(%c, %b) @bias
    %y: fp32[1,8,6,6] = Relu(%d) @relu
    output %y)IR";
  ir::Graph f = graph_passes::testing::run_on_copy(graph_passes::testing::parse_body(body),
                                                   {"fuse_epilogue"});
  EXPECT_EQ(ir::print_graph(f), graph_passes::testing::canon(R"IR(
    input %x: fp32[1,4,6,6]
    const %w: fp32[8,4,3,3]
    const %b: fp32[8,1,1]
    %y: fp32[1,8,6,6] = trn.MatMulEpilogue(%x, %w, %b) {expr="Conv(%0, %1){dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]}; Add($0, %2); Relu($1)"} @conv
    output %y)IR"));
  check_graph(graph(body), Precision::fp32, 1e-4, 1e-4);
}

// Weights as graph inputs (ONNX allows it; the conformance cases do it): gathered
// per slab from HBM (3 channels per slab: gap rows zeroed), and depthwise.
// OH = (8+2-3)/2+1 = 4.
TEST(LoweringConv, RuntimeWeightsFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[2,3,8,8]
    input %w: fp32[5,3,3,3]
    input %x2: fp32[1,6,5,5]
    input %w2: fp32[6,1,3,3]
    %y: fp32[2,5,4,4] = Conv(%x, %w) {pads=[1,1,1,1], strides=[2,2]} @conv
    %z: fp32[1,6,5,5] = Conv(%x2, %w2) {group=6, pads=[1,1,1,1]} @dw
    output %y, %z)IR"),
              Precision::fp32, 1e-4, 1e-4);
}

// Convolutions over 4 spatial dims are refused with the node named (3-D ones are
// made 2-D by the decompose_3d graph pass).
TEST(LoweringConv, Conv4dUnsupported) {
  ir::Graph g = graph(R"IR(
    input %x: fp32[1,2,3,3,3,3]
    const %w: fp32[3,2,2,2,2,2]
    %y: fp32[1,3,2,2,2,2] = Conv(%x, %w) @conv3d
    output %y)IR");
  compiler::CompileOnnxOptions o;
  o.target = runtime::target_from_config(platform::load_config("tiny"));
  try {
    compiler::compile_graph(std::move(g), o);
    FAIL() << "expected UnsupportedError";
  } catch (const ir::UnsupportedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("conv3d"), std::string::npos) << m;
    EXPECT_NE(m.find("1-D and 2-D"), std::string::npos) << m;
  }
}

// ---- pooling ----------------------------------------------------------------------

// N*C = 140 planes (128 + 12). MaxPool k3 s2 p1: OH = (15+2-3)/2+1 = 8; ceil_mode with
// dilation 2, k2, s2 on 15x14: OH = ceil((15-3)/2)+1 = 7, OW = ceil((14-3)/2)+1 = 7
// (the last window runs past the input). AveragePool k3 s2 p1 ceil_mode: OH = OW =
// ceil(14/2)+1 = 8 with count_include_pad both ways (the last window's count is
// clipped at the end pad). Global average and max.
TEST(LoweringPool, MaxAvgGlobal2dFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[2,70,15,14]
    %a: fp32[2,70,8,7] = MaxPool(%x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]} @max
    %b: fp32[2,70,7,7] = MaxPool(%x) {kernel_shape=[2,2], strides=[2,2], dilations=[2,2], ceil_mode=1} @maxceil
    %c: fp32[2,70,8,8] = AveragePool(%x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1], ceil_mode=1, count_include_pad=1} @avginc
    %d: fp32[2,70,8,8] = AveragePool(%x) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1], ceil_mode=1} @avgexc
    %e: fp32[2,70,1,1] = GlobalAveragePool(%x) @gap
    %f: fp32[2,70,1,1] = GlobalMaxPool(%x) @gmp
    output %a, %b, %c, %d, %e, %f)IR"),
              Precision::fp32, 1e-5, 1e-6);
}

// 1-D: MaxPool k3 s1 p1 (OW = 41), AveragePool k4 s3 ceil_mode (OW = ceil(37/3)+1 =
// 14, the last window holds 2 of its 4 taps), GlobalAveragePool.
TEST(LoweringPool, Pool1dFp32) {
  check_graph(graph(R"IR(
    input %x: fp32[3,10,41]
    %a: fp32[3,10,41] = MaxPool(%x) {kernel_shape=[3], strides=[1], pads=[1,1]} @max1d
    %b: fp32[3,10,14] = AveragePool(%x) {kernel_shape=[4], strides=[3], ceil_mode=1} @avg1d
    %c: fp32[3,10,1] = GlobalAveragePool(%x) @gap1d
    output %a, %b, %c)IR"),
              Precision::fp32, 1e-5, 1e-6);
}

// ---- torch-exported models --------------------------------------------------------

// Random BatchNorm statistics so that the fold into the conv is not an identity.
const char* kRandomBn =
    "for mod in m.modules():\n"
    "  if isinstance(mod, torch.nn.BatchNorm2d):\n"
    "    mod.running_mean.uniform_(-0.5, 0.5)\n"
    "    mod.running_var.uniform_(0.5, 1.5)\n"
    "    mod.weight.data.uniform_(0.5, 1.5)\n"
    "    mod.bias.data.uniform_(-0.5, 0.5)\n";

TEST(LoweringConvOnnx, SmallCnnFp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("small_cnn",
                   std::string("nn = torch.nn\n"
                               "m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), "
                               "nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),\n"
                               "  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), "
                               "nn.ReLU(), nn.AvgPool2d(2),\n"
                               "  nn.Conv2d(32, 40, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), "
                               "nn.Flatten(), nn.Linear(40, 10))\n") +
                       kRandomBn + "x = torch.randn(2, 3, 20, 20)",
                   &path));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4);
}

TEST(LoweringConvOnnx, Resnet18Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("resnet18",
                   std::string("import torchvision\nm = torchvision.models.resnet18()\n") +
                       kRandomBn + "x = torch.randn(1, 3, 32, 32)",
                   &path, {"torch", "torchvision"}));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4);
}

TEST(LoweringConvOnnx, MobilenetV2Fp32) {
  std::string path;
  TRNSIM_REQUIRE_PYTHON(
      export_model("mobilenet_v2",
                   std::string("import torchvision\nm = torchvision.models.mobilenet_v2()\n") +
                       kRandomBn + "x = torch.randn(1, 3, 32, 32)",
                   &path, {"torch", "torchvision"}));
  check_graph(frontend::import_onnx_file(path), Precision::fp32, 1e-4, 1e-4);
}

}  // namespace
}  // namespace trnsim::e2e
