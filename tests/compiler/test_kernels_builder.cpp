// The kernel-builder API (compiler/kernels/builder.h) without the back end: how views
// map to access patterns, and the errors it raises where a kernel is built.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/kernels/builder.h"
#include "compiler/tile/ir.h"
#include "models/isa/access_pattern.h"

namespace trnsim::kernels {
namespace {

using isa::DType;
using isa::MemSpace;

TEST(KernelsBuilder, ViewsMapToAccessPatterns) {
  Builder b("views");
  auto A = b.input("A", {256, 384}, DType::bf16);
  auto g = b.input("g", {768}, DType::fp32);
  auto p = b.pool("sb", MemSpace::sbuf, 1);
  auto t = b.tile(p, {128, 4, 64}, DType::fp32);
  // A^T k-tile: rows walk k (1 apart), the free dim walks m (384 apart).
  isa::AccessPattern at = A({all(), sl(128, 256)}).T().ap();
  EXPECT_EQ(isa::to_string(at), "hbm[128x1, 256, bf16, [384,256]]");
  // Broadcast to 128 rows with stride 0.
  EXPECT_EQ(isa::to_string(g.broadcast(0, 128).ap()), "hbm[128x0, 0, fp32, [1,768]]");
  // Every other column of rows 2..9, reshaped.
  EXPECT_EQ(isa::to_string(A({sl(2, 10), sl(0, 384, 2)}).ap()), "hbm[8x384, 1536, bf16, [2,192]]");
  EXPECT_EQ(A.reshape({2, 128, 384})({kernels::at(1), sl(0, 4), all()}).shape(),
            (std::vector<int64_t>{4, 384}));
  // Tile views: contiguous dims merge; a step keeps two dims.
  EXPECT_EQ(isa::to_string(t.ap()), "sbuf[0:128, 0, fp32, [1,256]]");
  EXPECT_EQ(isa::to_string(t({sl(32, 64), all(), sl(0, 64, 2)}).ap()),
            "sbuf[32:64, 0, fp32, [2,128]]");  // (64,4) then (2,32) merge: 64 = 2 x 32
  EXPECT_EQ(isa::to_string(t({sl(32, 64), all(), sl(0, 32, 2)}).ap()),
            "sbuf[32:64, 0, fp32, [64,4], [2,16]]");
  EXPECT_EQ(isa::to_string(t({all(), kernels::at(3)}).ap()), "sbuf[0:128, 768, fp32, [1,64]]");
  EXPECT_EQ(isa::to_string(t.permute({1, 0}).ap()), "sbuf[0:128, 0, fp32, [1,64], [64,4]]");
  EXPECT_EQ(isa::to_string(t({all(), sl(0, 1), all()}).broadcast(0, 8).ap()),
            "sbuf[0:128, 0, fp32, [0,8], [1,64]]");
}

// The message of the KernelError `f` throws ("" when it throws none).
std::string err(const std::function<void()>& f) {
  try {
    f();
  } catch (const tile::KernelError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelsBuilder, ClearErrors) {
  Builder b("errs");
  auto T6 = b.input("T6", {2, 2, 2, 2, 2, 2}, DType::fp32);
  auto p = b.pool("sb", MemSpace::sbuf, 1);
  auto ps = b.pool("ps", MemSpace::psum, 1);
  auto t = b.tile(p, {128, 512}, DType::fp32);
  auto w = b.tile(p, {128, 128}, DType::bf16);
  auto acc = b.tile(ps, {128, 512}, DType::fp32);
  // Reversed axes of a 6-D tensor: no two neighbours merge, 5 free dims.
  EXPECT_NE(err([&] {
              T6.permute({0, 5, 4, 3, 2, 1}).ap();
            })
                .find("kernel 'errs': view [2,2,2,2,2,2] of tensor 'T6' needs 5 free dims after "
                      "merging contiguous axes; an access pattern has at most 4"),
            std::string::npos);
  EXPECT_NE(err([&] { b.tensor_copy(t({sl(16, 48)}), t({sl(16, 48)})); })
                .find("tensor_copy: dst uses partitions 16..47 of tile 'sb.0', which breaks the "
                      "partition-start rule"),
            std::string::npos);
  EXPECT_NE(err([&] {
              b.matmul(acc, w, t({all(), sl(0, 256)}), false);
            }).find("matmul: dst [128,512] but stationary^T @ moving is [128,256]"),
            std::string::npos);
  EXPECT_NE(
      err([&] { b.matmul(t, w, w, false); }).find("matmul: dst (tile 'sb.0') must be in psum"),
      std::string::npos);
  EXPECT_NE(err([&] {
              b.tensor_copy(acc, t, isa::Engine::gpsimd);
            }).find("tensor_copy: the gpsimd engine cannot reach PSUM"),
            std::string::npos);
  EXPECT_NE(err([&] {
              b.activation(t, t({all(), sl(0, 10)}), isa::ActFunc::exp);
            }).find("activation: src [128,10] and dst [128,512] differ"),
            std::string::npos);
  EXPECT_NE(err([&] { t({sl(128, 130)}); }).find("partition range must be a non-empty"),
            std::string::npos);
  EXPECT_NE(err([&] {
              t({all(), sl(0, 512, 0)});
            }).find("axis 1: step 0 (steps must be >= 1)"),
            std::string::npos);
  EXPECT_NE(err([&] { b.dma(t, T6); })
                .find("dma: dst tile view [128,512] and src tensor view "
                      "[2,2,2,2,2,2] differ"),
            std::string::npos);
}

// windows(): a leading axis of overlapping shifts (one DMA row per shift), refused
// when the last shift leaves the tensor.
TEST(KernelsBuilder, WindowsShiftRows) {
  Builder b("win");
  auto X = b.input("X", {4, 10}, DType::bf16);
  // Row 1 (element 10, byte 20), its first 6 columns, shifted 0, 2 and 4 elements.
  EXPECT_EQ(isa::to_string(X({kernels::at(1), sl(0, 6)}).windows(3, 2).ap()),
            "hbm[3x2, 20, bf16, [1,6]]");
  // Row 3's columns 0..5 shifted by up to 6: element 41 of 40.
  EXPECT_NE(err([&] {
              X({kernels::at(3), sl(0, 6)}).windows(3, 3);
            }).find("windows of a view of tensor 'X': 3 shifts of 3 leave the tensor"),
            std::string::npos);
}

// Tile names are unique within a kernel (the builder indexes them): a name given
// twice is refused, a refused declaration takes no name, and a finished kernel's
// names are free again for the next one.
TEST(KernelsBuilder, TileNamesAreUnique) {
  Builder b("names");
  auto p = b.pool("sb", MemSpace::sbuf, 2);
  b.tile(p, {128, 8}, DType::fp32, "a");
  EXPECT_NE(err([&] {
              b.tile(p, {128, 8}, DType::fp32, "a");
            }).find("tile 'a' declared twice"),
            std::string::npos);
  EXPECT_NE(err([&] {
              b.tile(p, {129, 8}, DType::fp32, "b");
            }).find("the first dim is"),
            std::string::npos);
  b.tile(p, {128, 8}, DType::fp32, "b");  // the refused "b" took no name
  // An automatic name ("sb.N") that a named tile already took is refused too.
  b.tile(p, {128, 8}, DType::fp32, "sb.3");
  EXPECT_NE(err([&] {
              b.tile(p, {128, 8}, DType::fp32);
            }).find("tile 'sb.3' declared twice"),
            std::string::npos);
  b.finish();
  auto q = b.pool("sb", MemSpace::sbuf, 1);
  b.tile(q, {128, 8}, DType::fp32, "a");
  EXPECT_EQ(b.kernel().tiles.size(), 1u);
}

// A tensor larger than the target's HBM, or than 64-bit byte offsets can address, is
// refused where it is declared (strides and offsets are products of its dims).
TEST(KernelsBuilder, TensorsMustFitHbm) {
  Builder b("big", 1024);                                               // 1 KiB of HBM
  EXPECT_EQ(err([&] { b.input("fits", {16, 16}, DType::fp32); }), "");  // 16*16*4 = 1024 B
  EXPECT_EQ(err([&] { b.input("over", {257}, DType::fp32); }),
            "kernel 'big': tensor 'over' [257] fp32 needs 1028 bytes, more than the target's "
            "1024 bytes of HBM");
  Builder u("huge");  // no HBM limit: only the overflow check
  // 2^31 * 2^31 * 4 B = 2^64 B.
  EXPECT_EQ(err([&] {
              u.scratch("x", {int64_t{1} << 31, int64_t{1} << 31}, DType::fp32);
            }),
            "kernel 'huge': tensor 'x' [2147483648,2147483648] fp32 has more bytes than a 64-bit "
            "address can count");
  // 2^31 * 2^31 * 2 B = 2^63 B, one past int64.
  EXPECT_NE(err([&] { u.scratch("y", {int64_t{1} << 31, int64_t{1} << 31}, DType::bf16); }), "");
  EXPECT_EQ(err([&] {
              u.scratch("z", {int64_t{1} << 31, (int64_t{1} << 30) - 1}, DType::bf16);
            }),
            "");
}

}  // namespace
}  // namespace trnsim::kernels
