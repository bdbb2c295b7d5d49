#include "models/isa/access_pattern.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace trnsim::isa {
namespace {

AccessPattern make(MemSpace s, DType t, uint64_t offset, std::vector<Dim> dims, uint32_t parts = 1,
                   int64_t pstride = 0) {
  AccessPattern ap;
  ap.space = s;
  ap.dtype = t;
  ap.offset = offset;
  ap.partition_count = parts;
  ap.partition_stride = pstride;
  ap.ndims = static_cast<uint8_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) ap.dims[i] = dims[i];
  return ap;
}

TEST(AccessPattern, FreeElemsIsProductOfSizes) {
  EXPECT_EQ(make(MemSpace::sbuf, DType::fp32, 0, {}).free_elems(), 1u);
  // 3 * 4 * 5 = 60 per partition; 8 partitions -> 480 elements, 960 bytes of bf16.
  const auto ap = make(MemSpace::sbuf, DType::bf16, 0, {{20, 3}, {5, 4}, {1, 5}}, 8);
  EXPECT_EQ(ap.free_elems(), 60u);
  EXPECT_EQ(ap.elems(), 480u);
  EXPECT_EQ(ap.bytes(), 960u);
}

TEST(AccessPattern, ByteRangePositiveStrides) {
  // fp32 at offset 100, dims [8,2],[1,8]: last element starts at 100 + (8*1 + 7)*4 = 160.
  const auto ap = make(MemSpace::sbuf, DType::fp32, 100, {{8, 2}, {1, 8}});
  EXPECT_EQ(ap.min_byte(), 100);
  EXPECT_EQ(ap.end_byte(), 164);
}

TEST(AccessPattern, ByteRangeNegativeStrides) {
  // bf16 at offset 64, dims [-4,3],[1,2]: lowest start 64 - 2*4*2 = 48; highest
  // start 64 + 1*2 = 66, so one past its last byte is 68.
  const auto ap = make(MemSpace::psum, DType::bf16, 64, {{-4, 3}, {1, 2}});
  EXPECT_EQ(ap.min_byte(), 48);
  EXPECT_EQ(ap.end_byte(), 68);
  // A reversed run from offset 0 reaches below the partition start: 0 - 3*4 = -12.
  const auto rev = make(MemSpace::sbuf, DType::fp32, 0, {{-1, 4}});
  EXPECT_EQ(rev.min_byte(), -12);
  EXPECT_EQ(rev.end_byte(), 4);
}

TEST(AccessPattern, ByteRangeBroadcastAndScalar) {
  // Stride 0 touches one element however large the size.
  const auto bc = make(MemSpace::sbuf, DType::fp32, 8, {{0, 1000}});
  EXPECT_EQ(bc.min_byte(), 8);
  EXPECT_EQ(bc.end_byte(), 12);
  const auto one = make(MemSpace::sbuf, DType::uint8, 5, {});
  EXPECT_EQ(one.min_byte(), 5);
  EXPECT_EQ(one.end_byte(), 6);
}

TEST(AccessPattern, HbmByteRangeIncludesRows) {
  // 4 rows 100 elements apart, 10 fp16 each, at 1000: last row starts 1000 + 300*2
  // = 1600, its last element at 1600 + 9*2 = 1618, so the end is 1620.
  const auto ap = make(MemSpace::hbm, DType::fp16, 1000, {{1, 10}}, 4, 100);
  EXPECT_EQ(ap.min_byte(), 1000);
  EXPECT_EQ(ap.end_byte(), 1620);
  // Rows walking backwards: 1000 - 3*100*2 = 400.
  const auto back = make(MemSpace::hbm, DType::fp16, 1000, {{1, 10}}, 4, -100);
  EXPECT_EQ(back.min_byte(), 400);
  EXPECT_EQ(back.end_byte(), 1020);
  // Partition count does not move sbuf bytes: each partition has its own space.
  const auto sb = make(MemSpace::sbuf, DType::fp16, 1000, {{1, 10}}, 4, 0);
  EXPECT_EQ(sb.end_byte(), 1020);
}

