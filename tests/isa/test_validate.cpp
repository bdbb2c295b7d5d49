#include "models/isa/validate.h"

#include <gtest/gtest.h>

#include "models/isa/assembler.h"
#include "models/isa/binary.h"

namespace trnsim::isa {

extern const char* const kAllOpsProgram;  // test_assembler.cpp

namespace {

std::string validation_error(const Program& p, const Limits& lim = {}) {
  try {
    validate(p, lim);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(Validate, EveryOpcodeProgramPasses) {
  EXPECT_NO_THROW(validate(assemble(kAllOpsProgram), Limits{}));
  // The fixture's HBM footprint is 393264 bytes: fits exactly, one byte less fails.
  Limits lim;
  lim.hbm_bytes = 393264;
  EXPECT_NO_THROW(validate(assemble(kAllOpsProgram), lim));
  lim.hbm_bytes = 393263;
  EXPECT_NE(validation_error(assemble(kAllOpsProgram), lim).find("tensor 'idx'"),
            std::string::npos);
}

TEST(Validate, CollectiveRules) {
  const std::string head = ".tensor x [256] fp32 input @0\n.queue sync\n";
  const auto err = [&](const std::string& line) {
    return validation_error(assemble(head + line + "\n", "c.tasm"));
  };
  const std::string f8 = "hbm[1x0, @x, fp32, [1,8]]", f16 = "hbm[1x0, @x, fp32, [1,16]]";
  EXPECT_EQ(err("all_reduce dst=" + f8 + " src=" + f8 + " group=[0,1]"), "");
  EXPECT_EQ(err("all_gather dst=" + f16 + " src=" + f8 + " group=[0,1]"), "");
  EXPECT_EQ(err("reduce_scatter dst=" + f8 + " src=" + f16 + " group=[2,3]"), "");
  EXPECT_NE(err("all_reduce dst=" + f16 + " src=" + f8 + " group=[0,1]").find("keeps the count"),
            std::string::npos);
  EXPECT_NE(err("all_gather dst=" + f8 + " src=" + f8 + " group=[0,1]").find("needs 16"),
            std::string::npos);
  EXPECT_NE(err("reduce_scatter dst=" + f8 + " src=" + f8 + " group=[0,1]").find("needs 16"),
            std::string::npos);
  EXPECT_NE(err("all_reduce dst=hbm[1x0, @x, fp16, [1,8]] src=hbm[1x0, @x, fp16, [1,8]] "
                "group=[0,1]")
                .find("not a collective dtype"),
            std::string::npos);
  EXPECT_NE(err("all_reduce dst=hbm[1x0, @x, bf16, [1,8]] src=" + f8 + " group=[0,1]")
                .find("does not cast"),
            std::string::npos);
  EXPECT_NE(err("all_reduce dst=sbuf[0:1, 0, fp32, [1,8]] src=" + f8 + " group=[0,1]")
                .find("collective operands are in hbm"),
            std::string::npos);
  // all_to_all: one block per rank, the count kept; permute: peers a permutation.
  EXPECT_EQ(err("all_to_all dst=" + f8 + " src=" + f8 + " group=[0,1]"), "");
  EXPECT_NE(err("all_to_all dst=" + f8 + " src=" + f8 + " group=[0,1,2]").find("multiple of 3"),
            std::string::npos);
  EXPECT_NE(err("all_to_all dst=" + f16 + " src=" + f8 + " group=[0,1]").find("keeps the count"),
            std::string::npos);
  EXPECT_EQ(err("permute dst=" + f8 + " src=" + f8 + " group=[0,1,2] peers=[1,2,0]"), "");
  EXPECT_NE(err("permute dst=" + f8 + " src=" + f8 + " group=[0,1,2] peers=[1,1,0]").find("twice"),
            std::string::npos);
  EXPECT_NE(err("permute dst=" + f8 + " src=" + f8 + " group=[0,1,2] peers=[1,3,0]")
                .find("not in the group"),
            std::string::npos);
  EXPECT_NE(err("permute dst=" + f8 + " src=" + f8 + " group=[0,1,2] peers=[1,0]")
                .find("one per group rank"),
            std::string::npos);
  // A partial permute: '-' sends nothing; the real entries stay distinct group ranks.
  // The messages name the instruction (line 3: after the two header lines).
  const std::string pm = "permute dst=" + f8 + " src=" + f8 + " group=[0,1,2,3] ";
  EXPECT_EQ(err(pm + "peers=[1,2,3,-]"), "");
  EXPECT_EQ(err(pm + "peers=[-,-,-,-]"), "");
  EXPECT_EQ(err(pm + "peers=[1,1,3,-]"),
            "queue sync, instruction 0 (line 3, permute): peers name rank 1 twice; a rank receives "
            "from at most one (peers must be injective)");
  EXPECT_EQ(
      err(pm + "peers=[1,2,7,-]"),
      "queue sync, instruction 0 (line 3, permute): peers entry 2 is rank 7, not in the group");
  EXPECT_NE(err(pm + "peers=[1,2,-]").find("'-' for one that sends nothing"), std::string::npos);
  // A binary program could put the mark in a group: not a rank.
  Program pg = assemble(head + pm + "peers=[1,2,3,-]\n");
  pg.queues[0].instrs[0].group.back() = kNoPeer;
  EXPECT_NE(validation_error(pg).find("group rank 4294967295 is the no-peer mark"),
            std::string::npos);
  // A binary program may carry any group: the validator checks the order too.
  Program p = assemble(head + "barrier group=[0,1]\n");
  p.queues[0].instrs[0].group = {1, 1};
  EXPECT_NE(validation_error(p).find("ascending and distinct"), std::string::npos);
}

TEST(Validate, DocExamplePasses) {
  const Program p = assemble(R"(.program scale2
.semaphores 2
.tensor x [128,512] fp32 input @0
.tensor y [128,512] fp32 output @262144
.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp32, [1,512]] src=hbm[128x512, @x, fp32, [1,512]] signal=s0+1
dma_copy dst=hbm[128x512, @y, fp32, [1,512]] src=sbuf[0:128, 2048, fp32, [1,512]] wait=s1>=1
.queue vector
tensor_scalar dst=sbuf[0:128, 2048, fp32, [1,512]] src=sbuf[0:128, 0, fp32, [1,512]] op0=mul arg0=2 wait=s0>=1 signal=s1+1
)");
  Limits lim;
  lim.hbm_bytes = 2 * 262144;
  EXPECT_NO_THROW(validate(p, lim));
}

TEST(Validate, Fp8DoubleRowMatmul) {
  // K = 256 as 128 partitions x two halves of the free elements; the target must have
  // double-row mode, the inputs must be fp8 and the free sizes even.
  auto prog = [](const char* st_dt, int st_free, int mv_free) {
    return assemble(std::string(".queue tensor\nmatmul dst=psum[0:16, 0, fp32, [1,40]] "
                                "stationary=sbuf[0:128, 0, ") +
                    st_dt + ", [1," + std::to_string(st_free) + "]] moving=sbuf[0:128, 1024, " +
                    st_dt + ", [1," + std::to_string(mv_free) + "]] double_row=1\n");
  };
  Limits v3;
  v3.matmul_double_row = true;
  EXPECT_EQ(validation_error(prog("fp8e4m3", 32, 80), v3), "");
  EXPECT_NE(validation_error(prog("fp8e4m3", 32, 80))
                .find("double_row=1 needs a tensor engine "
                      "with fp8 double-row mode"),
            std::string::npos);
  EXPECT_NE(validation_error(prog("bf16", 32, 80), v3).find("double_row=1 is for fp8 inputs only"),
            std::string::npos);
  EXPECT_NE(validation_error(prog("fp8e5m2", 33, 80), v3).find("an even number"),
            std::string::npos);
  // M and N are half the free sizes: dst [16, 40] above; [16, 80] does not match.
  EXPECT_NE(validation_error(assemble(".queue tensor\nmatmul dst=psum[0:16, 0, fp32, [1,80]] "
                                      "stationary=sbuf[0:128, 0, fp8e4m3, [1,32]] "
                                      "moving=sbuf[0:128, 1024, fp8e4m3, [1,80]] double_row=1\n"),
                             v3)
                .find("stationary^T @ moving is [M,N]=[16,40]"),
            std::string::npos);
}

TEST(Validate, PartitionStartRuleAllowedStarts) {
  // Each legal (start, count) corner of the rule passes.
  const Program p = assemble(R"(.queue vector
memset dst=sbuf[0:128, 0, fp32] value=0
memset dst=sbuf[64:128, 0, fp32] value=0
memset dst=sbuf[0:33, 0, fp32] value=0
memset dst=sbuf[96:128, 0, fp32] value=0
memset dst=sbuf[32:33, 0, fp32] value=0
memset dst=psum[64:96, 0, fp32] value=0
)");
  EXPECT_NO_THROW(validate(p, Limits{}));
}

TEST(Validate, MessageNamesQueueIndexLineAndOpcode) {
  const Program p = assemble(R"(.program t
.semaphores 2
.tensor x [4] fp32 input @0
.queue vector
nop
tensor_tensor dst=sbuf[0:64, 0, fp32, [1,8]] in0=sbuf[0:64, 0, fp32, [1,8]] in1=sbuf[5:69, 0, fp32, [1,8]] op=add
)");
  EXPECT_EQ(validation_error(p),
            "queue vector, instruction 1 (line 6, tensor_tensor): in1 partition_start 5 breaks "
            "the partition-start rule (33..64 partitions start at 0 or 64)");
}

// One rule per case: the program text after a two-line header, the message fragment
// it must produce, and optionally tighter limits.
struct RuleCase {
  const char* name;
  const char* body;
  const char* fragment;
  void (*limits)(Limits&) = nullptr;
};

const RuleCase kRules[] = {
    {"EngineAllowsOpcode",
     ".queue vector\nmatmul dst=psum[0:1, 0, fp32] stationary=sbuf[0:1, 0, fp32] "
     "moving=sbuf[0:1, 0, fp32]",
     "matmul is not allowed on the vector engine"},
    {"DmaCopyOnlyOnDma", ".queue sync\ndma_copy dst=sbuf[0:1, 0, fp32] src=hbm[1x0, 0, fp32]",
     "dma_copy is not allowed on the sync engine"},
    {"TensorEngineReadsSbuf",
     ".queue tensor\ntranspose dst=psum[0:4, 0, fp32, [1,4]] src=psum[0:4, 64, fp32, [1,4]]",
     "src is in psum; the tensor engine reads sbuf only"},
    {"TensorEngineWritesPsum",
     ".queue tensor\ntranspose dst=sbuf[0:4, 0, fp32, [1,4]] src=sbuf[0:4, 64, fp32, [1,4]]",
     "dst is in sbuf; the tensor engine writes psum only"},
    {"VectorNoHbm", ".queue vector\ntensor_copy dst=hbm[1x0, 0, fp32] src=sbuf[0:1, 0, fp32]",
     "dst is in hbm; the vector engine reads and writes sbuf and psum only"},
    {"ScalarNoHbm",
     ".queue scalar\nactivation dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 0, fp32] func=exp "
     "bias=hbm[1x0, 0, fp32]",
     "bias is in hbm; the scalar engine reads and writes sbuf and psum only"},
    {"GpsimdSbufOnly", ".queue gpsimd\ntensor_copy dst=sbuf[0:1, 0, fp32] src=psum[0:1, 0, fp32]",
     "src is in psum; the gpsimd engine reads and writes sbuf only"},
    {"DmaNoPsum", ".queue dma 0 0\ndma_copy dst=psum[0:1, 0, fp32] src=hbm[1x0, 0, fp32]",
     "dst is in psum; dma moves between hbm and sbuf only"},
    {"PartitionsInBounds", ".queue vector\nmemset dst=sbuf[100:129, 0, fp32] value=0",
     "dst partitions 100..128 exceed the 128 partitions"},
    {"SbufBytesInBounds",
     // 196600 + 4*4 = 196616 > 192 KiB = 196608.
     ".queue vector\nmemset dst=sbuf[0:128, 196600, fp32, [1,4]] value=0",
     "dst ends at byte 196616, past the 196608-byte sbuf partition"},
    {"PsumBytesInBounds",
     // 16380 + 2*4 = 16388 > 16 KiB.
     ".queue vector\nmemset dst=psum[0:128, 16380, fp32, [1,2]] value=0",
     "dst ends at byte 16388, past the 16384-byte psum partition"},
    {"NoNegativeBytes",
     // 4 - 2*4 = -4.
     ".queue vector\nmemset dst=sbuf[0:1, 4, fp32, [-1,3]] value=0",
     "dst reaches byte -4 of the partition (below 0)"},
    {"PartitionStartOver64", ".queue vector\nmemset dst=sbuf[32:128, 0, fp32] value=0",
     "dst partition_start 32 breaks the partition-start rule (more than 64 partitions start "
     "at 0)"},
    {"PartitionStart33To64", ".queue vector\nmemset dst=psum[32:96, 0, fp32] value=0",
     "dst partition_start 32 breaks the partition-start rule (33..64 partitions start at 0 or "
     "64)"},
    {"PartitionStartUpTo32", ".queue vector\nmemset dst=sbuf[16:48, 0, fp32] value=0",
     "dst partition_start 16 breaks the partition-start rule (1..32 partitions start at 0, 32, "
     "64 or 96)"},
    {"HbmNotNegative",
     ".queue dma 0 0\ndma_copy dst=sbuf[0:1, 0, fp32, [1,2]] src=hbm[1x0, 0, fp32, [-1,2]]",
     "src reaches hbm byte -4 (below 0)"},
    {"HbmRowsNotNegative",
     // Row 1 starts 8 elements = 32 bytes before byte 16.
     ".queue dma 0 0\ndma_copy dst=sbuf[0:2, 0, fp32] src=hbm[2x-8, 16, fp32]",
     "src reaches hbm byte -16 (below 0)"},
    {"HbmWithinProgram",
     // 1020 + 2*4 = 1028 > 1024.
     ".queue dma 0 0\ndma_copy dst=sbuf[0:1, 0, fp32, [1,2]] src=hbm[1x0, 1020, fp32, [1,2]]",
     "src ends at hbm byte 1028, past the 1024 bytes of hbm",
     [](Limits& l) { l.hbm_bytes = 1024; }},
    {"TensorWithinHbm", ".tensor big [512] fp32 input @0\n.queue sync\nnop",
     "tensor 'big': ends at hbm byte 2048, past the 1024 bytes of hbm",
     [](Limits& l) { l.hbm_bytes = 1024; }},
    {"EmptyPattern", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32, [1,0]] value=0",
     "dst dim 0 has size 0"},
    {"ElementwisePartitions",
     ".queue vector\ntensor_tensor dst=sbuf[0:128, 0, fp32, [1,8]] in0=sbuf[0:128, 0, fp32, "
     "[1,8]] in1=sbuf[0:64, 64, fp32, [1,8]] op=add",
     "in1 is [64,8] (partitions x elements) but dst is [128,8]"},
    {"ElementwiseFreeElems",
     ".queue scalar\ntensor_copy dst=sbuf[0:128, 0, fp32, [1,8]] src=sbuf[0:128, 64, fp32, "
     "[1,7]]",
     "src is [128,7] (partitions x elements) but dst is [128,8]"},
    {"SelectOperandShapes",
     ".queue vector\nselect dst=sbuf[0:4, 0, fp32, [1,8]] pred=sbuf[0:4, 0, fp32, [1,8]] "
     "on_true=sbuf[0:4, 0, fp32, [1,8]] on_false=sbuf[0:4, 0, fp32, [2,4]]",
     "on_false is [4,4]"},
    {"PerPartitionScalar",
     ".queue vector\ntensor_scalar dst=sbuf[0:128, 0, fp32, [1,8]] src=sbuf[0:128, 0, fp32, "
     "[1,8]] op0=add arg0=sbuf[0:128, 64, fp32, [1,2]]",
     "arg0 is [128,2]; a per-partition operand must be [128,1]"},
    {"AccumPerPartition",
     ".queue scalar\nactivation dst=sbuf[0:128, 0, fp32, [1,8]] src=sbuf[0:128, 0, fp32, "
     "[1,8]] func=exp accum=sbuf[0:64, 64, fp32]",
     "accum is [64,1]; a per-partition operand must be [128,1]"},
    {"DmaElementCounts",
     ".queue dma 0 0\ndma_copy dst=sbuf[0:2, 0, fp32, [1,4]] src=hbm[1x0, 0, fp32, [1,7]]",
     "dst has 8 elements but src has 7"},
    {"MatmulDstFp32",
     ".queue tensor\nmatmul dst=psum[0:4, 0, bf16, [1,4]] stationary=sbuf[0:8, 0, bf16, [1,4]] "
     "moving=sbuf[0:8, 64, bf16, [1,4]]",
     "dst dtype is bf16; matmul writes fp32"},
    {"MatmulNoIntegerInputs",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,4]] stationary=sbuf[0:8, 0, int32, "
     "[1,4]] moving=sbuf[0:8, 64, fp32, [1,4]]",
     "stationary dtype int32 is not a matmul input"},
    {"MatmulFp8BothOrNeither",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,4]] stationary=sbuf[0:8, 0, fp8e4m3, "
     "[1,4]] moving=sbuf[0:8, 64, bf16, [1,4]]",
     "stationary is fp8e4m3 and moving is bf16; matmul inputs are both fp8 or neither"},
    {"MatmulSameK",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,4]] stationary=sbuf[0:8, 0, fp32, [1,4]] "
     "moving=sbuf[0:16, 64, fp32, [1,4]]",
     "stationary has K=8 partitions but moving has 16"},
    {"MatmulMaxK",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,4]] stationary=sbuf[0:128, 0, fp32, "
     "[1,4]] moving=sbuf[0:128, 64, fp32, [1,4]]",
     "K=128 exceeds 64", [](Limits& l) { l.matmul_max_k = 64; }},
    {"MatmulMaxM",
     ".queue tensor\nmatmul dst=psum[0:128, 0, fp32, [1,4]] stationary=sbuf[0:8, 0, fp32, "
     "[1,129]] moving=sbuf[0:8, 1024, fp32, [1,4]]",
     "M=129 (stationary free elements) exceeds 128"},
    {"MatmulMaxN",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,513]] stationary=sbuf[0:8, 0, fp32, "
     "[1,4]] moving=sbuf[0:8, 64, fp32, [1,513]]",
     "N=513 (moving free elements) exceeds 512"},
    {"MatmulDstShape",
     ".queue tensor\nmatmul dst=psum[0:4, 0, fp32, [1,8]] stationary=sbuf[0:8, 0, fp32, [1,4]] "
     "moving=sbuf[0:8, 64, fp32, [1,4]]",
     "dst is [4,8] but stationary^T @ moving is [M,N]=[4,4]"},
    {"MatmulOnePsumBank",
     // 1024 + 512*4 = 3072: bytes 1024..3071 span banks 0 and 1.
     ".queue tensor\nmatmul dst=psum[0:4, 1024, fp32, [1,512]] stationary=sbuf[0:8, 0, fp32, "
     "[1,4]] moving=sbuf[0:8, 64, fp32, [1,512]]",
     "dst bytes 1024..3072 cross a 2048-byte PSUM bank boundary"},
    {"TransposeMaxSize",
     ".queue tensor\ntranspose dst=psum[0:4, 0, fp32, [1,4]] src=sbuf[0:4, 0, fp32, [1,129]]",
     "src is [P,F]=[4,129]; transpose needs P <= 128 and F <= 128"},
    {"TransposeDstShape",
     ".queue tensor\ntranspose dst=psum[0:4, 0, fp32, [1,8]] src=sbuf[0:4, 0, fp32, [1,8]]",
     "dst is [4,8] but the transpose of src [4,8] is [8,4]"},
    {"TransposeDtype",
     ".queue tensor\ntranspose dst=psum[0:8, 0, bf16, [1,4]] src=sbuf[0:4, 0, fp16, [1,8]]",
     "dst dtype bf16 must be the src dtype (fp16) or fp32"},
    {"ReduceAxesExist",
     ".queue vector\ntensor_reduce dst=sbuf[0:4, 0, fp32] src=sbuf[0:4, 0, fp32, [1,8]] op=add "
     "axes=[1]",
     "axes names dim 1 but src has 1 dims"},
    {"ReduceDstElems",
     // src [4][8], reducing dim 1 keeps 4 elements.
     ".queue vector\ntensor_reduce dst=sbuf[0:4, 0, fp32, [1,8]] src=sbuf[0:4, 0, fp32, [8,4], "
     "[1,8]] op=max axes=[1]",
     "dst has 8 elements per partition; the dims src keeps after the reduction hold 4"},
    {"ReduceOp",
     ".queue gpsimd\ntensor_reduce dst=sbuf[0:4, 0, fp32] src=sbuf[0:4, 0, fp32, [1,8]] op=sub "
     "axes=[0]",
     "op=sub is not a reduction (add, max, min)"},
    {"PartitionReduceFreeElems",
     ".queue gpsimd\npartition_reduce dst=sbuf[0:1, 0, fp32, [1,8]] src=sbuf[0:32, 0, fp32, "
     "[1,4]] op=add",
     "dst has 8 elements per partition but src has 4"},
    {"PartitionBroadcastOneSource",
     ".queue gpsimd\npartition_broadcast dst=sbuf[0:32, 0, fp32, [1,4]] src=sbuf[0:2, 0, fp32, "
     "[1,4]]",
     "src must be one partition, has 2"},
    {"BnStatsDst",
     ".queue vector\nbn_stats dst=sbuf[0:128, 0, fp32, [1,4]] src=sbuf[0:128, 64, fp32, [1,8]]",
     "dst is [128,4]; bn_stats writes [128,3]"},
    {"BnAggrSrcMultipleOf3",
     ".queue vector\nbn_aggr dst=sbuf[0:128, 0, fp32, [1,2]] src=sbuf[0:128, 64, fp32, [1,4]]",
     "src holds 4 elements per partition; bn_aggr needs a multiple of 3"},
    {"BnAggrDst",
     ".queue vector\nbn_aggr dst=sbuf[0:128, 0, fp32, [1,3]] src=sbuf[0:128, 64, fp32, [1,6]]",
     "dst is [128,3]; bn_aggr writes [128,2]"},
    {"AffineSelectCompares",
     ".queue gpsimd\naffine_select dst=sbuf[0:4, 0, fp32, [1,4]] src=sbuf[0:4, 64, fp32, [1,4]] "
     "cmp=add",
     "cmp=add is not a comparison"},
    {"StepsOnlyForDstDims", ".queue gpsimd\niota dst=sbuf[0:4, 0, int32, [1,4]] steps=[1,2]",
     "steps[1] is set but dst has 1 dims"},
    {"SemaphoreCountLimit", ".semaphores 300\n.queue sync\nnop",
     "program declares 300 semaphores; the core has 256"},
    {"DmaEngineId", ".queue dma 16 0\nnop", "queue dma.16.0: dma engine 16 >= 16 dma engines"},
    {"DmaQueueId", ".queue dma 2 5\nnop", "queue dma.2.5: dma queue 5 >= 4 queues per dma engine",
     [](Limits& l) { l.dma_queues = 4; }},
};

class ValidateRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ValidateRule, ReportsTheRule) {
  const Program p = assemble(std::string(".program t\n") + GetParam().body, "rule.tasm");
  Limits lim;
  if (GetParam().limits) GetParam().limits(lim);
  const std::string e = validation_error(p, lim);
  EXPECT_NE(e.find(GetParam().fragment), std::string::npos) << "got: '" << e << "'";
}

INSTANTIATE_TEST_SUITE_P(ValidateRules, ValidateRule, ::testing::ValuesIn(kRules),
                         [](const auto& info) { return std::string(info.param.name); });

// Rules the assembler cannot express (it rejects the text first) are built directly.

Program one(Engine e, const Instruction& in, uint32_t sems = 0) {
  Program p;
  p.num_semaphores = sems;
  p.queues.push_back({e, 0, 0, {in}});
  return p;
}

Instruction copy_instr() {
  Instruction in;
  in.op = Opcode::tensor_copy;
  in.nsrc = 1;
  in.dst = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 0, 8);
  in.src[0] = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 64, 8);
  return in;
}

TEST(Validate, OperandCount) {
  Instruction in = copy_instr();
  in.nsrc = 2;
  EXPECT_NE(
      validation_error(one(Engine::vector, in)).find("has 2 source operands; tensor_copy takes 1"),
      std::string::npos);
}

