#include "models/isa/assembler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <set>

namespace trnsim::isa {

// A program using every opcode and every key, valid under the default Limits.
// test_binary.cpp and test_validate.cpp use it too.
extern const char* const kAllOpsProgram;
const char* const kAllOpsProgram = R"(# Every opcode and every key.
.program all_ops
.semaphores 4
.tensor x [128,512] fp32 input @0
.tensor w [2,8] fp16 constant @0x40000
.tensor y [128,512] bf16 output @262176
.tensor idx [4] int32 scratch @0x60020
.data w AAECAwQFBgcICQoLDA0ODw==
.data w EBESExQVFhcYGRobHB0eHw==   # appends

.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp32, [1,512]] src=hbm[128x512, @x, fp32, [1,512]] signal=s0+1
dma_copy dst=sbuf[0:2, 0x8000, fp16, [1,8]] src=hbm[2x8, @w, fp16, [1,8]] signal=s0+1@start
dma_copy dst=hbm[128x512, @y, bf16, [1,512]] src=sbuf[0:128, 4096, bf16, [1,512]] wait=s2>=1 wait=s3>=2
.queue dma 15 3
dma_copy dst=hbm[1x0, @idx+4, int32, [1,3]] src=sbuf[0:1, 0x9000, uint8, [1,3]] wait=s3>=3
nop signal=s1+2@done
.queue sync
nop wait=s0>=2 signal=s1+1
.queue tensor
matmul dst=psum[0:128, 0, fp32, [1,512]] stationary=sbuf[0:128, 0, fp32, [1,128]] moving=sbuf[0:128, 0, fp32, [1,512]] wait=s0>=2
matmul dst=psum[0:64, 2048, fp32, [1,256]] stationary=sbuf[0:32, 0x8000, fp8e4m3, [1,64]] moving=sbuf[0:32, 0x8100, fp8e5m2, [2,256]] accumulate=1
transpose dst=psum[0:64, 4096, bf16, [1,32]] src=sbuf[32:64, 0x8000, bf16, [1,64]] signal=s2+1
.queue scalar
activation dst=sbuf[0:128, 4096, bf16, [1,512]] src=psum[0:128, 0, fp32, [1,512]] func=gelu_tanh scale=0.5 bias=sbuf[0:128, 0xA000, fp32] accum=sbuf[0:128, 0xA004, fp32] wait=s2>=1
activation dst=sbuf[0:128, 0xB000, fp16, [1,4]] src=sbuf[0:128, 16, fp32, [-1,4]] func=exp scale=sbuf[0:128, 0xA008, fp32] bias=-inf
activation dst=sbuf[0:128, 0xB000, fp32, [1,4]] src=sbuf[0:128, 16, fp32, [1,4]] func=relu
tensor_scalar dst=sbuf[0:128, 0xB000, fp32, [4,2], [1,4]] src=sbuf[0:128, 0, fp32, [4,2], [1,4]] op0=sub arg0=2 op1=mul arg1=0x1p-3 reverse0=1 reverse1=1 accum=sbuf[0:128, 0xA00C, fp32] accum_op=max
tensor_copy dst=sbuf[64:128, 0xC000, fp32, [1,16]] src=psum[64:128, 0, fp32, [1,16]]
memset dst=sbuf[96:128, 0xC000, uint8, [1,7]] value=nan
.queue vector
tensor_tensor dst=psum[0:128, 8192, fp32, [1,512]] in0=sbuf[0:128, 0, fp32, [1,512]] in1=psum[0:128, 0, fp32, [1,512]] op=sub signal=s3+1
tensor_scalar dst=sbuf[0:128, 0xD000, fp32, [1,8]] src=sbuf[0:128, 0, fp32, [0,8]] op0=max arg0=sbuf[0:128, 0xA000, fp32]
tensor_reduce dst=sbuf[0:128, 0xD000, fp32, [1,4]] src=sbuf[0:128, 0, fp32, [8,4], [1,8]] op=add axes=[1]
select dst=sbuf[0:128, 0xD000, fp32, [1,16]] pred=sbuf[0:128, 0, uint8, [1,16]] on_true=psum[0:128, 0, fp32, [1,16]] on_false=sbuf[0:128, 64, fp32, [1,16]]
bn_stats dst=sbuf[0:128, 0xE000, fp32, [1,3]] src=sbuf[0:128, 0, fp32, [1,512]]
bn_aggr dst=sbuf[0:128, 0xE000, fp32, [1,2]] src=sbuf[0:128, 0xE000, fp32, [1,6]]
memset dst=sbuf[0:128, 0xE100, fp32, [1,4]] value=-0
tensor_copy dst=sbuf[0:64, 0xE200, int32, [1,4]] src=sbuf[64:128, 0, fp32, [1,4]] signal=s3+1
.queue gpsimd
partition_reduce dst=sbuf[0:128, 0xF000, fp32, [1,16]] src=sbuf[32:64, 0, fp32, [1,16]] op=max
partition_broadcast dst=sbuf[0:128, 0xF000, fp32, [1,16]] src=sbuf[96:97, 0, fp32, [1,16]]
iota dst=sbuf[0:128, 0xF100, int32, [16,4], [1,16]] base=-3 pstep=2 steps=[16,1]
iota dst=sbuf[0:32, 0xF100, fp32]
affine_select dst=sbuf[0:128, 0xF200, fp32, [1,8]] src=sbuf[0:128, 0, fp32, [1,8]] cmp=ge base=10 pstep=-1 steps=[1] fill=-1e30
tensor_tensor dst=sbuf[0:128, 0xF300, fp32, [1,8]] in0=sbuf[0:128, 0, fp32, [1,8]] in1=sbuf[0:128, 32, fp32, [1,8]] op=pow
select dst=sbuf[0:128, 0xF300, bf16, [1,8]] pred=sbuf[0:128, 0, fp32, [1,8]] on_true=sbuf[0:128, 32, fp32, [1,8]] on_false=sbuf[0:128, 64, fp32, [1,8]]
tensor_scalar dst=sbuf[0:128, 0xF300, fp32, [1,8]] src=sbuf[0:128, 0, fp32, [1,8]] op0=add arg0=1e-45
tensor_reduce dst=sbuf[0:128, 0xF400, fp32] src=sbuf[0:128, 0, fp32, [8,4], [1,8]] op=min axes=[0,1]
memset dst=sbuf[0:128, 0xF500, fp32, [1,2]] value=3.40282347e+38
.queue sync   # collectives continue the sync queue
all_reduce dst=hbm[1x0, @x, fp32, [1,64]] src=hbm[1x0, @x+256, fp32, [1,64]] group=[0,1,3]
all_gather dst=hbm[1x0, @x, bf16, [1,96]] src=hbm[1x0, @x+1024, bf16, [1,32]] group=[0,2,5]
reduce_scatter dst=hbm[2x16, @x, fp32, [1,16]] src=hbm[1x0, @x+4096, fp32, [1,64]] group=[0,1] signal=s1+1@start
barrier group=[0,1,2,3] wait=s0>=1
all_to_all dst=hbm[1x0, @x, fp32, [1,64]] src=hbm[1x0, @x+256, fp32, [1,64]] group=[0,1,3,5]
permute dst=hbm[1x0, @x, bf16, [1,32]] src=hbm[1x0, @x+1024, bf16, [1,32]] group=[0,2,5] peers=[2,5,0]
)";

