#include "platform/config_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace trnsim::platform::schema {
namespace {

// DMA engines per chip: every one binds to the HBM, and elaborating more takes
// seconds to minutes.
constexpr uint64_t kMaxChipDmaEngines = 16384;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// A row of a params struct's list (models/common/params.h) as a KeyDef of
// SECTION.key whose value is STRUCT(c, t).field.
#define TRNSIM_ROW(field, ctype, dflt, key, vt, unit, chk, rd, desc, src)                        \
  v.push_back(KeyDef{                                                                            \
      std::string(SECTION) + "." + key, ValueType::vt, unit, desc, src, chk, Readers::rd,        \
      PER_CORE,                                                                                  \
      static_cast<FieldRef<ctype>>([](platform_config& c, [[maybe_unused]] size_t t) -> ctype& { \
        return STRUCT(c, t).field;                                                               \
      })});

std::vector<KeyDef> build() {
  using namespace models::checks;
  std::vector<KeyDef> v;
#define PER_CORE false
#define SECTION "chip"
#define STRUCT(c, t) c
  TRNSIM_CHIP_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "host"
#define STRUCT(c, t) c.host
  TRNSIM_HOST_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "hbm"
#define STRUCT(c, t) c.hbm
  TRNSIM_HBM_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "network"
#define STRUCT(c, t) c.network
  TRNSIM_NETWORK_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#undef PER_CORE
#define PER_CORE true
#define SECTION "core"
#define STRUCT(c, t) c.core_type(t).semaphores
  TRNSIM_SEMAPHORES_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.tensor"
#define STRUCT(c, t) c.core_type(t).tensor
  TRNSIM_TENSOR_SEQUENCER_PARAMS(TRNSIM_ROW)
  TRNSIM_TENSOR_ENGINE_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.vector"
#define STRUCT(c, t) c.core_type(t).vector
  TRNSIM_VECTOR_SEQUENCER_PARAMS(TRNSIM_ROW)
  TRNSIM_VECTOR_ENGINE_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.scalar"
#define STRUCT(c, t) c.core_type(t).scalar
  TRNSIM_SCALAR_SEQUENCER_PARAMS(TRNSIM_ROW)
  TRNSIM_SCALAR_ENGINE_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.gpsimd"
#define STRUCT(c, t) c.core_type(t).gpsimd
  TRNSIM_GPSIMD_SEQUENCER_PARAMS(TRNSIM_ROW)
  TRNSIM_GPSIMD_ENGINE_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.sync"
#define STRUCT(c, t) c.core_type(t).sync
  TRNSIM_SYNC_SEQUENCER_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.sbuf"
#define STRUCT(c, t) c.core_type(t).sbuf
  TRNSIM_SBUF_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.psum"
#define STRUCT(c, t) c.core_type(t).psum
  TRNSIM_PSUM_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.dma"
#define STRUCT(c, t) c.core_type(t).dma
  TRNSIM_DMA_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#define SECTION "core.rounding"
#define STRUCT(c, t) c.core_type(t).rounding
  TRNSIM_ROUNDING_PARAMS(TRNSIM_ROW)
#undef SECTION
#undef STRUCT
#undef PER_CORE
  return v;
}

#undef TRNSIM_ROW

bool is_pow2(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

std::string format_value(ValueType t, double v) {
  switch (t) {
    case ValueType::frequency:
      return format_frequency(v);
    case ValueType::bandwidth:
      return format_bandwidth(v);
    case ValueType::time:
      return format_time(v);
    case ValueType::ratio:
      return format_ratio(v);
    case ValueType::size:
      return format_size(static_cast<uint64_t>(v));
    case ValueType::boolean:
      return format_bool(v != 0);
    default:
      return num(v);
  }
}

std::string check_text(const Check& c, ValueType t) {
  // Bounds in the key's unit ("1kHz..1THz", "0..1s"); counts as plain numbers.
  const auto fmt = [t](double v) -> std::string {
    if (v == 0) return "0";
    return t == ValueType::ratio ? num(v) : format_value(t, v);
  };
  std::string s;
  const auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (c.min_exclusive)
    add("> " + fmt(c.min));
  else if (std::isfinite(c.max))
    add(fmt(c.min) + ".." + fmt(c.max));
  else if (c.min > 0)
    add(">= " + fmt(c.min));
  if (c.min_exclusive && std::isfinite(c.max)) add("<= " + fmt(c.max));
  if (c.multiple_of != 0) add("multiple of " + num(static_cast<double>(c.multiple_of)));
  if (c.power_of_two) add("power of two");
  return s.empty() ? ">= 0" : s;
}

std::string_view readers_name(Readers r) {
  switch (r) {
    case Readers::sim:
      return "sim";
    case Readers::compiler:
      return "compiler";
    default:
      return "sim+compiler";
  }
}

const std::vector<KeyDef>& keys() {
  static const std::vector<KeyDef> k = build();
  return k;
}

const KeyDef* find_key(std::string_view key) {
  for (const KeyDef& k : keys())
    if (k.key == key) return &k;
  return nullptr;
}

bool is_section(std::string_view prefix) {
  if (prefix.empty()) return true;
  const auto under = [&](std::string_view key) {
    return key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
           key[prefix.size()] == '.';
  };
  for (const KeyDef& k : keys())
    if (under(k.key)) return true;
  for (const ChoiceKeyDef& k : choice_keys())
    if (under(k.key)) return true;
  return prefix == kTensorRtlSection || under(kTensorRtlSection);
}

const std::vector<ChoiceKeyDef>& choice_keys() {
  static const std::vector<ChoiceKeyDef> k = {
      {"core.tensor.impl",
       {"cpp", "rtl"},
       "what computes the Tensor Engine's matmuls: cpp (the C++ model) or rtl (the verilated "
       "block of core.tensor.rtl, with its cycles; docs/rtl-cosim.md)",
       Readers::sim,
       [](const core_config& c) { return static_cast<uint32_t>(c.tensor_impl); },
       [](core_config& c, uint32_t v) { c.tensor_impl = static_cast<TensorImpl>(v); }},
      {"core.tensor.numerics",
       {"fast", "systolic"},
       "matmul arithmetic of the C++ model: fast (an fp32 sgemm of the inputs) or systolic "
       "(the PE array's: bf16 products summed in fp32 down each column from +0, row 0 first, "
       "one fold of rows at a time, folds added in order, denormals flushed, NaN canonical; "
       "bit-exact with impl: rtl; bf16 inputs only)",
       Readers::sim,
       [](const core_config& c) { return static_cast<uint32_t>(c.tensor_numerics); },
       [](core_config& c, uint32_t v) { c.tensor_numerics = static_cast<TensorNumerics>(v); }},
      {"network.model",
       {"analytic", "tlm"},
       "what times the collectives of an SPMD run (trnsim run --ranks/--tp): analytic (the "
       "fair-sharing model, models/network/collective_engine.h) or tlm (the same transfers "
       "through SystemC/TLM link blocks, each serving a transfer whole in its earliest idle "
       "stretch, so collectives that overlap in time queue on shared links; "
       "models/network/network_tlm.h)",
       Readers::sim,
       [](const core_config&) { return uint32_t{0}; },
       [](core_config&, uint32_t) {},
       [](const platform_config& c) { return static_cast<uint32_t>(c.network.model); },
       [](platform_config& c, uint32_t v) {
         c.network.model = static_cast<models::NetworkModel>(v);
       }},
  };
  return k;
}

const ChoiceKeyDef* find_choice_key(std::string_view key) {
  for (const ChoiceKeyDef& k : choice_keys())
    if (k.key == key) return &k;
  return nullptr;
}

uint32_t parse_choice(const ChoiceKeyDef& k, std::string_view text) {
  std::string list;
  for (size_t i = 0; i < k.choices.size(); ++i) {
    if (text == k.choices[i]) return static_cast<uint32_t>(i);
    list += (i == 0 ? "" : i + 1 == k.choices.size() ? " or " : ", ") + k.choices[i];
  }
  throw std::range_error("expected " + list + ", got '" + std::string(text) + "'");
}

void set_value(const KeyDef& k, std::string_view text, platform_config& cfg, size_t core_type) {
  double d = 0;    // the value as checked
  uint64_t u = 0;  // integer types
  bool b = false;
  switch (k.type) {
    case ValueType::frequency:
      d = parse_frequency(text);
      break;
    case ValueType::bandwidth:
      d = parse_bandwidth(text);
      break;
    case ValueType::time:
      d = parse_time(text);
      break;
    case ValueType::ratio:
      d = parse_ratio(text);
      break;
    case ValueType::size:
      d = static_cast<double>(u = parse_size(text));
      break;
    case ValueType::count:
    case ValueType::cycles:
      d = static_cast<double>(u = parse_count(text));
      break;
    case ValueType::boolean:
      b = parse_bool(text);
      break;
  }
  if (k.type != ValueType::boolean) {
    // Integer checks on the exact value; the double may have rounded.
    bool ok = k.check.passes(d);
    if (k.type == ValueType::size || k.type == ValueType::count || k.type == ValueType::cycles) {
      if (k.check.multiple_of != 0) ok = ok && u % k.check.multiple_of == 0;
      if (k.check.power_of_two) ok = ok && is_pow2(u);
    }
    if (!ok) throw std::range_error("must be " + check_text(k.check, k.type));
  }
  std::visit(
      [&](auto ref) {
        using V = std::remove_reference_t<decltype(ref(cfg, core_type))>;
        if constexpr (std::is_same_v<V, double>) {
          ref(cfg, core_type) = d;
        } else if constexpr (std::is_same_v<V, bool>) {
          ref(cfg, core_type) = b;
        } else {
          if (u > std::numeric_limits<V>::max())
            throw std::range_error("too large (at most " +
                                   std::to_string(std::numeric_limits<V>::max()) + ")");
          ref(cfg, core_type) = static_cast<V>(u);
        }
      },
      k.field);
}

std::string get_value(const KeyDef& k, const platform_config& cfg, size_t core_type) {
  platform_config& c = const_cast<platform_config&>(cfg);  // the refs only read here
  return std::visit(
      [&](auto ref) -> std::string {
        const auto v = ref(c, core_type);
        using V = std::remove_cv_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>)
          return format_bool(v);
        else if constexpr (std::is_same_v<V, double>)
          return format_value(k.type, v);
        else if (k.type == ValueType::size)
          return format_size(v);
        else
          return std::to_string(v);
      },
      k.field);
}

std::string default_value(const KeyDef& k) {
  static const platform_config defaults;
  return get_value(k, defaults);
}

namespace {

// The checks of one core type; `p` prefixes its keys ("core." or
// "core_types.NAME.").
void cross_check_core(const platform_config& cfg, const core_config& c, const std::string& p,
                      std::vector<CrossError>& errs) {
  if (c.psum.bank_bytes > c.psum.partition_bytes)
    errs.push_back({p + "psum.bank_size", format_size(c.psum.bank_bytes) + " is larger than " + p +
                                              "psum.partition_size (" +
                                              format_size(c.psum.partition_bytes) + ")"});
  else if (c.psum.partition_bytes % c.psum.bank_bytes != 0)
    errs.push_back({p + "psum.bank_size", format_size(c.psum.bank_bytes) + " does not divide " + p +
                                              "psum.partition_size (" +
                                              format_size(c.psum.partition_bytes) + ")"});
  if (c.psum.partitions != c.sbuf.partitions)
    errs.push_back({p + "psum.partitions", std::to_string(c.psum.partitions) + " must equal " + p +
                                               "sbuf.partitions (" +
                                               std::to_string(c.sbuf.partitions) +
                                               "): engines use one partition range for both"});
  if (c.tensor.rows > c.sbuf.partitions)
    errs.push_back({p + "tensor.rows", std::to_string(c.tensor.rows) + " exceeds " + p +
                                           "sbuf.partitions (" + std::to_string(c.sbuf.partitions) +
                                           "): K lies on the SBUF partition axis"});
  if (c.tensor.cols > c.psum.partitions)
    errs.push_back({p + "tensor.cols", std::to_string(c.tensor.cols) + " exceeds " + p +
                                           "psum.partitions (" + std::to_string(c.psum.partitions) +
                                           "): M becomes the PSUM partition axis"});
  const uint32_t side = std::min(c.tensor.rows, c.tensor.cols);
  if (c.tensor.tile_size > side || side % c.tensor.tile_size != 0)
    errs.push_back({p + "tensor.tile_size", std::to_string(c.tensor.tile_size) +
                                                " must divide min(" + p + "tensor.rows, " + p +
                                                "tensor.cols) = " + std::to_string(side) +
                                                " (tiles split the array evenly)"});
  // The RTL PE array has no shadow weight buffer, no throttle and no tiling: the
  // cost model's versions of those would not describe the block's cycles.
  if (c.tensor_impl == TensorImpl::rtl) {
    const std::string why = " with " + p + "tensor.impl: rtl (the RTL PE array has no ";
    if (c.tensor.background_load)
      errs.push_back({p + "tensor.background_load",
                      std::string("must be false") + why + "background weight load)"});
    if (c.tensor.throttle)
      errs.push_back({p + "tensor.throttle", std::string("must be false") + why + "throttle)"});
    if (c.tensor.tile_size < side)
      errs.push_back({p + "tensor.tile_size", "must be min(" + p + "tensor.rows, " + p +
                                                  "tensor.cols) = " + std::to_string(side) + why +
                                                  "array tiling)"});
  }
  if (uint64_t{cfg.cores} * c.dma.engines > kMaxChipDmaEngines)
    errs.push_back({p + "dma.engines",
                    std::to_string(c.dma.engines) + " x chip.cores (" + std::to_string(cfg.cores) +
                        ") = " + std::to_string(uint64_t{cfg.cores} * c.dma.engines) +
                        " DMA engines on the chip; the model holds at most " +
                        std::to_string(kMaxChipDmaEngines)});
  if (uint64_t{c.tensor.max_moving_free} * 4 > c.psum.bank_bytes)
    errs.push_back({p + "tensor.max_moving_free",
                    std::to_string(c.tensor.max_moving_free) + " fp32 results (" +
                        format_size(uint64_t{c.tensor.max_moving_free} * 4) +
                        ") do not fit one PSUM bank (" + p +
                        "psum.bank_size = " + format_size(c.psum.bank_bytes) + ")"});
}

}  // namespace

namespace {

// The network's shape: the torus holds exactly the node's chips, and each chip has
// the links its neighbours need (2 per dimension longer than one chip).
void cross_check_network(const models::network_params& n, std::vector<CrossError>& errs) {
  if (uint64_t{n.torus_x} * n.torus_y != n.chips) {
    errs.push_back({"network.torus_x", "torus_x x torus_y = " + std::to_string(n.torus_x) + " x " +
                                           std::to_string(n.torus_y) + " = " +
                                           std::to_string(uint64_t{n.torus_x} * n.torus_y) +
                                           " must equal network.chips (" + std::to_string(n.chips) +
                                           ")"});
    return;
  }
  const uint32_t links = 2 * ((n.torus_x > 1 ? 1 : 0) + (n.torus_y > 1 ? 1 : 0));
  if (n.links_per_chip != links)
    errs.push_back({"network.links_per_chip",
                    std::to_string(n.links_per_chip) + " does not fit a " +
                        std::to_string(n.torus_x) + " x " + std::to_string(n.torus_y) +
                        " torus: each chip needs " + std::to_string(links) +
                        " (2 per dimension longer than one chip)"});
}

}  // namespace

std::vector<CrossError> cross_check(const platform_config& cfg) {
  std::vector<CrossError> errs;
  cross_check_network(cfg.network, errs);
  for (size_t t = 0; t < cfg.core_types(); ++t)
    cross_check_core(
        cfg, cfg.core_type(t),
        t == 0 ? "core." : std::string(kCoreTypesSection) + "." + cfg.core_type_name(t) + ".",
        errs);
  return errs;
}

}  // namespace trnsim::platform::schema
