// Symmetry classes of SPMD runs (runtime/symmetry.h) and the data-parallel batch
// slice (runtime/data_parallel.h): which runs fold, and why the others do not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/isa/assembler.h"
#include "runtime/data_parallel.h"
#include "runtime/device.h"
#include "runtime/symmetry.h"

namespace trnsim::runtime {
namespace {

// A DMA load and an all_reduce over `group` ("0,1,2,3"), of `n` fp32.
isa::Program prog(const std::string& group, int n = 64) {
  const std::string N = std::to_string(n);
  return isa::assemble(
      ".program p\n.semaphores 1\n.tensor x [" + N + "] fp32 input @0\n" + ".tensor y [" + N +
      "] fp32 output @4096\n.queue dma 0 0\n" + "dma_copy dst=sbuf[0:1, 0, fp32, [1," + N +
      "]] src=hbm[1x" + N + ", @x, fp32, [1," + N + "]] signal=s0+1\n.queue sync\n" +
      "all_reduce dst=hbm[1x0, @y, fp32, [1," + N + "]] src=hbm[1x0, @x, fp32, [1," + N +
      "]] group=[" + group + "] wait=s0>=1\n");
}

std::vector<const isa::Program*> all(const isa::Program& p, size_t n) {
  return std::vector<const isa::Program*>(n, &p);
}

TEST(Symmetry, OneProgramFoldsToAChip) {
  const isa::Program p = prog("0,1,2,3,4,5,6,7");
  const SymmetryPlan s = plan_symmetry(all(p, 8), 2);
  EXPECT_TRUE(s.folded());
  EXPECT_EQ(s.ranks, 8u);
  EXPECT_EQ(s.simulated, 2u);  // chip 0's two cores stand for chips 1-3
  EXPECT_NE(describe_symmetry(s).find("8 ranks in 2 classes"), std::string::npos);
}

TEST(Symmetry, ReplicaGroupsFoldWhenAlike) {
  // Two replicas of 4 ranks (2 chips each): ranks 4-7 hold group [4..7].
  const isa::Program a = prog("0,1,2,3"), b = prog("4,5,6,7");
  std::vector<const isa::Program*> ps = {&a, &a, &a, &a, &b, &b, &b, &b};
  EXPECT_TRUE(plan_symmetry(ps, 2).folded());
}

TEST(Symmetry, AnotherProgramIsNotFolded) {
  const isa::Program a = prog("0,1,2,3"), other = prog("0,1,2,3", 128);
  std::vector<const isa::Program*> ps = {&a, &a, &other, &a};
  const SymmetryPlan s = plan_symmetry(ps, 2);
  EXPECT_FALSE(s.folded());
  EXPECT_EQ(s.simulated, 4u);
  EXPECT_NE(s.why_not.find("rank 2"), std::string::npos) << s.why_not;
}

TEST(Symmetry, PartialPermuteIsNotFolded) {
  // Pipeline shift over 4 ranks on 2 chips: rank 3 sends nothing, rank 0 receives
  // nothing, so rank 2 cannot stand in for rank 0 (nor rank 3 for rank 1).
  const std::string head = ".tensor x [8] fp32 input @0\n.queue sync\n";
  const std::string ap = " dst=hbm[1x0, @x, fp32, [1,4]] src=hbm[1x0, @x+16, fp32, [1,4]]";
  const isa::Program part =
      isa::assemble(head + "permute" + ap + " group=[0,1,2,3] peers=[1,2,3,-]\n");
  const SymmetryPlan s = plan_symmetry(all(part, 4), 2);
  EXPECT_FALSE(s.folded());
  EXPECT_NE(s.why_not.find("partial permute"), std::string::npos) << s.why_not;
  // The full shift still folds.
  const isa::Program full =
      isa::assemble(head + "permute" + ap + " group=[0,1,2,3] peers=[1,2,3,0]\n");
  EXPECT_TRUE(plan_symmetry(all(full, 4), 2).folded());
}

TEST(Symmetry, GroupOfOtherPlacementIsNotFolded) {
  // Rank 2's group spans 4 chips where rank 0's spans 2: another collective time.
  const isa::Program a = prog("0,1,2,3"), b = prog("0,2,4,6");
  std::vector<const isa::Program*> ps = {&a, &a, &b, &a, &a, &a, &a, &a};
  const SymmetryPlan s = plan_symmetry(ps, 2);
  EXPECT_FALSE(s.folded());
  EXPECT_NE(s.why_not.find("size or placement"), std::string::npos) << s.why_not;
}

TEST(Symmetry, GroupWithoutItsRepresentativesIsNotFolded) {
  // Rank 0's group [0,3]: rank 3 would arrive as rank 1, which is not in the group
  // (and rank 1's [1,2] lacks rank 0 that stands for rank 2).
  const isa::Program a = prog("0,3"), b = prog("1,2");
  std::vector<const isa::Program*> ps = {&a, &b, &b, &a};
  const SymmetryPlan s = plan_symmetry(ps, 2);
  EXPECT_FALSE(s.folded());
  EXPECT_NE(s.why_not.find("holds rank 3 but not rank 1"), std::string::npos) << s.why_not;
}

TEST(Symmetry, RanksOfOneChipOrAPartChipAreNotFolded) {
  const isa::Program p = prog("0,1,2");
  EXPECT_FALSE(plan_symmetry(all(p, 2), 2).folded());
  EXPECT_FALSE(plan_symmetry(all(p, 3), 2).folded());
}

TEST(DataParallel, BatchSliceTakesRows) {
  HostTensor t = HostTensor::from_float({4, 2}, isa::DType::fp32, {0, 1, 2, 3, 4, 5, 6, 7});
  const HostTensor s = batch_slice(t, 1, 2);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.to_float(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_THROW(batch_slice(t, 0, 3), RunError);
}

TEST(DataParallel, ShiftGroupsMovesEveryGroup) {
  const isa::Program p = shift_groups(prog("0,1"), 4);
  EXPECT_EQ(p.queues.back().instrs.back().group, (std::vector<uint32_t>{4, 5}));
}

}  // namespace
}  // namespace trnsim::runtime