TEST(Validate, SemaphoreIdsWithinProgram) {
  Instruction in = copy_instr();
  in.waits.push_back({5, 1});
  EXPECT_NE(validation_error(one(Engine::vector, in, 2))
                .find("wait on s5 but the program has 2 semaphores"),
            std::string::npos);
  in.waits.clear();
  in.signals.push_back({2, 1, SignalWhen::start});
  EXPECT_NE(validation_error(one(Engine::vector, in, 2))
                .find("signal of s2 but the program has 2 semaphores"),
            std::string::npos);
  EXPECT_EQ(validation_error(one(Engine::vector, in, 3)), "");
}

TEST(Validate, ImmediateOnlyScalars) {
  Instruction in;
  in.op = Opcode::memset;
  in.dst = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 0, 8);
  in.arg0.is_ap = true;
  in.arg0.ap = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 64, 1);
  EXPECT_NE(validation_error(one(Engine::vector, in)).find("value must be an immediate"),
            std::string::npos);
  in.op = Opcode::iota;
  EXPECT_NE(validation_error(one(Engine::gpsimd, in)).find("base must be an immediate"),
            std::string::npos);
}

TEST(Validate, AccumOnlyWhereDefined) {
  Instruction in = copy_instr();
  in.has_accum = true;
  in.accum = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 128, 1);
  EXPECT_NE(validation_error(one(Engine::vector, in))
                .find("accum is only for activation and tensor_scalar"),
            std::string::npos);
  in.op = Opcode::activation;
  in.accum_op = AluOp::max;
  EXPECT_NE(validation_error(one(Engine::scalar, in)).find("activation accumulates with add only"),
            std::string::npos);
  in.accum_op = AluOp::add;
  EXPECT_EQ(validation_error(one(Engine::scalar, in)), "");
}

