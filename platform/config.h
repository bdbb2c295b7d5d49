// Typed platform configuration: YAML file + `--set key=value` overrides, checked
// against the schema (config_schema.cpp: name, type, unit, description, check),
// parsed once into the params structs the models take.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/engines/engine_params.h"
#include "models/isa/validate.h"
#include "models/memory/memory_params.h"

namespace trnsim::cosim {
struct rtl_config;  // models/cosim/rtl_config.h
}

namespace trnsim::platform {

// What computes the tensor engine's matmuls (docs/rtl-cosim.md, "Config"): the C++
// model (`core.tensor.impl: cpp`) with its `core.tensor.numerics`, or the RTL block
// of the `core.tensor.rtl` section (`impl: rtl`).
enum class TensorImpl : uint32_t { cpp, rtl };
enum class TensorNumerics : uint32_t { fast, systolic };

struct core_config {
  models::tensor_engine_params tensor;
  models::vector_engine_params vector;
  models::scalar_engine_params scalar;
  models::gpsimd_engine_params gpsimd;
  models::sync_engine_params sync;
  models::sbuf_params sbuf;
  models::psum_params psum;
  models::dma_params dma;
  uint32_t semaphores = 256;  // semaphores per core
  TensorImpl tensor_impl = TensorImpl::cpp;
  TensorNumerics tensor_numerics = TensorNumerics::fast;
  // The core.tensor.rtl section, parsed and checked against the build; null when the
  // config has none (it may be there with impl: cpp, unused).
  std::shared_ptr<const cosim::rtl_config> tensor_rtl;
};

// The host link that host-fallback segments cross (runtime/fallback.h).
struct host_config {
  double link_bandwidth_bps = 32e9;  // bytes per second, each direction
  double link_latency_s = 2e-6;      // per transfer
};

struct platform_config {
  std::string name;    // preset or file stem
  std::string source;  // file the config came from
  uint32_t cores = 1;  // NeuronCores per chip
  models::hbm_params hbm;
  core_config core;
  host_config host;

  isa::Limits limits() const;  // what the ISA validator needs
};

// Error naming the file, line (when known) and key.
class ConfigError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `name_or_path`: a preset (trn1, trn2, trn3, tiny: configs/<name>.yaml found via
// the TRNSIM_CONFIG_DIR env var, then the source tree's configs/) or a YAML path.
// Overrides are "dotted.key=value" strings, applied after the file.
platform_config load_config(const std::string& name_or_path,
                            const std::vector<std::string>& overrides = {});
platform_config parse_config(const std::string& yaml_text, const std::string& file_name,
                             const std::vector<std::string>& overrides = {});

// One line per key: name, value with unit, description (for `trnsim info`).
std::string describe(const platform_config& cfg);
// The schema as a table (key, type, unit, description) for docs and `trnsim info --keys`.
std::string schema_table();

}  // namespace trnsim::platform
