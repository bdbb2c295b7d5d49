// The runtime's device: one simulated chip built from a platform config. Programs
// are loaded into its HBM, inputs bound, launched on a core (several launches may
// run concurrently on different cores), outputs read back with the launch's stats.
// SystemC elaborates once per process, so a process holds at most one Device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/isa/program.h"
#include "platform/config.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

class RunError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Launch {
  const isa::Program* program = nullptr;
  std::map<std::string, HostTensor> inputs;  // by tensor name; dtype/shape checked
  uint32_t core = 0;
};

struct EngineStats {
  std::string name;  // "tensor", "vector", ..., "dma"
  uint64_t instructions = 0;
  double busy_ns = 0;
  double sem_wait_ns = 0;
};

struct LaunchResult {
  std::map<std::string, HostTensor> outputs;  // tensors with role output
  double simulated_ns = 0;                    // launch start to last completion
  uint64_t instructions = 0;
  std::vector<EngineStats> engines;  // per compute engine, plus DMA
};

struct RunReport {
  std::vector<LaunchResult> launches;
  double simulated_ns = 0;  // whole run
  double host_seconds = 0;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;  // this run, all launches
  std::string stats_json;                            // the stats tree of the whole chip
  std::string stats_text;
};

struct DeviceOptions {
  bool functional = true;  // false: timing only, no arithmetic
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trnsim::runtime