TEST(Validate, PatternFieldsForTheSpace) {
  Instruction in;
  in.op = Opcode::dma_copy;
  in.nsrc = 1;
  in.dst = ap_2d(MemSpace::sbuf, DType::fp32, 0, 4, 0, 8);
  in.src[0] = ap_2d(MemSpace::hbm, DType::fp32, 0, 4, 0, 8);
  EXPECT_EQ(validation_error(one(Engine::dma, in)), "");
  in.src[0].partition_start = 3;
  EXPECT_NE(validation_error(one(Engine::dma, in))
                .find("src is an hbm pattern with partition_start 3 (must be 0)"),
            std::string::npos);
  in.src[0].partition_start = 0;
  in.dst.partition_stride = 8;
  EXPECT_NE(validation_error(one(Engine::dma, in))
                .find("dst has partition_stride 8 (hbm only; must be 0)"),
            std::string::npos);
  in.dst.partition_stride = 0;
  in.dst.ndims = 5;
  EXPECT_NE(validation_error(one(Engine::dma, in)).find("dst has 5 dims (at most 4)"),
            std::string::npos);
  in.dst.ndims = 1;
  in.dst.dtype = static_cast<DType>(99);
  EXPECT_NE(validation_error(one(Engine::dma, in)).find("dst has a bad dtype"), std::string::npos);
}

