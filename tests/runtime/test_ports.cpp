// SBUF/PSUM port sharing: the NC-v2 rules (vector/GpSimd share an SBUF port,
// vector/scalar share a PSUM port) make concurrent accesses stall; NC-v3 settings
// (no SBUF sharing, PSUM sharing only within a bank) remove the stall.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/runtime/cli_harness.h"

using namespace trnsim::test;

namespace {

// Vector and GpSimd each copy 2048 fp32 per partition within SBUF at t=0 (with
// `psum_first` false), or vector and scalar each read 512 fp32 from PSUM at t=0,
// from banks 0 and `scalar_bank`.
std::string program(int scalar_bank, bool psum_first) {
  const std::string sbuf_copy =
      "tensor_copy dst=sbuf[0:128, 0, fp32, [1,2048]] src=sbuf[0:128, 8192, fp32, [1,2048]]\n";
  const std::string psum_copy =
      "tensor_copy dst=sbuf[0:128, 40960, fp32, [1,512]] src=psum[0:128, 0, fp32, [1,512]]\n";
  std::ostringstream p;
  p << ".program ports\n.semaphores 1\n"
    << ".queue vector\n"
    << (psum_first ? psum_copy + sbuf_copy : sbuf_copy + psum_copy) << ".queue gpsimd\n"
    << "tensor_copy dst=sbuf[0:128, 16384, fp32, [1,2048]] src=sbuf[0:128, 24576, fp32, [1,2048]]\n"
    << ".queue scalar\n"
    << "activation dst=sbuf[0:128, 32768, fp32, [1,512]] src=psum[0:128, " << scalar_bank * 2048
    << ", fp32, [1,512]] func=identity\n";
  return p.str();
}

// Reads one stat from the text dump ("name  value  unit  # desc").
double stat(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size()));
  ADD_FAILURE() << "no stat " << name;
  return -1;
}

std::string run_stats(const std::string& test, int scalar_bank, bool psum_first,
                      const std::string& sets) {
  auto dir = temp_dir(test);
  auto prog = write_text(dir / "p.tasm", program(scalar_bank, psum_first));
  auto txt = (dir / "stats.txt").string();
  // A timing exercise: it reads SBUF/PSUM nobody wrote, so no poison check.
  auto r = run_cmd("env -u TRNSIM_CHECK " + trnsim_bin() + " run " + prog + " -c tiny " + sets +
                   " --stats-text " + txt);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream f(txt);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

const std::string kV2 =
    "--set core.sbuf.vector_gpsimd_shared_port=true --set core.psum.vector_scalar_shared_port=true"
    " --set core.psum.shared_port_per_bank=false";
const std::string kV3 =
    "--set core.sbuf.vector_gpsimd_shared_port=false --set core.psum.vector_scalar_shared_port=true"
    " --set core.psum.shared_port_per_bank=true";

}  // namespace

TEST(Ports, SbufConflictOnV2DisappearsOnV3) {
  const std::string v2 = run_stats("ports_v2", 1, false, kV2);
  const std::string v3 = run_stats("ports_v3", 1, false, kV3);
  // tiny: SBUF port clock 1 GHz, 128 elements/cycle over 128 partitions = 1 element
  // per partition per cycle, so a 2048-element access holds a port 2048 ns. Both
  // copies are offered at t = 0; the vector engine goes first (the scheduler runs
  // same-time sequencers in start order: tensor, vector, scalar, gpsimd, sync) and
  // holds the shared read port 0..2048 and write port 0..2048. GpSimd's read waits
  // 2048 ns, then its write holds the write port 2048..4096. The vector engine's
  // next instruction issues at 2048 + 64 (static overhead) = 2112 and its 512-
  // element SBUF write waits for that port until 4096: 1984 ns. 2048 + 1984 = 4032.
  auto both = [](const std::string& t) {
    return stat(t, "chip.core0.engines.vector.port_stall_ns") +
           stat(t, "chip.core0.engines.gpsimd.port_stall_ns");
  };
  EXPECT_DOUBLE_EQ(stat(v2, "chip.core0.engines.gpsimd.port_stall_ns"), 2048.0);
  EXPECT_DOUBLE_EQ(both(v2), 4032.0);
  EXPECT_DOUBLE_EQ(both(v3), 0.0);
  EXPECT_GT(stat(v2, "chip.core0.sbuf.port_stall_ns"), 0.0);
  EXPECT_DOUBLE_EQ(stat(v3, "chip.core0.sbuf.port_stall_ns"), 0.0);
}

TEST(Ports, PsumSharingIsPerBankOnV3) {
  // Scalar reads PSUM bank 1 while the vector engine reads bank 0.
  const std::string v2 = run_stats("psum_v2", 1, true, kV2);
  const std::string v3_other_bank = run_stats("psum_v3_b1", 1, true, kV3);
  const std::string v3_same_bank = run_stats("psum_v3_b0", 0, true, kV3);
  EXPECT_GT(stat(v2, "chip.core0.psum.port_stall_ns"), 0.0);
  EXPECT_DOUBLE_EQ(stat(v3_other_bank, "chip.core0.psum.port_stall_ns"), 0.0);
  EXPECT_GT(stat(v3_same_bank, "chip.core0.psum.port_stall_ns"), 0.0);
}