namespace {

const Instruction& instr(const Program& p, Engine e, size_t i, uint16_t dma_engine = 0) {
  for (const auto& q : p.queues)
    if (q.engine == e && q.dma_engine == dma_engine) return q.instrs.at(i);
  throw std::runtime_error("no such queue");
}

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

TEST(Assembler, ParsesDirectives) {
  const Program p = assemble(kAllOpsProgram, "all_ops.tasm");
  EXPECT_EQ(p.name, "all_ops");
  EXPECT_EQ(p.num_semaphores, 4u);
  ASSERT_EQ(p.tensors.size(), 4u);
  EXPECT_EQ(p.tensors[1].name, "w");
  EXPECT_EQ(p.tensors[1].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.tensors[1].dtype, DType::fp16);
  EXPECT_EQ(p.tensors[1].role, TensorRole::constant);
  EXPECT_EQ(p.tensors[1].hbm_offset, 0x40000u);
  EXPECT_EQ(p.tensors[3].role, TensorRole::scratch);
  // Two .data lines of 16 bytes append to 32 = 2*8 fp16 bytes: 0, 1, ..., 31.
  const auto& w = p.constants.at("w");
  ASSERT_EQ(w.size(), 32u);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w[i], i);
  // Queues in order of first appearance; dma ids kept.
  ASSERT_EQ(p.queues.size(), 7u);
  EXPECT_EQ(p.queues[0].label(), "dma.0.0");
  EXPECT_EQ(p.queues[1].label(), "dma.15.3");
  EXPECT_EQ(p.queues[2].label(), "sync");
  EXPECT_EQ(p.queues[6].label(), "gpsimd");
  EXPECT_EQ(p.instruction_count(), 39u);  // 33 + the six collectives
  // x ends at 128*512*4 = 262144; idx at 0x60020 = 393248 ends 16 bytes later.
  EXPECT_EQ(p.hbm_bytes(), 393264u);
}

