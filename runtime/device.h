// The runtime's device: the simulated chips built from a platform config (one chip,
// or an SPMD launch's chips: DeviceOptions::chip_cores). Programs are loaded into
// their core's chip's HBM, inputs bound, launched on a core (several launches may
// run concurrently on different cores), outputs read back with the launch's stats.
// SystemC elaborates once per process, so a process holds at most one Device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/roofline.h"
#include "models/isa/program.h"
#include "platform/config.h"
#include "runtime/roofline.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

class RunError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Launch {
  const isa::Program* program = nullptr;
  std::map<std::string, HostTensor> inputs;  // by tensor name; dtype/shape checked
  uint32_t core = 0;
  // The compiler's FLOPs, bytes and instruction origins of `program`, for the
  // report's roofline (a run of one launch); null: the whole-program line only.
  const compiler::ProgramRoofline* roofline = nullptr;
  // SPMD: this launch's rank (launches of one run with ranks are ranks 0..R-1, one
  // each); their collective instructions meet in the run's collective unit
  // (models/network/collective_unit.h). -1: no rank (a collective is an error).
  int32_t rank = -1;
};

struct EngineStats {
  std::string name;  // "tensor", "vector", ..., "dma"
  uint64_t instructions = 0;
  double busy_ns = 0;
  double sem_wait_ns = 0;
  double port_stall_ns = 0;
  // DMA only: time at least one of a core's engines moved data (summed over cores),
  // the vendor profiler's "DMA active" time; busy_ns sums the engines' own times.
  double active_ns = 0;
};

// One DMA queue a run used.
struct DmaQueueStats {
  uint32_t core = 0, engine = 0, queue = 0;
  uint64_t instructions = 0, bytes = 0;
  uint64_t copies = 0;  // dma_copy instructions completed (a spread one counts once)
};

struct LaunchResult {
  std::map<std::string, HostTensor> outputs;  // tensors with role output
  double simulated_ns = 0;                    // launch start to last completion
  uint64_t instructions = 0;
  std::vector<EngineStats> engines;  // per compute engine, plus DMA
  // SPMD launches: the rank's collectives, the collective model's time of them,
  // the time its sync queue waited for the group's other ranks, and bytes sent.
  int32_t rank = -1;
  uint64_t collectives = 0;
  double collective_ns = 0, rendezvous_ns = 0;
  uint64_t comm_bytes = 0;
  // Of collective_ns, the time its DMA engines or HBM were busy with compute
  // (models/network/collective_unit.h), and the collectives' HBM bytes. comm_ns:
  // the union of its collectives' intervals; overlap_ns: the part of it during
  // which an instruction of its own other than a collective ran (known only when
  // instruction intervals were recorded: DeviceOptions::comm_overlap or a trace).
  double contention_ns = 0, comm_ns = 0, overlap_ns = 0;
  bool overlap_known = false;
  uint64_t comm_hbm_bytes = 0;
};

// SPMD runs: one distinct collective (runtime/comm_profile.h).
struct CollectiveLine {
  std::string op, algorithm, dtype;
  std::vector<uint32_t> group;
  uint64_t count = 0, runs = 0;
  double network_ns = 0;  // the network model's time of one run
};
// SPMD runs: one network resource the collectives used, summed over them.
struct LinkLine {
  std::string name;
  uint64_t bytes = 0, transfers = 0;
  double busy_ns = 0, contended_ns = 0;
};