TEST(Validate, BadEnumsAreErrorsNotCrashes) {
  Instruction in = copy_instr();
  in.op = static_cast<Opcode>(77);
  EXPECT_NE(validation_error(one(Engine::vector, in)).find("bad opcode 77"), std::string::npos);
  in = copy_instr();
  in.op0 = static_cast<AluOp>(50);
  EXPECT_NE(validation_error(one(Engine::vector, in)).find("bad ALU op 50"), std::string::npos);
}

TEST(Validate, ProgramTables) {
  Program p = assemble(".tensor c [4] uint8 constant @0\n.data c AAAAAA==\n");
  EXPECT_EQ(validation_error(p), "");
  p.constants["c"].push_back(1);
  EXPECT_EQ(validation_error(p), "constant data for 'c' has 5 bytes; the tensor needs 4");
  p.constants.erase("c");
  p.constants["nope"] = {};
  EXPECT_EQ(validation_error(p), "constant data for 'nope' names no declared tensor");
  p.constants.clear();
  p.tensors.push_back(p.tensors[0]);
  EXPECT_EQ(validation_error(p), "tensor 'c': declared twice");
  p.tensors.pop_back();
  p.tensors[0].name = "a b";
  EXPECT_EQ(validation_error(p), "tensor 'a b': the name is not an identifier");
  p.tensors[0].name = "c";
  p.name = "";
  EXPECT_EQ(validation_error(p), "program name '' is not an identifier");
}