TEST(Assembler, ParsesOperandsAndSync) {
  const Program p = assemble(kAllOpsProgram);
  const Instruction& d0 = instr(p, Engine::dma, 0);
  EXPECT_EQ(d0.op, Opcode::dma_copy);
  EXPECT_EQ(d0.line, 12u);
  EXPECT_EQ(d0.nsrc, 1);
  EXPECT_EQ(d0.dst, ap_2d(MemSpace::sbuf, DType::fp32, 0, 128, 0, 512));
  EXPECT_EQ(d0.src[0].space, MemSpace::hbm);
  EXPECT_EQ(d0.src[0].partition_count, 128u);
  EXPECT_EQ(d0.src[0].partition_stride, 512);
  ASSERT_EQ(d0.signals.size(), 1u);
  EXPECT_EQ(d0.signals[0].sem, 0);
  EXPECT_EQ(d0.signals[0].inc, 1u);
  EXPECT_EQ(d0.signals[0].when, SignalWhen::done);
  EXPECT_EQ(instr(p, Engine::dma, 1).signals[0].when, SignalWhen::start);
  const Instruction& d2 = instr(p, Engine::dma, 2);
  EXPECT_EQ(d2.dst.offset, 262176u);  // @y
  ASSERT_EQ(d2.waits.size(), 2u);
  EXPECT_EQ(d2.waits[1].sem, 3);
  EXPECT_EQ(d2.waits[1].value, 2u);
  // @idx+4 = 0x60020 + 4; "1x0": one row, stride 0.
  const Instruction& d3 = instr(p, Engine::dma, 0, 15);
  EXPECT_EQ(d3.dst.offset, 0x60024u);
  EXPECT_EQ(d3.dst.partition_count, 1u);
  EXPECT_EQ(d3.src[0].dtype, DType::uint8);
  EXPECT_EQ(instr(p, Engine::dma, 1, 15).signals[0].inc, 2u);

  const Instruction& mm = instr(p, Engine::tensor, 1);
  EXPECT_TRUE(mm.accumulate);
  EXPECT_FALSE(instr(p, Engine::tensor, 0).accumulate);
  EXPECT_EQ(mm.src[0].dtype, DType::fp8e4m3);
  EXPECT_EQ(mm.src[1].dims[0], (Dim{2, 256}));
  EXPECT_EQ(instr(p, Engine::tensor, 2).src[0].partition_start, 32u);
}

TEST(Assembler, ParsesImmediatesAndDefaults) {
  const Program p = assemble(kAllOpsProgram);
  const Instruction& a0 = instr(p, Engine::scalar, 0);
  EXPECT_EQ(a0.func, ActFunc::gelu_tanh);
  EXPECT_FALSE(a0.arg0.is_ap);
  EXPECT_EQ(a0.arg0.imm, 0.5f);
  EXPECT_TRUE(a0.arg1.is_ap);
  EXPECT_EQ(a0.arg1.ap.offset, 0xA000u);
  EXPECT_EQ(a0.arg1.ap.ndims, 0);
  EXPECT_TRUE(a0.has_accum);
  EXPECT_EQ(a0.accum.offset, 0xA004u);
  const Instruction& a1 = instr(p, Engine::scalar, 1);
  EXPECT_TRUE(a1.arg0.is_ap);
  EXPECT_EQ(a1.arg1.imm, -INFINITY);
  EXPECT_EQ(a1.src[0].dims[0].stride, -1);
  // Defaults: scale 1, bias 0, no accum.
  const Instruction& a2 = instr(p, Engine::scalar, 2);
  EXPECT_EQ(a2.func, ActFunc::relu);
  EXPECT_EQ(a2.arg0.imm, 1.0f);
  EXPECT_EQ(a2.arg1.imm, 0.0f);
  EXPECT_FALSE(a2.has_accum);
  EXPECT_EQ(a2.accum_op, AluOp::add);

  const Instruction& ts = instr(p, Engine::scalar, 3);
  EXPECT_EQ(ts.op0, AluOp::sub);
  EXPECT_EQ(ts.arg0.imm, 2.0f);
  EXPECT_EQ(ts.op1, AluOp::mul);
  EXPECT_EQ(ts.arg1.imm, 0.125f);  // 0x1p-3
  EXPECT_TRUE(ts.reverse0);
  EXPECT_TRUE(ts.reverse1);
  EXPECT_EQ(ts.accum_op, AluOp::max);
  EXPECT_EQ(ts.dst.ndims, 2);
  EXPECT_TRUE(std::isnan(instr(p, Engine::scalar, 5).arg0.imm));

  const Instruction& ts2 = instr(p, Engine::vector, 1);
  EXPECT_EQ(ts2.op1, AluOp::bypass);  // default
  EXPECT_FALSE(ts2.reverse0);
  EXPECT_EQ(ts2.src[0].dims[0].stride, 0);
  EXPECT_EQ(instr(p, Engine::vector, 0).op0, AluOp::sub);
  EXPECT_EQ(instr(p, Engine::vector, 2).axes, 0b10);
  EXPECT_EQ(instr(p, Engine::vector, 3).nsrc, 3);
  EXPECT_EQ(bits(instr(p, Engine::vector, 6).arg0.imm), 0x80000000u);  // -0

  const Instruction& io = instr(p, Engine::gpsimd, 2);
  EXPECT_EQ(io.arg0.imm, -3.0f);
  EXPECT_EQ(io.pstep, 2);
  EXPECT_EQ(io.steps, (std::array<int32_t, 4>{16, 1, 0, 0}));
  const Instruction& io0 = instr(p, Engine::gpsimd, 3);
  EXPECT_EQ(io0.arg0.imm, 0.0f);
  EXPECT_EQ(io0.pstep, 0);
  const Instruction& as = instr(p, Engine::gpsimd, 4);
  EXPECT_EQ(as.op0, AluOp::ge);
  EXPECT_EQ(as.arg0.imm, 10.0f);
  EXPECT_EQ(as.pstep, -1);
  EXPECT_EQ(as.fill, -1e30f);
  EXPECT_EQ(instr(p, Engine::gpsimd, 0).op0, AluOp::max);
  EXPECT_EQ(instr(p, Engine::gpsimd, 7).arg0.imm, 1e-45f);  // subnormal
  EXPECT_EQ(instr(p, Engine::gpsimd, 8).axes, 0b11);
  EXPECT_EQ(instr(p, Engine::gpsimd, 9).arg0.imm, 3.40282347e+38f);
}

