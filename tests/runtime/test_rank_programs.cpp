// RankPrograms: --rank-program files with the same bytes share one decoded program.
#include <gtest/gtest.h>

#include "runtime/rank_programs.h"
#include "tests/runtime/cli_harness.h"

namespace trnsim::runtime {
namespace {

const char* kProg = ".program p\n.semaphores 1\n.tensor x [1,4] fp32 input @0\n.queue sync\n";

TEST(RankPrograms, SameBytesShareOneProgram) {
  const auto d = test::temp_dir("rank_programs_share");
  const std::string a =
      test::write_text(d / "a.tasm", std::string(kProg) + "barrier group=[0,1]\n");
  const std::string b =
      test::write_text(d / "b.tasm", std::string(kProg) + "barrier group=[0,1]\n");
  const std::string c =
      test::write_text(d / "c.tasm", std::string(kProg) + "barrier group=[0,2]\n");
  RankPrograms rp;
  const isa::Program* pa = rp.load(a);
  EXPECT_EQ(rp.load(b), pa);  // another file, the same bytes
  EXPECT_EQ(rp.load(a), pa);  // the same file again
  EXPECT_NE(rp.load(c), pa);  // one byte differs
  EXPECT_EQ(rp.loaded(), 2u);
  EXPECT_TRUE(same_file_bytes(a, b));
  EXPECT_FALSE(same_file_bytes(a, c));
  // A program the caller holds (the run's main program) is shared too.
  isa::Program mine;
  RankPrograms rq;
  rq.share(a, &mine);
  EXPECT_EQ(rq.load(b), &mine);
  EXPECT_EQ(rq.loaded(), 0u);
}

TEST(RankPrograms, MissingFileIsTheLoadersError) {
  RankPrograms rp;
  EXPECT_ANY_THROW(rp.load("/nonexistent/rank7.tasm"));
}

}  // namespace
}  // namespace trnsim::runtime
