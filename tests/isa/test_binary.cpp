#include "models/isa/binary.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "models/isa/assembler.h"

namespace trnsim::isa {

extern const char* const kAllOpsProgram;  // test_assembler.cpp

namespace {

std::string error_of(const std::vector<uint8_t>& b, const std::string& name = "p.tbin") {
  try {
    decode_binary(b, name);
  } catch (const ProgramFormatError& e) {
    return e.what();
  }
  return "";
}

// Index of the single byte where the encodings of two programs differ.
size_t diff_at(const Program& a, const Program& b) {
  const auto x = encode_binary(a), y = encode_binary(b);
  EXPECT_EQ(x.size(), y.size());
  size_t at = SIZE_MAX, n = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) at = i, ++n;
  EXPECT_EQ(n, 1u);
  return at;
}

Program small() {
  return assemble(
      ".program small\n.semaphores 1\n.tensor t [2] fp32 constant @0\n.data t AACAPwAAAEA=\n"
      ".queue vector\n"
      "tensor_scalar dst=sbuf[0:1, 0, fp32, [1,2]] src=sbuf[0:1, 8, bf16, [1,2]] op0=add "
      "arg0=1 signal=s0+1\n");
}

TEST(Binary, RoundTripEveryOpcode) {
  const Program p = assemble(kAllOpsProgram);
  const auto b = encode_binary(p);
  const Program q = decode_binary(b);
  EXPECT_EQ(p, q);
  // Source lines travel too, though equality ignores them.
  EXPECT_EQ(q.queues[0].instrs[0].line, p.queues[0].instrs[0].line);
  EXPECT_NE(q.queues[0].instrs[0].line, 0u);
  // Deterministic: the same program encodes to the same bytes.
  EXPECT_EQ(encode_binary(q), b);
}

// write_binary streams the same bytes encode_binary collects (constants in between
// the tensor table and the queues, each straight from the program).
TEST(Binary, WrittenAsEncoded) {
  for (const Program& p :
       {small(), assemble(kAllOpsProgram),
        assemble(".program two\n.tensor a [2] fp32 constant @0\n.data a AACAPwAAAEA=\n"
                 ".tensor b [1] fp32 constant @64\n.data b AACAPw==\n.queue vector\nnop\n")}) {
    std::ostringstream out;
    const size_t n = write_binary(p, out);
    const std::vector<uint8_t> want = encode_binary(p);
    const std::string got = out.str();
    EXPECT_EQ(n, want.size());
    EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()), want);
  }
}

TEST(Binary, DoubleRowFlagRoundTripsAndIsMatmulOnly) {
  const Program p = assemble(
      ".queue tensor\nmatmul dst=psum[0:16, 0, fp32, [1,40]] stationary=sbuf[0:128, 0, fp8e4m3, "
      "[1,32]] moving=sbuf[0:128, 1024, fp8e4m3, [1,80]] double_row=1 accumulate=1\n");
  const Program q = decode_binary(encode_binary(p), "dr.tbin");
  EXPECT_TRUE(q == p);
  EXPECT_TRUE(q.queues[0].instrs[0].double_row);
  EXPECT_EQ(q.queues[0].instrs[0].spread, 1);  // bit 4 is not dma_copy's spread here
  EXPECT_NE(disassemble(q).find("accumulate=1 double_row=1"), std::string::npos) << disassemble(q);
  // The same bit on another opcode is a bad flag (reverse0 locates the flags byte).
  const Program t = assemble(".queue vector\nmemset dst=sbuf[0:1, 0, fp32, [1,4]] value=0\n");
  Program r = t;
  r.queues[0].instrs[0].reverse0 = true;
  auto b = encode_binary(t);
  b[diff_at(t, r)] = 16;
  EXPECT_NE(error_of(b).find("bad flags 16"), std::string::npos) << error_of(b);
}