// Tensors past the 1 PiB the simulator models are refused naming them, also when
// they come from a binary (no source line): a 2^62-byte tensor used to reach the
// runtime, which tried to allocate it.
TEST(Validate, TensorsPastTheLargestHbmAreRefused) {
  Program p = assemble(".tensor x [2] fp32 input @0\n");
  p.tensors[0].shape = {1 << 20, 1 << 20, 1 << 20};  // 2^62 bytes
  EXPECT_EQ(validation_error(p),
            "tensor 'x': [1048576,1048576,1048576] fp32 (4611686018427387904 bytes) at hbm byte "
            "0 ends past the 1125899906842624 bytes (1 PiB) of the largest hbm the simulator "
            "models");
  p.tensors[0].shape = {int64_t{1} << 40, int64_t{1} << 40};  // 2^82 bytes: saturates
  EXPECT_NE(validation_error(p).find("(more than 2^64 bytes)"), std::string::npos);
  p.tensors[0].shape = {2};
  p.tensors[0].hbm_offset = uint64_t{1} << 50;  // 8 bytes past the end
  EXPECT_NE(validation_error(p).find("at hbm byte 1125899906842624 ends past"), std::string::npos);
  p.tensors[0].hbm_offset = (uint64_t{1} << 50) - 8;  // ends exactly there
  EXPECT_EQ(validation_error(p), "");
  // The same from the binary form.
  p.tensors[0].shape = {1 << 20, 1 << 20, 1 << 20};
  p.tensors[0].hbm_offset = 0;
  const Program q = decode_binary(encode_binary(p), "x.tbin");
  EXPECT_NE(validation_error(q).find("tensor 'x': [1048576,1048576,1048576]"), std::string::npos);
}

TEST(Validate, QueueTable) {
  Program p;
  p.queues.push_back({Engine::vector, 0, 0, {}});
  p.queues.push_back({Engine::dma, 1, 2, {}});
  EXPECT_EQ(validation_error(p), "");
  p.queues.push_back({Engine::vector, 0, 0, {}});
  EXPECT_EQ(validation_error(p), "queue vector: appears twice in the program");
  p.queues.back() = {Engine::dma, 1, 2, {}};
  EXPECT_EQ(validation_error(p), "queue dma.1.2: appears twice in the program");
  p.queues.back() = {Engine::scalar, 1, 0, {}};
  EXPECT_EQ(validation_error(p), "queue scalar: dma engine/queue ids set on a non-dma queue");
}

TEST(Validate, ValidateInstructionAlone) {
  Instruction in = copy_instr();
  in.src[0].space = MemSpace::psum;
  in.line = 7;
  EXPECT_NO_THROW(validate_instruction(in, Engine::vector, Limits{}, 0));
  try {
    validate_instruction(in, Engine::gpsimd, Limits{}, 0);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "gpsimd engine (line 7, tensor_copy): src is in psum; the gpsimd engine reads "
                 "and writes sbuf only");
  }
}

}  // namespace
}  // namespace trnsim::isa