TEST(Assembler, UsesEveryOpcode) {
  const Program p = assemble(kAllOpsProgram);
  std::set<Opcode> ops;
  for (const auto& q : p.queues)
    for (const auto& in : q.instrs) ops.insert(in.op);
  EXPECT_EQ(ops.size(), static_cast<size_t>(kNumOpcodes));
}

TEST(Assembler, RoundTripEveryOpcodeAndKey) {
  const Program p1 = assemble(kAllOpsProgram);
  const std::string t1 = disassemble(p1);
  const Program p2 = assemble(t1, "disassembly");
  EXPECT_EQ(p1, p2) << t1;
  // Every key of the fixture survives the printer (non-default values only).
  for (const char* key : {"dst=",
                          "src=",
                          "stationary=",
                          "moving=",
                          "in0=",
                          "in1=",
                          "pred=",
                          "on_true=",
                          "on_false=",
                          "accumulate=1",
                          "func=",
                          "scale=",
                          "bias=",
                          "accum=",
                          "op=",
                          "op0=",
                          "arg0=",
                          "op1=",
                          "arg1=",
                          "reverse0=1",
                          "reverse1=1",
                          "accum_op=max",
                          "axes=[0,1]",
                          "value=",
                          "base=",
                          "pstep=",
                          "steps=[16,1]",
                          "fill=",
                          "cmp=ge",
                          "wait=s3>=2",
                          "signal=s0+1@start",
                          "@idx+4",
                          "group=[0,2,5]",
                          "peers=[2,5,0]"})
    EXPECT_NE(t1.find(key), std::string::npos) << key;
}