// kNoPeer (a permute rank that sends nothing) travels as 0xFFFFFFFF, which a group
// rank never is: the decoder refuses it there, at its byte.
TEST(Binary, PartialPermuteRoundTrips) {
  const Program p = assemble(
      ".tensor x [64] fp32 input @0\n.queue sync\npermute dst=hbm[1x0, @x, fp32, [1,8]] "
      "src=hbm[1x0, @x+32, fp32, [1,8]] group=[0,1,2,3] peers=[1,2,3,-]\n");
  const auto b = encode_binary(p);
  const Program q = decode_binary(b, "pp.tbin");
  EXPECT_EQ(q, p);
  EXPECT_EQ(q.queues[0].instrs[0].peers.back(), kNoPeer);
  // The peers' last 4 bytes end the program: the mark, little-endian.
  ASSERT_GE(b.size(), 4u);
  EXPECT_EQ(std::vector<uint8_t>(b.end() - 4, b.end()), std::vector<uint8_t>(4, 0xFF));
  Program r = p;
  r.queues[0].instrs[0].group[3] = 4;
  const size_t at = diff_at(p, r);  // group rank 3's low byte
  auto bad = b;
  for (size_t k = 0; k < 4; ++k) bad[at + k] = 0xFF;
  EXPECT_NE(error_of(bad, "pp.tbin")
                .find("pp.tbin: byte " + std::to_string(at) +
                      ": group rank 4294967295 is the no-peer mark, not a rank"),
            std::string::npos)
      << error_of(bad, "pp.tbin");
}

TEST(Binary, HeaderIsMagicThenVersion) {
  const auto b = encode_binary(small());
  ASSERT_GE(b.size(), 8u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "TRNP");
  const uint32_t v = b[4] | b[5] << 8 | b[6] << 16 | uint32_t{b[7]} << 24;  // little-endian
  EXPECT_EQ(v, kBinaryVersion);
}

TEST(Binary, MinimalInstructionIs81Bytes) {
  // The decoder rejects instruction counts that the remaining bytes cannot hold,
  // assuming 81 bytes per instruction at least; a default nop is that minimum.
  Program p;
  p.queues.push_back({Engine::sync, 0, 0, {}});
  const size_t empty = encode_binary(p).size();
  p.queues[0].instrs.push_back(Instruction{});
  EXPECT_EQ(encode_binary(p).size() - empty, 81u);
  EXPECT_EQ(decode_binary(encode_binary(p)), p);
}

TEST(Binary, EveryTruncationThrows) {
  const auto b = encode_binary(small());
  for (size_t n = 0; n < b.size(); ++n) {
    const std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string e = error_of(cut, "cut.tbin");
    EXPECT_NE(e.find("cut.tbin: byte "), std::string::npos) << "length " << n << ": " << e;
  }
  EXPECT_EQ(decode_binary(b), small());
}

TEST(Binary, EveryTruncationOfTheBigProgramThrows) {
  const auto b = encode_binary(assemble(kAllOpsProgram));
  for (size_t n = 0; n < b.size(); ++n) {
    const std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(decode_binary(cut), ProgramFormatError) << "length " << n;
  }
}

TEST(Binary, TrailingBytesRejected) {
  auto b = encode_binary(small());
  const size_t n = b.size();
  b.push_back(0);
  EXPECT_EQ(error_of(b), "p.tbin: byte " + std::to_string(n) + ": 1 trailing bytes");
}

TEST(Binary, BadMagic) {
  auto b = encode_binary(small());
  b[1] = 'X';
  EXPECT_NE(error_of(b).find("p.tbin: byte 0: not a trnsim binary program"), std::string::npos);
  EXPECT_NE(error_of({}).find("byte 0"), std::string::npos);
}

TEST(Binary, BadVersion) {
  auto b = encode_binary(small());
  b[4] = static_cast<uint8_t>(kBinaryVersion + 1);
  const std::string want = "byte 4: unsupported version " + std::to_string(kBinaryVersion + 1);
  EXPECT_NE(error_of(b).find(want), std::string::npos) << error_of(b);
}

