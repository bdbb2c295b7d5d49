// The chips' collective engines (models/network/collective_engine_tlm.h,
// network.model: tlm) sharing the cores' DMA engines with compute DMA, per
// transfer, against the analytic model's one-block booking
// (models/network/collective_unit.h). Config: tiny with one core a chip (2 ranks on
// 2 chips: the ring, each way its own 10 B/ns, 100 ns link), one collective DMA
// engine (engine 15, 10 B/ns: the same rate as a link), HBM at 10 TB/s with no
// latency so that memory never decides a time (but for the busy receiver below). An all_reduce of
// 2048 fp32: each rank sends one 4096 B block a phase, reduce_scatter then all_gather.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/isa/assembler.h"
#include "platform/config.h"
#include "runtime/device.h"

namespace trnsim::runtime {
namespace {

platform::platform_config config(bool tlm, bool w) {
  std::vector<std::string> sets = {"network.collective_dma_engines=1", "hbm.latency=0ns",
                                   "hbm.bandwidth=10TB/s"};
  if (tlm) sets.push_back("network.model=tlm");
  // A core's DMA engines together as fast as its HBM, so that w's load (4 MiB:
  // 419.4 ns of their shared rate from 200 ns) is over before the collective's
  // second block needs that rate.
  if (w) sets.push_back("core.dma.core_bandwidth=10TB/s");
  return platform::load_config("tiny", sets);
}

// `dma`: the compute DMA queues' lines before the all_reduce's sync queue.
isa::Program program(const std::string& dma) {
  return isa::assemble(
      ".program p\n.semaphores 1\n"
      ".tensor x [2048] fp32 input @0\n"
      ".tensor y [2048] fp32 output @8192\n"
      ".tensor z [100,100] fp32 input @16384\n" +
      dma +
      ".queue sync\n"
      "all_reduce dst=hbm[1x0, @y, fp32, [1,2048]] src=hbm[1x0, @x, fp32, [1,2048]] "
      "group=[0,1]\n");
}

// Both ranks run `p` (one simulated chip core each, placed on chips 0 and 1);
// returns rank 0's result, after checking the sum.
// `w`: the program has a [128, 8192] fp32 input w too.
LaunchResult run(const isa::Program& p, bool tlm, bool threads = false, bool w = false) {
  DeviceOptions o;
  o.chip_cores = 1;
  o.systemc_threads = threads;
  Device dev(config(tlm, w), o);
  std::vector<float> x0(2048), x1(2048), z(10000, 1.0f);
  for (size_t i = 0; i < 2048; ++i) {
    x0[i] = float(i);
    x1[i] = float(3 * i) + 0.5f;
  }
  std::vector<Launch> ls(2);
  for (int r = 0; r < 2; ++r) {
    ls[r].program = &p;
    ls[r].core = uint32_t(r);
    ls[r].rank = r;
    ls[r].inputs["x"] = HostTensor::from_float({2048}, isa::DType::fp32, r ? x1 : x0);
    ls[r].inputs["z"] = HostTensor::from_float({100, 100}, isa::DType::fp32, z);
    if (w)
      ls[r].inputs["w"] = HostTensor::from_float({128, 8192}, isa::DType::fp32,
                                                 std::vector<float>(128 * 8192, 2.0f));
  }
  const RunReport rep = dev.run(ls);
  for (const LaunchResult& l : rep.launches) {
    const std::vector<float> y = l.outputs.at("y").to_float();
    for (size_t i = 0; i < 2048; i += 97) EXPECT_EQ(y[i], x0[i] + x1[i]) << "element " << i;
  }
  return rep.launches.at(0);
}

// One Device per process (SystemC elaborates once): one run per test.

// Each phase: the DMA engine and the link move the 4096 B block at 10 B/ns each,
// cut-through: 4096 / 10 + 100 = 509.6 ns; two phases 1019.2 ns, as analytic.
TEST(CollectiveEngineTlm, RingAllReduceTakesTheAnalyticTime) {
  EXPECT_NEAR(run(program(""), true).simulated_ns, 1019.2, 1e-6);
}
TEST(CollectiveEngineTlm, RingAllReduceAnalytic) {
  EXPECT_NEAR(run(program(""), false).simulated_ns, 1019.2, 1e-6);
}

// A compute copy of 100 x 100 fp32 (40000 B) on engine 15 from t = 0 takes
// fixed 100 + 40000 / 10 = 4100 ns. TLM: the first transfer waits for it, then the
// two phases: 4100 + 1019.2 = 5119.2 ns. Analytic: the block booking holds the
// engine for both blocks at once (8192 / 10 = 819.2 ns from 4100: 4919.2 ns), the
// network time running meanwhile.
const char* kLongCopy =
    ".queue dma 15 0\n"
    "dma_copy dst=sbuf[0:100, 0, fp32, [1,100]] src=hbm[100x100, @z, fp32, [1,100]]\n";

TEST(CollectiveEngineTlm, FirstTransferWaitsForComputeDma) {
  const LaunchResult t = run(program(kLongCopy), true);
  EXPECT_NEAR(t.simulated_ns, 5119.2, 1e-6);
  // The collective started at 0 and waited 4100 ns for the engine.
  EXPECT_NEAR(t.collective_ns, 5119.2, 1e-6);
  EXPECT_NEAR(t.contention_ns, 4100.0, 1e-6);
}
TEST(CollectiveEngineTlm, FirstTransferWaitsForComputeDmaAnalytic) {
  EXPECT_NEAR(run(program(kLongCopy), false).simulated_ns, 4919.2, 1e-6);
}

// Engine 0 copies 10 x 25 fp32 (1000 B: 100 + 100 = 200 ns), then engine 15 copies
// 10 x 10 fp32 (400 B: 100 + 40 = 140 ns), issued at 200 ns, mid-collective.
// TLM: engine 15 carries the first block [0, 409.6], the copy [409.6, 549.6], and
// the second block, ready at 509.6, from 549.6: it arrives 549.6 + 409.6 + 100 =
// 1059.2 ns. Analytic: the block booking holds engine 15 [0, 819.2] for both
// blocks, the copy runs after it, the collective ends at its network time 1019.2.
const char* kMidCopy =
    ".queue dma 0 0\n"
    "dma_copy dst=sbuf[0:10, 0, fp32, [1,25]] src=hbm[10x25, @z, fp32, [1,25]] signal=s0+1\n"
    ".queue dma 15 0\n"
    "dma_copy dst=sbuf[0:10, 4096, fp32, [1,10]] src=hbm[10x10, @z, fp32, [1,10]] wait=s0>=1\n";

TEST(CollectiveEngineTlm, ComputeDmaGoesBetweenTransfers) {
  const LaunchResult t = run(program(kMidCopy), true);
  EXPECT_NEAR(t.simulated_ns, 1059.2, 1e-6);
  // The copy reads its 400 B from HBM at 409.6 + 100 = 509.6 ns, 0.04 ns; the first
  // block, arriving then, is reduced into HBM after it (2 x 4096 / 10000 = 2 x
  // 0.410 ns at 1 ps resolution): done at 510.46 ns. The second block then waited
  // 549.6 - 510.46 = 39.14 ns for the engine.
  EXPECT_NEAR(t.contention_ns, 39.14, 1e-6);
}
TEST(CollectiveEngineTlm, ComputeDmaGoesBetweenTransfersAnalytic) {
  EXPECT_NEAR(run(program(kMidCopy), false).simulated_ns, 1019.2, 1e-6);
}

// The receiver's memory takes a block when it arrives (collective_unit::use_tlm),
// after what it took on before. Engine 0 copies 1000 B (200 ns, as above), then
// engine 1 loads 128 x 8192 fp32 (4 MiB) from HBM (one channel at 10 TB/s: 10000
// B/ns), issued at 200 ns: HBM is busy with it from 300 ns (the 100 ns fixed cost)
// for 4194304 / 10000 = 419.430 ns (SystemC's 1 ps resolution), to 719.430 ns. The
// first block arrives at 509.6 ns (as above), HBM busy: the receiver reads its
// operand and writes the sum, 2 x 4096 / 10000 = 2 x 0.410 ns, after the load: done
// at 720.250 ns. The second block leaves then and, HBM idle (it takes a block as
// it comes in, done at its arrival), arrives 509.6 ns later: 1229.85 ns. Booked
// when the first block left (t = 0), the receiver's write would go before the
// load: 1019.2 ns.
const char* kBusyReceiver =
    ".tensor w [128,8192] fp32 input @65536\n"
    ".queue dma 0 0\n"
    "dma_copy dst=sbuf[0:10, 0, fp32, [1,25]] src=hbm[10x25, @z, fp32, [1,25]] signal=s0+1\n"
    ".queue dma 1 0\n"
    "dma_copy dst=sbuf[0:128, 0, fp32, [1,8192]] src=hbm[128x8192, @w, fp32, [1,8192]] "
    "wait=s0>=1\n";

TEST(CollectiveEngineTlm, ReceiverMemoryBusyAtArrivalDelaysTheBlock) {
  const LaunchResult t = run(program(kBusyReceiver), true, false, true);
  EXPECT_NEAR(t.collective_ns, 1229.85, 1e-6);
  // The wait was for memory, not for the DMA engines.
  EXPECT_NEAR(t.contention_ns, 0.0, 1e-6);
}

// The same on SystemC threads instead of the chip's scheduler.
TEST(CollectiveEngineTlm, SystemcThreadsGiveTheSameTimes) {
  EXPECT_NEAR(run(program(kMidCopy), true, true).simulated_ns, 1059.2, 1e-6);
}

}  // namespace
}  // namespace trnsim::runtime
