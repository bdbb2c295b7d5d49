// Typed platform configuration: YAML file + `--set key=value` overrides, checked
// against the schema (config_schema.cpp: name, type, unit, description, check),
// parsed once into the params structs the models take.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/common/core_params.h"
#include "models/isa/validate.h"
#include "models/network/network_params.h"

namespace trnsim::cosim {
struct rtl_config;  // models/cosim/rtl_config.h
}

// clang-format off

// Rows of the chip and the host link
// (models/common/params.h).
#define TRNSIM_CHIP_PARAMS(X)                                                                     \
  X(cores, uint32_t, 8, "cores", count, "cores", range(1, 1024), sim, "NeuronCores per chip",     \
    "docs/hardware.md: Chips, NeuronCores per chip (8 physical NC-v3 on trn2)")

#define TRNSIM_HOST_PARAMS(X)                                                                     \
  X(link_bandwidth_bps, double, 25e9, "link_bandwidth", bandwidth, "B/s", bandwidth(), sim,       \
    "host <-> device link bandwidth per direction (host-fallback transfers)",                    \
    "no public figure; chosen: PCIe Gen4 x16 (32 GB/s per direction) at about 80 % efficiency")  \
  X(link_latency_s, double, 2e-6, "link_latency", time, "s", duration(), sim,                     \
    "host <-> device latency per transfer",                                                      \
    "no public figure; chosen: the order of a PCIe DMA round trip plus driver overhead")

// clang-format on

namespace trnsim::platform {

// What computes the tensor engine's matmuls (docs/rtl-cosim.md, "Config"): the C++
// model (`core.tensor.impl: cpp`) with its `core.tensor.numerics`, or the RTL block
// of the `core.tensor.rtl` section (`impl: rtl`).
enum class TensorImpl : uint32_t { cpp, rtl };
enum class TensorNumerics : uint32_t { fast, systolic };

// One core type: every NeuronCore of this type has these blocks, and the choice of
// what computes its matmuls.
struct core_config : models::core_params {
  TensorImpl tensor_impl = TensorImpl::cpp;
  TensorNumerics tensor_numerics = TensorNumerics::fast;
  // The core.tensor.rtl section, parsed and checked against the build; null when the
  // config has none (it may be there with impl: cpp, unused).
  std::shared_ptr<const cosim::rtl_config> tensor_rtl;

  isa::Limits limits(uint64_t hbm_bytes) const;  // what the ISA validator needs
};

// The host link that host-fallback segments cross (runtime/fallback.h).
struct host_config {
  TRNSIM_HOST_PARAMS(TRNSIM_PARAM_FIELD)
};

// The default core type's name: the `core:` section.
inline constexpr std::string_view kDefaultCoreType = "core";

struct platform_config {
  std::string name;                       // preset or file stem
  std::string source;                     // file the config came from
  TRNSIM_CHIP_PARAMS(TRNSIM_PARAM_FIELD)  // the `chip:` section
  models::hbm_params hbm;
  core_config core;  // the default core type, `core`
  host_config host;
  models::network_params network;  // the `network:` section: chips, links, nodes
  // Other core types (`core_types.NAME:` sections: `core` plus differences), and
  // which type each core is (`chip.layout`; empty: every core is `core`).
  std::vector<std::pair<std::string, core_config>> other_core_types;
  std::vector<uint32_t> layout;  // per core: 0 = `core`, i = other_core_types[i - 1]

  // Core type `t` (0: `core`) and its name.
  const core_config& core_type(size_t t) const;
  core_config& core_type(size_t t);
  std::string core_type_name(size_t t) const;
  size_t core_types() const { return 1 + other_core_types.size(); }
  // The index of the type named `name`, or core_types() when there is none.
  size_t find_core_type(std::string_view name) const;
  std::string core_type_names() const;  // "core, small": for messages
  // The type of core `i` of the chip.
  const core_config& core_of(uint32_t i) const;
  isa::Limits limits() const;  // the default core type's, for the ISA validator
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
// The schema as a table (key, type, unit, default, range, readers, description,
// source) for docs and `trnsim info --keys`; schema_json() is the same as JSON, with
// the units each value type accepts (the sweep's one source for both).
std::string schema_table();
std::string schema_json();

}  // namespace trnsim::platform