TEST(Binary, BadEnumValues) {
  const Program p = small();
  // Locate each enum byte by encoding two programs that differ only there.
  struct Case {
    const char* what;
    void (*edit)(Program&);
  };
  const Case cases[] = {
      {"bad dtype 200", [](Program& q) { q.queues[0].instrs[0].dst.dtype = DType::bf16; }},
      {"bad memory space 200",
       [](Program& q) { q.queues[0].instrs[0].src[0].space = MemSpace::psum; }},
      {"bad opcode 200", [](Program& q) { q.queues[0].instrs[0].op = Opcode::tensor_copy; }},
      {"bad ALU op 200", [](Program& q) { q.queues[0].instrs[0].op1 = AluOp::mul; }},
      {"bad activation function 200",
       [](Program& q) { q.queues[0].instrs[0].func = ActFunc::relu; }},
      {"bad engine 200", [](Program& q) { q.queues[0].engine = Engine::gpsimd; }},
      {"bad tensor role 200", [](Program& q) { q.tensors[0].role = TensorRole::input; }},
      {"bad signal time 200",
       [](Program& q) { q.queues[0].instrs[0].signals[0].when = SignalWhen::start; }},
  };
  for (const auto& c : cases) {
    Program q = p;
    c.edit(q);
    const size_t at = diff_at(p, q);
    auto b = encode_binary(p);
    b[at] = 200;
    EXPECT_EQ(error_of(b).find("byte " + std::to_string(at) + ": " + c.what), 8u)
        << c.what << " -> " << error_of(b);
  }
}

TEST(Binary, BadCountsAndFlags) {
  const Program p = small();
  {  // ndims 5
    // One more dim adds bytes; the ndims byte is the first difference.
    Program q = p;
    q.queues[0].instrs[0].dst.ndims = 2;
    const auto x = encode_binary(p), y = encode_binary(q);
    size_t at = 0;
    while (x[at] == y[at]) ++at;
    auto b = x;
    b[at] = 5;
    EXPECT_NE(error_of(b).find("ndims 5 exceeds 4"), std::string::npos) << error_of(b);
  }
  {  // nsrc 4
    Program q = p;
    q.queues[0].instrs[0].nsrc = 2;
    q.queues[0].instrs[0].src[1] = q.queues[0].instrs[0].src[0];
    // Adding a source adds bytes; the count byte is the first difference.
    const auto x = encode_binary(p), y = encode_binary(q);
    size_t at = 0;
    while (x[at] == y[at]) ++at;
    auto b = x;
    b[at] = 4;
    EXPECT_NE(error_of(b).find("source count 4 exceeds 3"), std::string::npos) << error_of(b);
  }
  {  // flags with an unknown bit
    Program q = p;
    q.queues[0].instrs[0].reverse1 = true;
    const size_t at = diff_at(p, q);
    auto b = encode_binary(p);
    b[at] = 0x40;
    EXPECT_NE(error_of(b).find("bad flags 64"), std::string::npos) << error_of(b);
  }
  {  // scalar kind 2
    // arg0 = 1.0f is a kind byte then 0x3f800000 little-endian; changing the low
    // mantissa bit changes the byte right after the kind byte.
    Program q = p;
    q.queues[0].instrs[0].arg0.imm = std::bit_cast<float>(0x3f800001u);
    const size_t at = diff_at(p, q);
    auto b = encode_binary(p);
    b[at - 1] = 2;
    EXPECT_NE(error_of(b).find("bad scalar kind 2"), std::string::npos) << error_of(b);
  }
}

TEST(Binary, HugeLengthsDoNotAllocate) {
  const auto good = encode_binary(small());
  // The program name length sits right after the 8-byte header.
  auto b = good;
  b[8] = b[9] = b[10] = b[11] = 0xff;
  EXPECT_NE(error_of(b).find("byte 8: program name length 4294967295 needs at least"),
            std::string::npos)
      << error_of(b);
  // The tensor count follows the 4-byte name length, "small" and the semaphore count.
  const size_t tc = 8 + 4 + 5 + 4;
  b = good;
  b[tc] = b[tc + 1] = b[tc + 2] = b[tc + 3] = 0xff;
  EXPECT_NE(error_of(b).find("byte 21: tensor count 4294967295"), std::string::npos) << error_of(b);
}

TEST(Binary, RandomCorruptionNeverCrashes) {
  const auto good = encode_binary(assemble(kAllOpsProgram));
  std::mt19937 rng(12345);
  int decoded = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    try {
      decode_binary(b);
      ++decoded;  // e.g. a changed immediate or offset: still well-formed
    } catch (const ProgramFormatError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(decoded + rejected, 3000);
  EXPECT_GT(rejected, 0);
}

class BinaryFiles : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return ::testing::TempDir() + "trnsim_" + name; }
};