TEST(AccessPattern, FreeContiguous) {
  EXPECT_TRUE(make(MemSpace::sbuf, DType::fp32, 0, {}).free_contiguous());
  EXPECT_TRUE(make(MemSpace::sbuf, DType::fp32, 0, {{1, 512}}).free_contiguous());
  EXPECT_TRUE(make(MemSpace::sbuf, DType::fp32, 0, {{32, 4}, {8, 4}, {1, 8}}).free_contiguous());
  // Size-1 dims never move, whatever their stride.
  EXPECT_TRUE(make(MemSpace::sbuf, DType::fp32, 0, {{77, 1}, {1, 8}, {-3, 1}}).free_contiguous());
  EXPECT_FALSE(make(MemSpace::sbuf, DType::fp32, 0, {{2, 8}}).free_contiguous());
  EXPECT_FALSE(make(MemSpace::sbuf, DType::fp32, 0, {{16, 4}, {1, 8}}).free_contiguous());
  EXPECT_FALSE(make(MemSpace::sbuf, DType::fp32, 0, {{1, 4}, {4, 8}}).free_contiguous());
  EXPECT_FALSE(make(MemSpace::sbuf, DType::fp32, 0, {{-1, 4}}).free_contiguous());
  EXPECT_FALSE(make(MemSpace::sbuf, DType::fp32, 0, {{0, 4}}).free_contiguous());
}

TEST(AccessPattern, ForEachFreeOrderIsRowMajor) {
  // dims [10,2],[-1,3] of fp16: indices in order, byte offsets (10*a - b)*2.
  const auto ap = make(MemSpace::sbuf, DType::fp16, 0, {{10, 2}, {-1, 3}});
  std::vector<std::pair<uint64_t, int64_t>> got;
  for_each_free(ap, [&](uint64_t i, int64_t off) { got.emplace_back(i, off); });
  const std::vector<std::pair<uint64_t, int64_t>> want{{0, 0},  {1, -2}, {2, -4},
                                                       {3, 20}, {4, 18}, {5, 16}};
  EXPECT_EQ(got, want);
}

TEST(AccessPattern, ForEachFreeFourDimsAndScalar) {
  const auto ap = make(MemSpace::sbuf, DType::uint8, 0, {{1000, 2}, {100, 2}, {10, 2}, {1, 2}});
  std::vector<int64_t> offs;
  for_each_free(ap, [&](uint64_t i, int64_t off) {
    EXPECT_EQ(i, offs.size());
    offs.push_back(off);
  });
  ASSERT_EQ(offs.size(), 16u);
  EXPECT_EQ(offs[1], 1);
  EXPECT_EQ(offs[2], 10);
  EXPECT_EQ(offs[5], 101);  // 0101 in binary digits a,b,c,d
  EXPECT_EQ(offs[15], 1111);
  int n = 0;
  for_each_free(make(MemSpace::sbuf, DType::fp32, 0, {}), [&](uint64_t, int64_t off) {
    EXPECT_EQ(off, 0);
    ++n;
  });
  EXPECT_EQ(n, 1);
}

TEST(AccessPattern, Ap2dAndToString) {
  const auto s = ap_2d(MemSpace::sbuf, DType::bf16, 32, 32, 256, 64);
  EXPECT_EQ(s.partition_start, 32u);
  EXPECT_EQ(s.partition_count, 32u);
  EXPECT_EQ(s.free_elems(), 64u);
  EXPECT_TRUE(s.free_contiguous());
  EXPECT_EQ(to_string(s), "sbuf[32:64, 256, bf16, [1,64]]");
  const auto h = ap_2d(MemSpace::hbm, DType::fp32, 0, 4, 1024, 16);
  EXPECT_EQ(h.partition_stride, 16);  // rows back to back
  EXPECT_EQ(h.end_byte(), 1024 + 4 * 16 * 4);
  EXPECT_EQ(to_string(h), "hbm[4x16, 1024, fp32, [1,16]]");
  EXPECT_EQ(mem_space_name(MemSpace::psum), "psum");
}

}  // namespace
}  // namespace trnsim::isa
