// Extreme but well-formed configs and programs at the command line: values the
// model cannot represent or hold are errors naming the key, line or tensor (exit 1),
// never a wrapped simulated time, a std::bad_alloc or an abort; sizes and counts the
// model holds cost only what the program uses.
#include <gtest/gtest.h>

#include <string>

#include "tests/runtime/cli_harness.h"

using namespace trnsim::test;

namespace {

const std::string kSoftmax = "tests/e2e/programs/softmax.tasm";

std::string run_softmax(const std::string& sets) {
  return trnsim_bin() + " run " + source_path(kSoftmax) + " -c tiny --random-inputs " + sets;
}

// "  simulated time   55.040 us" -> "55.040 us"; "" when absent.
std::string simulated_time(const std::string& out) {
  const size_t at = out.find("simulated time");
  if (at == std::string::npos) return "";
  const size_t b = out.find_first_not_of(' ', at + 14);
  return out.substr(b, out.find('\n', b) - b);
}

}  // namespace

// A 1e-7 Hz clock, 1e-30 GB/s and a 1e10 s fixed cost used to run, their times
// wrapped round 2^64 ps (52.656 us for the first, 9223372036 ms for the others).
TEST(CliLimits, TimesPastTheSimulatedRangeAreConfigErrorsNamingTheKey) {
  expect_exit(run_softmax("--set core.vector.clock=1e-7Hz"), 1,
              "--set core.vector.clock: must be 1kHz..1THz (got '1e-7Hz')");
  expect_exit(run_softmax("--set core.dma.bandwidth=1e-30GB/s"), 1,
              "--set core.dma.bandwidth: must be >= 1kB/s (got '1e-30GB/s')");
  expect_exit(run_softmax("--set core.dma.fixed_cost=1e10s"), 1,
              "--set core.dma.fixed_cost: must be 0..1s (got '1e10s')");
}