TEST(Assembler, CollectivesParseTheirGroup) {
  const Program p = assemble(kAllOpsProgram);
  const Instruction& ar = instr(p, Engine::sync, 1);
  EXPECT_EQ(ar.op, Opcode::all_reduce);
  EXPECT_EQ(ar.group, (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_EQ(ar.src[0].offset, 256u);
  EXPECT_EQ(instr(p, Engine::sync, 4).op, Opcode::barrier);
  EXPECT_TRUE(is_collective(Opcode::reduce_scatter));
  EXPECT_FALSE(is_collective(Opcode::nop));
  // A group must be ascending, distinct and given; only collectives take one.
  const std::string head = ".tensor x [64] fp32 input @0\n.queue sync\n";
  const std::string ap = " dst=hbm[1x0, @x, fp32, [1,8]] src=hbm[1x0, @x, fp32, [1,8]]";
  for (const auto& [line, why] : {std::pair{"all_reduce" + ap + " group=[1,0]", "ascending"},
                                  std::pair{"all_reduce" + ap + " group=[]", "no rank"},
                                  std::pair{"all_reduce" + ap, "missing required key 'group'"},
                                  std::pair{std::string("nop group=[0]"), "group"}}) {
    try {
      assemble(head + line + "\n", "c.tasm");
      ADD_FAILURE() << line;
    } catch (const AsmError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

// A partial permute (send/receive): `-` marks a rank that sends nothing, held as
// kNoPeer and printed back as `-`; a '-' with digits is still a (bad) negative rank.
TEST(Assembler, PartialPermuteRoundTrips) {
  const std::string head = ".tensor x [64] fp32 input @0\n.queue sync\n";
  const std::string line =
      "permute dst=hbm[1x0, @x, fp32, [1,8]] src=hbm[1x0, @x+32, fp32, [1,8]] group=[0,1,2,3] ";
  const Program p = assemble(head + line + "peers=[1,2,3,-]\n");
  EXPECT_EQ(instr(p, Engine::sync, 0).peers, (std::vector<uint32_t>{1, 2, 3, kNoPeer}));
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("peers=[1,2,3,-]"), std::string::npos) << text;
  EXPECT_EQ(assemble(text), p);
  // Blanks around entries, several '-', a '-' first.
  EXPECT_EQ(instr(assemble(head + line + "peers=[ - , 0 ,-,2]\n"), Engine::sync, 0).peers,
            (std::vector<uint32_t>{kNoPeer, 0, kNoPeer, 2}));
  for (const auto& [peers, why] :
       {std::pair{"peers=[1,-1,3,0]", "rank -1 out of range"},
        std::pair{"peers=[1,--,3,0]", "expected a number for rank"},
        std::pair{"peers=[1,4294967295,3,0]", "rank 4294967295 out of range"}}) {
    try {
      assemble(head + line + peers + "\n", "c.tasm");
      ADD_FAILURE() << peers;
    } catch (const AsmError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  // Only peers takes '-': a group cannot name "no rank".
  EXPECT_THROW(assemble(head + line.substr(0, line.find("group")) + "group=[0,-] peers=[1,0]\n"),
               AsmError);
}

TEST(Assembler, DisassemblyIsStable) {
  const std::string t1 = disassemble(assemble(kAllOpsProgram));
  const std::string t2 = disassemble(assemble(t1));
  EXPECT_EQ(t1, t2);
}

TEST(Assembler, DisassemblyOmitsDefaultsAndWrapsBase64) {
  Program p = assemble(kAllOpsProgram);
  const std::string t = disassemble(p);
  const Instruction& relu = instr(p, Engine::scalar, 2);
  EXPECT_EQ(disassemble(relu),
            "activation dst=sbuf[0:128, 45056, fp32, [1,4]] src=sbuf[0:128, 16, fp32, [1,4]] "
            "func=relu");
  EXPECT_EQ(disassemble(instr(p, Engine::gpsimd, 3)), "iota dst=sbuf[0:32, 61696, fp32]");
  // Without a program, hbm offsets stay numeric; with it they name the tensor.
  EXPECT_NE(disassemble(instr(p, Engine::dma, 0)).find("hbm[128x512, 0, fp32"), std::string::npos);
  EXPECT_NE(t.find("src=hbm[128x512, @x, fp32, [1,512]]"), std::string::npos);
  EXPECT_EQ(t.find("@done"), std::string::npos);
  // Special floats print as tokens that parse back.
  EXPECT_NE(t.find("value=nan"), std::string::npos);
  EXPECT_NE(t.find("bias=-inf"), std::string::npos);
  EXPECT_NE(t.find("value=-0"), std::string::npos);

  // 200 constant bytes: 57-byte chunks -> 76-char lines, 3 full lines + 29 bytes.
  p.tensors.push_back({"big", {200}, DType::uint8, TensorRole::constant, 0x70000});
  auto& big = p.constants["big"];
  for (int i = 0; i < 200; ++i) big.push_back(static_cast<uint8_t>(i * 37));
  const std::string t2 = disassemble(p);
  size_t lines = 0, pos = 0;
  while ((pos = t2.find(".data big ", pos)) != std::string::npos) {
    const size_t e = t2.find('\n', pos);
    const size_t len = e - pos - 10;
    EXPECT_LE(len, 76u);
    EXPECT_EQ(len % 4, 0u);
    ++lines;
    pos = e;
  }
  EXPECT_EQ(lines, 4u);
  EXPECT_EQ(assemble(t2), p);
}

TEST(Assembler, FloatsRoundTripExactly) {
  Program p;
  p.queues.push_back({Engine::vector, 0, 0, {}});
  const float vals[] = {0.1f,     1.0f / 3,      -2.5e-38f,    1.17549435e-38f,
                        1.4e-45f, 3.4028235e38f, -16777217.0f, 0.0f,
                        -0.0f,    INFINITY,      -INFINITY,    NAN};
  for (float v : vals) {
    Instruction in;
    in.op = Opcode::memset;
    in.dst = ap_2d(MemSpace::sbuf, DType::fp32, 0, 1, 0, 1);
    in.arg0.imm = v;
    p.queues[0].instrs.push_back(in);
  }
  const Program q = assemble(disassemble(p));
  ASSERT_EQ(q.queues[0].instrs.size(), std::size(vals));
  for (size_t i = 0; i + 1 < std::size(vals); ++i)
    EXPECT_EQ(bits(q.queues[0].instrs[i].arg0.imm), bits(vals[i])) << vals[i];
  EXPECT_TRUE(std::isnan(q.queues[0].instrs.back().arg0.imm));
  EXPECT_EQ(p, q);
}

TEST(Assembler, CommentsBlankLinesCrLfAndHex) {
  const Program p = assemble(
      "  # only a comment\r\n"
      "\r\n"
      ".program   p1  # trailing comment\r\n"
      ".semaphores 0x10\r\n"
      "\t.queue vector\r\n"
      "memset dst=sbuf[ 0x20 : 0x40 , 0x100 , bf16 , [ -0x2 , 0x10 ] ]   value=0x1p4\r\n");
  EXPECT_EQ(p.name, "p1");
  EXPECT_EQ(p.num_semaphores, 16u);
  const Instruction& in = p.queues.at(0).instrs.at(0);
  EXPECT_EQ(in.line, 6u);
  EXPECT_EQ(in.dst.partition_start, 32u);
  EXPECT_EQ(in.dst.partition_count, 32u);
  EXPECT_EQ(in.dst.offset, 256u);
  EXPECT_EQ(in.dst.dims[0], (Dim{-2, 16}));
  EXPECT_EQ(in.arg0.imm, 16.0f);
}

TEST(Assembler, RepeatedQueueAppends) {
  const Program p = assemble(
      ".queue dma 1 2\nnop\n.queue vector\nnop\n.queue dma 1 2\nnop\n.queue dma 2 1\nnop\n"
      ".queue vector\nnop\n");
  ASSERT_EQ(p.queues.size(), 3u);
  EXPECT_EQ(p.queues[0].label(), "dma.1.2");
  EXPECT_EQ(p.queues[0].instrs.size(), 2u);
  EXPECT_EQ(p.queues[0].instrs[1].line, 6u);
  EXPECT_EQ(p.queues[1].instrs.size(), 2u);
  EXPECT_EQ(p.queues[2].label(), "dma.2.1");
}

TEST(Assembler, HbmOffsetForms) {
  const Program p = assemble(
      ".tensor a [4] fp32 input @100\n.tensor b [2,3] bf16 output @0x200\n.queue dma 0 0\n"
      "dma_copy dst=hbm[2x3, @b, bf16, [1,3]] src=hbm[1x0, @a-100, fp32, [1,6]]\n"
      "dma_copy dst=hbm[0x2x0x3, @b+2, bf16, [1,3]] src=hbm[1x0, 116, fp32, [1,6]]\n");
  const auto& i0 = p.queues[0].instrs[0];
  EXPECT_EQ(i0.dst.offset, 0x200u);
  EXPECT_EQ(i0.src[0].offset, 0u);
  const auto& i1 = p.queues[0].instrs[1];
  EXPECT_EQ(i1.dst.offset, 0x202u);
  EXPECT_EQ(i1.dst.partition_count, 2u);
  EXPECT_EQ(i1.dst.partition_stride, 3);
  // Offsets outside every tensor stay numeric: 0 is before a (bytes 100..115) and
  // 116 just past it.
  const std::string t = disassemble(p);
  EXPECT_NE(t.find("src=hbm[1x0, 0, fp32"), std::string::npos) << t;
  EXPECT_NE(t.find("src=hbm[1x0, 116, fp32"), std::string::npos) << t;
  EXPECT_NE(t.find("dst=hbm[2x3, @b+2, bf16"), std::string::npos) << t;
}

// Found by fuzz_asm: zero rows print as "0x640", which must not read as hex 0x640.
TEST(Assembler, ZeroHbmRowsAreNotHex) {
  const Program p = assemble(
      ".queue dma 0 0\ndma_copy dst=sbuf[0:1, 0, bf16, [1,4]] src=hbm[0x640, 0, bf16, [1,4]]\n");
  const auto& src = p.queues[0].instrs[0].src[0];
  EXPECT_EQ(src.partition_count, 0u);
  EXPECT_EQ(src.partition_stride, 640);
  const std::string t = disassemble(p);
  EXPECT_NE(t.find("src=hbm[0x640, 0, bf16"), std::string::npos) << t;
  EXPECT_TRUE(assemble(t) == p);
}

// A .tensor ending past the 1 PiB the simulator models is an error at its line
// (a 2^62-byte input used to end in "cannot create std::vector larger than
// max_size()" when the runtime made random inputs for it).
TEST(Assembler, TensorPastTheLargestHbmIsAnErrorAtItsLine) {
  const auto error = [](const std::string& text) -> std::string {
    try {
      assemble(text, "t.tasm");
    } catch (const AsmError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(".program p\n.tensor x [1048576,1048576,1048576,4] fp32 input @0\n"),
            "t.tasm:2:9: error: tensor 'x' ends past hbm byte 1125899906842624 (1 PiB), the "
            "largest hbm the simulator models");
  EXPECT_NE(error(".tensor y [9223372036854775807,9223372036854775807] fp32 output @0\n")
                .find("t.tasm:1:9: error: tensor 'y' ends past hbm byte"),
            std::string::npos);
  EXPECT_NE(error(".tensor z [2] fp32 scratch @18446744073709551615\n")
                .find("t.tasm:1:9: error: tensor 'z' ends past"),
            std::string::npos);
  EXPECT_EQ(error(".tensor w [2] fp32 scratch @1125899906842616\n"), "");  // ends at 1 PiB
}

TEST(Assembler, ErrorCarriesFileLineColumn) {
  try {
    assemble(".program p\n.queue vector\n  frobnicate dst=x\n", "k.tasm");
    FAIL() << "no error";
  } catch (const AsmError& e) {
    EXPECT_EQ(e.file, "k.tasm");
    EXPECT_EQ(e.line, 3u);
    EXPECT_EQ(e.col, 3u);
    EXPECT_STREQ(e.what(), "k.tasm:3:3: error: unknown opcode 'frobnicate'");
  }
}

TEST(Assembler, AssembleFileNamesThePath) {
  try {
    assemble_file("/nonexistent/dir/p.tasm");
    FAIL() << "no error";
  } catch (const AsmError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/p.tasm"), std::string::npos);
  }
}

TEST(Assembler, MangledTextNeverCrashes) {
  // Random edits of the fixture either still assemble or give an AsmError; any other
  // exception (or a crash) is a bug.
  const std::string good = kAllOpsProgram;
  const std::string alphabet = "0123456789abcxyz_.,:[]@+-=#> \n\tsx";
  std::mt19937 rng(7);
  int ok = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0:
          t[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          t.erase(at, 1 + rng() % 8);
          break;
        default:
          t.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
      }
    }
    try {
      assemble(t);
      ++ok;
    } catch (const AsmError& e) {
      ++rejected;
      EXPECT_GT(e.line, 0u);
      EXPECT_GT(e.col, 0u);
    }
  }
  EXPECT_EQ(ok + rejected, 3000);
  EXPECT_GT(rejected, 1000);
}

// Bad assembly: '^' marks where the error must point (it is removed before assembling).
struct BadCase {
  const char* name;
  const char* text;
  const char* fragment;
};

const BadCase kBad[] = {
    {"UnknownOpcode", ".queue vector\n^frob", "unknown opcode 'frob'"},
    {"UnknownKey",
     ".queue vector\ntensor_copy dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 4, fp32] ^op=add",
     "unknown key 'op' for tensor_copy"},
    {"KeyOfAnotherOpcode",
     ".queue scalar\nactivation dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 4, fp32] func=relu ^op0=add",
     "unknown key 'op0' for activation"},
    {"MissingOperand",
     ".queue vector\n^tensor_tensor dst=sbuf[0:1, 0, fp32] in0=sbuf[0:1, 0, fp32] op=add",
     "missing required operand 'in1' for tensor_tensor"},
    {"MissingKey",
     ".queue vector\n^tensor_tensor dst=sbuf[0:1, 0, fp32] in0=sbuf[0:1, 0, fp32] "
     "in1=sbuf[0:1, 0, fp32]",
     "missing required key 'op' for tensor_tensor"},
    {"MissingAxes",
     ".queue vector\n^tensor_reduce dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 0, fp32] op=add",
     "missing required key 'axes'"},
    {"DuplicateKey", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32] value=1 ^value=2",
     "duplicate key 'value'"},
    {"MissingEquals", ".queue vector\nmemset dst^", "expected '=' after key 'dst'"},
    {"NotAKey", ".queue vector\nmemset ^[x]", "expected key=value"},
    {"ApMissingColon", ".queue vector\nmemset dst=sbuf[0 ^1, 0, fp32] value=0",
     "bad access pattern: expected ':'"},
    {"ApUnknownSpace", ".queue vector\nmemset dst=^dram[0:1, 0, fp32] value=0",
     "bad access pattern: unknown memory space 'dram'"},
    {"ApUnknownDtype", ".queue vector\nmemset dst=sbuf[0:1, 0, ^fp64] value=0",
     "bad access pattern: unknown dtype 'fp64'"},
    {"ApTooManyDims",
     ".queue vector\nmemset dst=sbuf[0:1, 0, fp32, [1,1], [1,1], [1,1], [1,1], ^[1,1]] value=0",
     "bad access pattern: more than 4 free-axis dims"},
    {"ApEmptyPartitions", ".queue vector\nmemset dst=sbuf[^4:4, 0, fp32] value=0",
     "partition range 4:4 is empty"},
    {"ApUnclosed", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32, [1,2] ^value=0",
     "expected ']' to close the pattern"},
    {"ApNameOffsetOutsideHbm", ".queue vector\nmemset dst=sbuf[0:1, ^@x, fp32] value=0",
     "@name offsets are only for hbm patterns"},
    {"ApHbmMissingX", ".queue dma 0 0\ndma_copy dst=hbm[4^,", "expected 'x' between row count"},
    {"UnknownTensor", ".queue dma 0 0\ndma_copy dst=sbuf[0:1, 0, fp32] src=hbm[1x0, @^zz, fp32]",
     "unknown tensor 'zz'"},
    {"OffsetBelowZero",
     ".tensor a [4] fp32 input @8\n.queue dma 0 0\n"
     "dma_copy dst=sbuf[0:1, 0, fp32] src=hbm[1x0, ^@a-12, fp32]",
     "offset -4 is outside hbm"},
    {"DuplicateTensor", ".tensor x [1] fp32 input @0\n.tensor ^x [1] fp32 input @4",
     "duplicate tensor 'x'"},
    {"UnknownRole", ".tensor x [1] fp32 ^weights @0", "unknown tensor role 'weights'"},
    {"NegativeTensorDim", ".tensor x [^-1] fp32 input @0", "dimension -1 out of range"},
    {"InstructionBeforeQueue", ".program p\n^nop", "instruction before any .queue"},
    {"WaitSemaphoreOutOfRange", ".semaphores 2\n.queue sync\nnop wait=s^2>=1",
     "semaphore s2 out of range (.semaphores 2)"},
    {"SignalWithoutSemaphores", ".queue sync\nnop signal=s^0+1",
     "semaphore s0 out of range (.semaphores 0)"},
    {"WaitSyntax", ".semaphores 2\n.queue sync\nnop wait=s1^=1", "expected '>=' in wait=sN>=V"},
    {"SignalWhen", ".semaphores 2\n.queue sync\nnop signal=s1+1@^later",
     "expected @start or @done"},
    {"BadFloat", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32] value=^1.5x",
     "bad number '1.5x' for value"},
    {"FloatOverflow", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32] value=^1e39",
     "out of float range"},
    {"BadInteger", ".queue vector\nmemset dst=sbuf[0:1, ^12a, fp32] value=0",
     "bad number '12a' for offset"},
    {"IntegerOutOfRange", ".queue vector\nmemset dst=sbuf[0:^4294967296, 0, fp32] value=0",
     "partition end 4294967296 out of range"},
    {"BoolNotZeroOrOne",
     ".queue tensor\nmatmul dst=psum[0:1, 0, fp32] stationary=sbuf[0:1, 0, fp32] "
     "moving=sbuf[0:1, 0, fp32] accumulate=^2",
     "accumulate (0 or 1) 2 out of range"},
    {"AxisOutOfRange",
     ".queue vector\ntensor_reduce dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 0, fp32] op=add "
     "axes=[0,^4]",
     "axis 4 out of range"},
    {"AxisTwice",
     ".queue vector\ntensor_reduce dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 0, fp32] op=add "
     "axes=^[1,1]",
     "axis 1 listed twice"},
    {"TooManySteps", ".queue gpsimd\niota dst=sbuf[0:1, 0, fp32] steps=^[1,2,3,4,5]",
     "step list has 5 entries (at most 4)"},
    {"UnknownFunc",
     ".queue scalar\nactivation dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 0, fp32] func=^sigmoidal",
     "unknown activation function 'sigmoidal'"},
    {"UnknownAluOp",
     ".queue vector\ntensor_tensor dst=sbuf[0:1, 0, fp32] in0=sbuf[0:1, 0, fp32] "
     "in1=sbuf[0:1, 0, fp32] op=^plus",
     "unknown ALU op 'plus' for op"},
    {"JunkAfterValue", ".queue vector\nmemset dst=sbuf[0:1, 0, fp32]^x value=0",
     "unexpected 'x' after the value of 'dst'"},
    {"BadBase64Char", ".tensor c [4] uint8 constant @0\n.data c AAA^*",
     "bad base64: character '*'"},
    {"BadBase64Length", ".tensor c [4] uint8 constant @0\n.data c ^AAAAA",
     "bad base64: length 5 is not a multiple of 4"},
    {"BadBase64Padding", ".tensor c [4] uint8 constant @0\n.data c A^=AA",
     "bad base64: misplaced '='"},
    {"DataUnknownTensor", ".data ^zz AAAA", "unknown tensor 'zz'"},
    {"DataSizeMismatch", ".tensor c [4] uint8 constant @0\n.data ^c AAAA\n.queue sync\nnop",
     "constant data for 'c' has 3 bytes; the tensor needs 4"},
    {"UnknownDirective", "^.frob 1", "unknown directive '.frob'"},
    {"DirectiveAfterQueue", ".queue sync\nnop\n^.tensor x [1] fp32 input @0",
     "directive .tensor must come before the first .queue"},
    {"DuplicateSemaphores", ".semaphores 1\n^.semaphores 2", "duplicate .semaphores"},
    {"UnknownEngine", ".queue ^vec", "unknown engine 'vec'"},
    {"DmaQueueMissingIds", ".queue dma 3^", "expected a number for dma queue"},
    {"JunkAfterDirective", ".program p ^q", "unexpected 'q' after .program"},
};

class AssemblerBadText : public ::testing::TestWithParam<BadCase> {};

TEST_P(AssemblerBadText, ReportsLineColumnAndMessage) {
  std::string text = GetParam().text;
  const size_t caret = text.find('^');
  ASSERT_NE(caret, std::string::npos);
  const size_t line_start =
      text.rfind('\n', caret) == std::string::npos ? 0 : text.rfind('\n', caret) + 1;
  const uint32_t want_line =
      1 + static_cast<uint32_t>(std::count(text.begin(), text.begin() + caret, '\n'));
  const uint32_t want_col = static_cast<uint32_t>(caret - line_start + 1);
  text.erase(caret, 1);
  try {
    assemble(text, "bad.tasm");
    FAIL() << "assembled without error";
  } catch (const AsmError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.line, want_line) << what;
    EXPECT_EQ(e.col, want_col) << what;
    EXPECT_NE(what.find(GetParam().fragment), std::string::npos) << what;
    const std::string prefix =
        "bad.tasm:" + std::to_string(want_line) + ":" + std::to_string(want_col) + ": error: ";
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(AssemblerBad, AssemblerBadText, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace trnsim::isa