TEST_F(BinaryFiles, SaveAndLoadByFormat) {
  const Program p = assemble(kAllOpsProgram);
  const std::string tb = path("all_ops.tbin"), ta = path("all_ops.tasm");
  save_program(p, tb);
  save_program(p, ta);
  // The extension picks the format on save; content (magic) on load.
  std::ifstream fb(tb, std::ios::binary), fa(ta, std::ios::binary);
  std::string head_b(4, '\0'), head_a(8, '\0');
  fb.read(head_b.data(), 4);
  fa.read(head_a.data(), 8);
  EXPECT_EQ(head_b, "TRNP");
  EXPECT_EQ(head_a, ".program");
  EXPECT_EQ(load_program(tb), p);
  EXPECT_EQ(load_program(ta), p);
  // A binary under a text name still loads as binary.
  const std::string odd = path("binary_named.tasm");
  std::rename(tb.c_str(), odd.c_str());
  EXPECT_EQ(load_program(odd), p);
  std::remove(odd.c_str());
  std::remove(ta.c_str());
}

TEST_F(BinaryFiles, LoadCopiesOnlyTheConstantsTheFilterKeeps) {
  const Program p = assemble(
      ".program two\n.semaphores 1\n.tensor a [2] fp32 constant @0\n.data a AACAPwAAAEA=\n"
      ".tensor b [2] fp32 constant @8\n.data b AAAAQAAAgD8=\n.queue vector\n"
      "tensor_scalar dst=sbuf[0:1, 0, fp32, [1,2]] src=sbuf[0:1, 8, bf16, [1,2]] op0=add "
      "arg0=1 signal=s0+1\n");
  ASSERT_EQ(p.constants.size(), 2u);
  const std::string tb = path("two_constants.tbin"), ta = path("two_constants.tasm");
  save_program(p, tb);
  save_program(p, ta);
  // The filter sees the whole program but its constants: tensors and queues decoded.
  std::vector<std::string> asked;
  const ConstantFilter keep_a = [&](const Program& q, const TensorDecl& t) {
    EXPECT_EQ(q.tensors.size(), 2u);
    EXPECT_EQ(q.queues.size(), 1u);
    EXPECT_EQ(q.queues[0].instrs.size(), 1u);
    asked.push_back(t.name);
    return t.name == "a";
  };
  const Program q = load_program(tb, keep_a);
  EXPECT_EQ(asked, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(q.constants.size(), 1u);
  EXPECT_EQ(q.constants.at("a"), p.constants.at("a"));
  EXPECT_EQ(q.queues, p.queues);
  EXPECT_EQ(q.tensors, p.tensors);
  // No filter: every constant; several loads of one mapped file agree.
  EXPECT_EQ(load_program(tb), p);
  EXPECT_EQ(load_program(tb), p);
  // Assembly keeps every constant.
  asked.clear();
  EXPECT_EQ(load_program(ta, keep_a), p);
  EXPECT_TRUE(asked.empty());
  std::remove(tb.c_str());
  std::remove(ta.c_str());
}

TEST_F(BinaryFiles, LoadErrorsNameThePath) {
  const std::string missing = path("missing.tbin");
  try {
    load_program(missing);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string bad_bin = path("bad.tbin");
  {
    auto b = encode_binary(small());
    b.resize(b.size() - 3);
    std::ofstream(bad_bin, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  try {
    load_program(bad_bin);
    FAIL();
  } catch (const ProgramFormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad_bin + ": byte ", 0), 0u) << e.what();
  }
  const std::string bad_text = path("bad.tasm");
  std::ofstream(bad_text) << ".queue vector\nfrob\n";
  try {
    load_program(bad_text);
    FAIL();
  } catch (const AsmError& e) {
    EXPECT_EQ(e.file, bad_text);
    EXPECT_EQ(std::string(e.what()), bad_text + ":2:1: error: unknown opcode 'frob'");
  }
  std::remove(bad_bin.c_str());
  std::remove(bad_text.c_str());
}

}  // namespace
}  // namespace trnsim::isa