// The slowest DMA the config allows (1 s fixed cost, 1 kB/s: about 256 s for each
// of softmax's 250 KB transfers) is far inside the range: the run ends normally.
TEST(CliLimits, SlowestDmaInRangeRunsToItsTime) {
  const CmdResult r = expect_exit(
      run_softmax("--set core.dma.fixed_cost=1s --set core.dma.bandwidth=1kB/s"), 0, "");
  EXPECT_NE(simulated_time(r.out).find(" ms"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("error"), std::string::npos) << r.out;
}

// Counts and sizes the model cannot hold are config errors (65536 DMA engines per
// core used to abort with std::bad_alloc after 90 s: one coroutine stack each).
TEST(CliLimits, CountsAndSizesPastTheModelAreConfigErrorsNamingTheKey) {
  expect_exit(run_softmax("--set core.dma.engines=65536"), 1,
              "--set core.dma.engines: must be 1..1024 (got '65536')");
  expect_exit(run_softmax("--set chip.cores=1024 --set core.dma.engines=1024"), 1,
              "core.dma.engines: 1024 x chip.cores (1024) = 1048576 DMA engines on the chip");
  expect_exit(run_softmax("--set core.sbuf.partition_size=1TiB"), 1,
              "--set core.sbuf.partition_size: must be > 0, <= 4MiB, multiple of 4");
  expect_exit(run_softmax("--set hbm.size=2048TiB"), 1, "--set hbm.size: must be > 0, <= 1024TiB");
}

// What the model holds runs, with the result of the default config: 65536 queues
// per engine (used to take over 15 minutes on this 9-instruction program), a 1 PiB
// HBM (used to allocate 8 GB of page table), 64 cores (used to allocate every
// core's SBUF), all of which the program does not use.
TEST(CliLimits, UnusedQueuesHbmAndCoresCostNothing) {
  const CmdResult base = expect_exit(run_softmax(""), 0, "simulated time");
  const std::string want = simulated_time(base.out);
  ASSERT_FALSE(want.empty()) << base.out;
  for (const std::string sets : {"--set core.dma.queues_per_engine=65536", "--set hbm.size=1024TiB",
                                 "--set chip.cores=64"}) {
    SCOPED_TRACE(sets);
    const CmdResult r = expect_exit(run_softmax(sets), 0, "simulated time");
    EXPECT_EQ(simulated_time(r.out), want);
  }
}

// Tensors too large for the HBM model or for the host are errors naming them.
TEST(CliLimits, HugeTensorsAreErrorsNamingTheLineOrTensor) {
  const auto dir = temp_dir("cli_limits_tensors");
  const std::string body =
      ".queue dma 0 0\n"
      "dma_copy dst=sbuf[0:128, 0, fp32, [1,64]] src=hbm[128x64, @x, fp32, [1,64]] signal=s0+1\n"
      "dma_copy dst=hbm[128x64, @y, fp32, [1,64]] src=sbuf[0:128, 0, fp32, [1,64]] wait=s0>=1\n";
  // 2^62 bytes: used to end in "cannot create std::vector larger than max_size()".
  const std::string huge = write_text(dir / "huge.tasm",
                                      ".program huge\n.semaphores 1\n"
                                      ".tensor x [1048576,1048576,1048576,4] fp32 input @0\n"
                                      ".tensor y [128,64] fp32 output @0\n" +
                                          body);
  expect_exit(trnsim_bin() + " run " + huge + " -c tiny --random-inputs", 1,
              "huge.tasm:3:9: error: tensor 'x' ends past hbm byte 1125899906842624 (1 PiB)");
  // 4 TiB: fits a 1 PiB HBM, not a host's memory for a run with data (used to end
  // in std::bad_alloc); timing only, it runs.
  const std::string big = write_text(dir / "big.tasm",
                                     ".program big\n.semaphores 1\n"
                                     ".tensor x [1024,1024,1024,1024] fp32 input @0\n"
                                     ".tensor y [128,64] fp32 output @0\n" +
                                         body);
  expect_exit(trnsim_bin() + " run " + big + " -c tiny --random-inputs --set hbm.size=1024TiB", 1,
              "the largest is input 'x' [1024,1024,1024,1024] fp32 (4398046511104 bytes)");
  expect_exit(trnsim_bin() + " run " + big + " -c tiny --no-functional --set hbm.size=1024TiB", 0,
              "simulated time");
}

// A chip of two core types: tiny's core, and `small` with 2 DMA engines. An ONNX
// model run on core 1 is compiled for `small`; a program compiled for `core` (DMA
// engines up to 15) is refused on core 1, naming the engine, and runs on core 0.
TEST(CliCoreTypes, ProgramsAreCompiledAndCheckedForTheCoreTheyRunOn) {
  const auto dir = temp_dir("core_types");
  const std::string d = dir.string() + "/";
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", R"(
x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [256, 512])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [256, 512])
w = nh.from_array(np.full((512, 512), 0.01, np.float32), 'w')
g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['y'])], 'mm', [x], [y], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/mm.onnx')
)"));
  write_text(
      dir / "het.yaml",
      "base: tiny\ncore_types:\n  small:\n    dma: {engines: 2}\nchip:\n  layout: core, small\n");
  const std::string run =
      trnsim_bin() + " run " + d + "mm.onnx -c " + d + "het.yaml --random-inputs";
  expect_exit(run + " --core 1", 0, "simulated time");
  expect_exit(trnsim_bin() + " compile " + d + "mm.onnx -c tiny -o " + d + "mm.tbin", 0, "wrote");
  expect_exit(trnsim_bin() + " run " + d + "mm.tbin -c " + d + "het.yaml --core 1 --random-inputs",
              1, "dma engine 2 >= 2 dma engines");
  expect_exit(trnsim_bin() + " run " + d + "mm.tbin -c " + d + "het.yaml --core 0 --random-inputs",
              0, "simulated time");
  // compile --core-type: a program for the small core runs there.
  expect_exit(trnsim_bin() + " compile " + d + "mm.onnx -c " + d +
                  "het.yaml --core-type small -o " + d + "small.tbin",
              0, "wrote");
  expect_exit(
      trnsim_bin() + " run " + d + "small.tbin -c " + d + "het.yaml --core 1 --random-inputs", 0,
      "simulated time");
  expect_exit(trnsim_bin() + " compile " + d + "mm.onnx -c " + d + "het.yaml --core-type big -o " +
                  d + "big.tbin",
              2, "--core-type big: platform 'het' has no such core type (its types: core, small)");
}
