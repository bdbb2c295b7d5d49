// dma_copy spread=N (docs/isa.md): the optional key in assembly, its encoding in the
// binary form (high nibble of the flags byte) and its static checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/isa/assembler.h"
#include "models/isa/binary.h"
#include "models/isa/validate.h"

namespace trnsim::isa {
namespace {

std::string program(const std::string& copy_keys,
                    const std::string& dst = "sbuf[0:128, 0, fp32, [1,64]]",
                    const std::string& src = "hbm[128x64, @x, fp32, [1,64]]") {
  return ".program p\n.semaphores 1\n.tensor x [128,64] fp32 input @0\n.queue dma 3 2\n"
         "dma_copy dst=" +
         dst + " src=" + src + copy_keys + " signal=s0+1\n";
}

std::string asm_error(const std::string& text) {
  try {
    assemble(text, "t.tasm");
  } catch (const AsmError& e) {
    return e.what();
  }
  return "";
}

std::string validation_error(const Program& p, const Limits& lim = {}) {
  try {
    validate(p, lim);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(AssemblerDmaSpread, ParsesPrintsAndRoundTrips) {
  const Program p = assemble(program(" spread=16"));
  const Instruction& in = p.queues[0].instrs[0];
  EXPECT_EQ(in.spread, 16);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find(" spread=16"), std::string::npos) << text;
  EXPECT_EQ(assemble(text), p);
  // Default 1: not printed, and a program with spread=1 equals one without the key.
  const Program q = assemble(program(""));
  EXPECT_EQ(q.queues[0].instrs[0].spread, 1);
  EXPECT_EQ(disassemble(q).find("spread"), std::string::npos);
  EXPECT_EQ(assemble(program(" spread=1")), q);
  EXPECT_FALSE(p == q);  // spread takes part in equality
}

TEST(AssemblerDmaSpread, BadValuesAndPlacesAreErrors) {
  EXPECT_NE(asm_error(program(" spread=0")).find("t.tasm:5:"), std::string::npos);
  EXPECT_NE(asm_error(program(" spread=0")).find("spread 0 out of range (1..16)"),
            std::string::npos)
      << asm_error(program(" spread=0"));
  EXPECT_NE(asm_error(program(" spread=17")).find("spread 17 out of range (1..16)"),
            std::string::npos);
  EXPECT_NE(asm_error(program(" spread=two")).find("for spread"), std::string::npos)
      << asm_error(program(" spread=two"));
  EXPECT_NE(asm_error(program(" spread=2 spread=2")).find("duplicate key 'spread'"),
            std::string::npos);
  const std::string on_vector =
      ".queue vector\ntensor_copy dst=sbuf[0:1, 0, fp32] src=sbuf[0:1, 4, fp32] spread=2\n";
  EXPECT_NE(asm_error(on_vector).find("unknown key 'spread' for tensor_copy"), std::string::npos)
      << asm_error(on_vector);
}

TEST(BinaryDmaSpread, RoundTripsInTheFlagsHighNibble) {
  const Program one = assemble(program(""));
  const auto b1 = encode_binary(one);
  for (int n : {2, 5, 16}) {
    const Program p = assemble(program(" spread=" + std::to_string(n)));
    const auto b = encode_binary(p);
    ASSERT_EQ(b.size(), b1.size());  // no extra bytes
    size_t diffs = 0, at = 0;
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i] != b1[i]) ++diffs, at = i;
    EXPECT_EQ(diffs, 1u);
    EXPECT_EQ(b[at], b1[at] | ((n - 1) << 4)) << n;  // flags: spread - 1 in bits 4-7
    const Program q = decode_binary(b);
    EXPECT_EQ(q, p);
    EXPECT_EQ(q.queues[0].instrs[0].spread, n);
  }
}

TEST(BinaryDmaSpread, OutOfRangeOrMisplacedSpreadIsRejected) {
  Program p = assemble(program(""));
  p.queues[0].instrs[0].spread = 17;
  EXPECT_THROW(encode_binary(p), ProgramFormatError);
  p.queues[0].instrs[0].spread = 0;
  EXPECT_THROW(encode_binary(p), ProgramFormatError);
  // A nop's flags byte with a spread nibble: decoding names the bad flags.
  Program n = assemble(".program p\n.queue dma 0 0\nnop\n");
  Program r = n;
  r.queues[0].instrs[0].reverse1 = true;  // locate the flags byte
  const auto x = encode_binary(n), y = encode_binary(r);
  size_t at = 0;
  while (x[at] == y[at]) ++at;
  auto b = x;
  b[at] = 0x10;
  try {
    decode_binary(b, "n.tbin");
    ADD_FAILURE() << "decoded a nop with spread bits";
  } catch (const ProgramFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("byte " + std::to_string(at) + ": bad flags 16"),
              std::string::npos)
        << e.what();
  }
  n.queues[0].instrs[0].spread = 2;
  EXPECT_THROW(encode_binary(n), ProgramFormatError);
}

TEST(ValidateDmaSpread, RowsEnginesAndOpcodeAreChecked) {
  EXPECT_EQ(validation_error(assemble(program(" spread=16"))), "");
  // More engines than the core has.
  Limits four;
  four.dma_engines = 4;
  EXPECT_EQ(validation_error(assemble(program(" spread=4")), four), "");
  const std::string wide = validation_error(assemble(program(" spread=8")), four);
  EXPECT_NE(wide.find("spread=8 must be 1..4 (DMA engines per core)"), std::string::npos) << wide;
  EXPECT_NE(wide.find("(line 5, dma_copy)"), std::string::npos) << wide;
  // Rows are split over engines: both sides need the same row count, >= spread.
  const std::string rows = validation_error(assemble(
      program(" spread=2", "sbuf[0:64, 0, fp32, [1,128]]", "hbm[128x64, @x, fp32, [1,64]]")));
  EXPECT_NE(rows.find("spread=2 splits rows over engines: src and dst need the same row count, "
                      "at least 2 (src has 128, dst 64)"),
            std::string::npos)
      << rows;
  const std::string few = validation_error(
      assemble(program(" spread=4", "sbuf[0:2, 0, fp32, [1,4]]", "hbm[2x4, @x, fp32, [1,4]]")));
  EXPECT_NE(few.find("at least 4 (src has 2, dst 2)"), std::string::npos) << few;
  // Only dma_copy may spread.
  Program v = assemble(
      ".program p\n.queue vector\ntensor_copy dst=sbuf[0:1, 0, fp32] "
      "src=sbuf[0:1, 4, fp32]\n");
  v.queues[0].instrs[0].spread = 2;
  EXPECT_NE(validation_error(v).find("spread=2 is only for dma_copy"), std::string::npos)
      << validation_error(v);
}

}  // namespace
}  // namespace trnsim::isa