// Figures of one run (every launch of it); the stats tree has the same and more.
struct RunReport {
  std::vector<LaunchResult> launches;
  double simulated_ns = 0;  // whole run
  double host_seconds = 0;
  // The process's CPU seconds over the same span: on a shared host, the figure
  // that does not grow with other processes' load.
  double host_cpu_seconds = 0;
  uint64_t instructions = 0;
  uint32_t cores = 0;                                // cores the run used
  uint32_t chips = 0;                                // chips those cores are on (each its HBM)
  std::vector<EngineStats> engines;                  // summed over those cores
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;  // this run, all launches
  double hbm_mbu_pct = 0;  // HBM bytes / simulated time / (one chip's peak bandwidth x chips)
  uint64_t flops = 0;      // matmul FLOPs (2 x K x M x N each)
  uint64_t uploaded_bytes =
      0;               // host -> HBM: constants (first launch of a loaded program) + inputs
  double tflops = 0;   // flops / simulated time
  double mfu_pct = 0;  // tflops / peak of the cores used for mfu_dtype
  isa::DType mfu_dtype = isa::DType::bf16;  // the matmul input dtype with most FLOPs
  std::vector<DmaQueueStats> dma_queues;    // only queues the programs used
  // The largest of the cores used (partitioned_memory.h: high water, touched).
  uint64_t sbuf_high_water_bytes = 0, psum_high_water_bytes = 0;
  uint64_t sbuf_touched_bytes = 0, psum_touched_bytes = 0;
  // Access checks (DeviceOptions::check_races / poison): distinct findings and their
  // report (both instructions, the address range, the missing edge).
  uint64_t races = 0, poisoned_reads = 0;
  std::string check_report;
  std::vector<CollectiveLine> collectives;  // SPMD runs
  std::vector<LinkLine> links;              // SPMD runs
  Roofline roofline;                        // one launch only (runtime/roofline.h)
  std::string stats_json;                   // the stats tree: run figures, then the whole chip
  std::string stats_text;
};

struct DeviceOptions {
  // The checks default to the environment's TRNSIM_CHECK ("races", "poison" or
  // "races,poison"): the test suite turns them on for every run that way.
  DeviceOptions(bool timing_and_data = true);  // NOLINT
  bool functional = true;         // false: timing only, no arithmetic (same times and stats)
  bool check_races = false;       // happens-before race detection (models/common/access_checker.h)
  bool poison = false;            // scratch memory starts as poison_byte; unwritten reads reported
  uint8_t poison_byte = 0xff;     // 0xff: NaN in every float dtype
  bool fail_on_findings = false;  // run() throws RunError with the report (TRNSIM_CHECK sets it)
  std::string trace_path;         // non-empty: Chrome trace-event JSON of each run (Perfetto)
  std::string vcd_path;           // non-empty: VCD of the semaphore values of each run
  // Run the sequencers as SystemC threads on SystemC's kernel instead of the chip's
  // own scheduler (models/common/scheduler.h; defaults to TRNSIM_SCHEDULER=systemc,
  // whose other value is `chip`; anything else is a RunError).
  // A chip with a timed RTL block always does.
  bool systemc_threads = false;
  // SPMD over several chips: the cores of one real chip. The device elaborates
  // chip.cores / chip_cores chips of chip_cores cores, each with its own HBM of the
  // config's hbm figures (core i on chip i / chip_cores); the collective timing places
  // rank r on chip r / chip_cores. 0, or at least chip.cores: one chip of them all.
  uint32_t chip_cores = 0;
  // SPMD: record the instructions' intervals (as a trace does) so the report can
  // say how much of each rank's communication overlapped its compute.
  bool comm_overlap = false;
  // SPMD symmetry fold (runtime/symmetry.h): the run's ranks when the launches are
  // only their representatives 0..L-1 (rank r arrives as rank r % L); 0: no fold.
  uint32_t fold_ranks = 0;
  // Host threads of a functional run (0: the host's cores; TRNSIM_THREADS sets the
  // default): the tensor engine's matmuls run on the extra ones. Outputs, simulated
  // times and stats are the same for every count.
  unsigned threads = 0;
};

class Device {
 public:
  explicit Device(const platform::platform_config& cfg, DeviceOptions opts = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const platform::platform_config& config() const;
  // Validates, loads and runs the launches together until all complete. Throws
  // RunError (bad inputs, deadlock with each queue's pending wait, model errors).
  RunReport run(const std::vector<Launch>& launches);

  // Loads a program for many launches (validated once): launch it by giving the
  // returned pointer as Launch::program. Its HBM image on a core is allocated at the
  // first launch there and kept, with the constants (weights) written once, so they
  // stay resident; several programs may be loaded at once.
  const isa::Program* load(isa::Program p);

  // Asynchronous launches: submit() queues one (a launch per core), wait() runs every
  // queued launch together, concurrently on their cores, and returns their report
  // (launches in submission order). Data parallelism is one launch per core.
  void submit(Launch l);
  RunReport wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trnsim::runtime
