#include "platform/config_schema.h"

#include "models/isa/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace trnsim::platform::schema {
namespace {

// A partition of SBUF or PSUM: at most 4 MiB (512 MiB per core; the real ones are
// 192 KiB and 16 KiB).
constexpr double kMaxPartitionBytes = 4 << 20;
// DMA engines per chip: every one binds to the HBM, and elaborating more takes
// seconds to minutes.
constexpr uint64_t kMaxChipDmaEngines = 16384;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

Check at_least(double n) {
  return Check{.min = n};
}
Check any() {
  return Check{};
}
// The ranges below keep every value the models turn into simulated time (a clock
// period, a per-byte time, a fixed cost) representable, and every structure the
// models allocate within what a host holds (`trnsim info --keys` lists them).
// Clocks: a period of at most 1 ms and at least the 1 ps time resolution.
Check clock() {
  return Check{.min = 1e3, .max = 1e12};
}
// Bandwidths: at most 1 ms per byte.
Check bandwidth() {
  return Check{.min = 1e3};
}
// Fixed costs and latencies.
Check duration() {
  return Check{.max = 1};
}
// Cycle counts of a static cost: with clock(), at most 1000 s each.
Check cycles(double min = 0) {
  return Check{.min = min, .max = 1e6};
}
// Slowdowns and speedups (x).
Check factor() {
  return Check{.min = 1, .max = 1024};
}
Check range(double lo, double hi, uint64_t multiple_of = 0) {
  return Check{.min = lo, .max = hi, .multiple_of = multiple_of};
}
// A non-empty partition range that respects the 32-partition quadrants of the
// partition-start rule.
Check partitions() {
  return range(32, 128, 32);
}

#define REF(T, path) static_cast<FieldRef<T>>([](platform_config& c) -> T& { return c.path; })

template <auto Eng, auto Member>
auto& engine_field(platform_config& c) {
  return (c.core.*Eng).*Member;
}

// The four keys every compute engine (and the sync sequencer) has.
template <auto Eng>
void add_engine(std::vector<KeyDef>& v, const std::string& name, const std::string& what) {
  using models::engine_params;
  const std::string p = "core." + name + ".";
  v.push_back({p + "clock", ValueType::frequency, "Hz", what + " clock", clock(),
               &engine_field<Eng, &engine_params::clock_hz>});
  v.push_back({p + "min_ii", ValueType::cycles, "cycles",
               what + " minimum initiation interval: cycles between instruction starts", cycles(1),
               &engine_field<Eng, &engine_params::min_ii_cycles>});
  v.push_back({p + "overhead", ValueType::cycles, "cycles",
               what + " static per-instruction overhead", cycles(),
               &engine_field<Eng, &engine_params::overhead_cycles>});
  v.push_back({p + "sem_latency", ValueType::cycles, "cycles",
               what + " latency from a satisfied semaphore wait to issue", cycles(),
               &engine_field<Eng, &engine_params::sem_latency_cycles>});
}

std::vector<KeyDef> build() {
  using T = ValueType;
  std::vector<KeyDef> v;
  v.push_back({"chip.cores", T::count, "cores", "NeuronCores per chip", range(1, 1024),
               REF(uint32_t, cores)});

  v.push_back({"host.link_bandwidth", T::bandwidth, "B/s",
               "host <-> device link bandwidth per direction (host-fallback transfers)",
               bandwidth(), REF(double, host.link_bandwidth_bps)});
  v.push_back({"host.link_latency", T::time, "s", "host <-> device latency per transfer",
               duration(), REF(double, host.link_latency_s)});

  // Storage is paged on first write: any size up to the ISA's limit costs only what
  // programs touch.
  v.push_back({"hbm.size", T::size, "B", "HBM capacity of the chip",
               Check{.min = 0, .min_exclusive = true, .max = double(isa::kMaxHbmBytes)},
               REF(uint64_t, hbm.size_bytes)});
  v.push_back({"hbm.bandwidth", T::bandwidth, "B/s",
               "peak HBM bandwidth of the chip, shared by all DMA engines", bandwidth(),
               REF(double, hbm.bandwidth_bps)});
  v.push_back(
      {"hbm.latency", T::time, "s", "HBM access latency", duration(), REF(double, hbm.latency_s)});
  v.push_back(
      {"hbm.stacks", T::count, "stacks", "HBM stacks", range(1, 128), REF(uint32_t, hbm.stacks)});
  v.push_back({"hbm.channels_per_stack", T::count, "channels",
               "independent channels per stack; each serves bandwidth / (stacks x channels)",
               range(1, 1024), REF(uint32_t, hbm.channels_per_stack)});
  v.push_back({"hbm.interleave", T::size, "B",
               "address interleaving granule: consecutive granules go to different channels",
               Check{.min = 1, .max = double(1 << 30), .power_of_two = true},
               REF(uint64_t, hbm.interleave_bytes)});

  // Semaphore ids are 16 bits in the ISA.
  v.push_back({"core.semaphores", T::count, "semaphores", "semaphores per core", range(1, 65536),
               REF(uint32_t, core.semaphores)});

  add_engine<&core_config::tensor>(v, "tensor", "Tensor Engine");
  v.push_back({"core.tensor.rows", T::count, "PEs",
               "PE array rows, along the contraction K (a matmul with K > rows folds into passes)",
               range(1, 128), REF(uint32_t, core.tensor.rows)});
  v.push_back({"core.tensor.cols", T::count, "PEs",
               "PE array columns, along the stationary free size M (M > cols folds into passes)",
               range(1, 128), REF(uint32_t, core.tensor.cols)});
  v.push_back({"core.tensor.fp32_slowdown", T::count, "x",
               "passes an fp32 matmul takes relative to bf16", factor(),
               REF(uint32_t, core.tensor.fp32_slowdown)});
  v.push_back({"core.tensor.fp8_double_row", T::boolean, "",
               "fp8 matmul contracts 2*rows per pass at bf16 time (NC-v3+)", any(),
               REF(bool, core.tensor.fp8_double_row)});
  v.push_back({"core.tensor.max_moving_free", T::count, "elements",
               "largest moving free size N of one matmul (fp32 results fit one PSUM bank)",
               at_least(1), REF(uint32_t, core.tensor.max_moving_free)});
  v.push_back({"core.tensor.background_load", T::boolean, "",
               "load the next stationary tile during the previous multiply and overlap "
               "fill/drain of consecutive multiplies (off: each pass loads R cycles, streams "
               "and drains alone)",
               any(), REF(bool, core.tensor.background_load)});
  v.push_back({"core.tensor.fast_load_speedup", T::count, "x",
               "background stationary load vs a multiply of the same free size: a tile of M "
               "columns loads in ceil(M / this) cycles",
               factor(), REF(uint32_t, core.tensor.fast_load_speedup)});
  v.push_back({"core.tensor.tile_size", T::count, "PEs",
               "array tiling: matmuls with K and M <= this run concurrently in min(rows, cols) "
               "/ this tiles (= rows: no tiling; 64: 2x64; 32: 4x32)",
               range(1, 128), REF(uint32_t, core.tensor.tile_size)});
  v.push_back({"core.tensor.throttle", T::boolean, "",
               "throughput throttling: ramp from throttle_start to full after idle", any(),
               REF(bool, core.tensor.throttle)});
  v.push_back({"core.tensor.throttle_start", T::ratio, "fraction",
               "streaming throughput when the throttle ramp starts (fraction of peak)",
               Check{.min = 0, .min_exclusive = true, .max = 1},
               REF(double, core.tensor.throttle_start)});
  v.push_back({"core.tensor.throttle_ramp", T::time, "s",
               "time the throttle ramps from throttle_start to full throughput", duration(),
               REF(double, core.tensor.throttle_ramp_s)});
  v.push_back({"core.tensor.throttle_idle", T::time, "s",
               "window of utilisation below throttle_reengage after which the ramp restarts",
               Check{.min = 0, .min_exclusive = true, .max = 1},
               REF(double, core.tensor.throttle_idle_s)});
  v.push_back({"core.tensor.throttle_reengage", T::ratio, "fraction",
               "array utilisation below which a throttle_idle window re-engages the throttle",
               range(0, 1), REF(double, core.tensor.throttle_reengage)});

  add_engine<&core_config::vector>(v, "vector", "Vector Engine");
  v.push_back({"core.vector.reciprocal_slowdown", T::count, "x",
               "Vector reciprocal cost per element relative to 1 element/cycle", factor(),
               REF(uint32_t, core.vector.reciprocal_slowdown)});
  v.push_back({"core.vector.perf_modes", T::boolean, "",
               "bf16 2x/4x performance modes for copies, tensor_scalar and tensor_tensor", any(),
               REF(bool, core.vector.perf_modes)});

  add_engine<&core_config::scalar>(v, "scalar", "Scalar Engine");
  v.push_back({"core.scalar.func_switch_cost", T::cycles, "cycles",
               "cost of switching the activation function (loading another table)", cycles(),
               REF(uint32_t, core.scalar.func_switch_cycles)});

  add_engine<&core_config::gpsimd>(v, "gpsimd", "GpSimd Engine");
  v.push_back({"core.gpsimd.start_cost", T::cycles, "cycles",
               "fixed start cost of iota and affine_select", cycles(),
               REF(uint32_t, core.gpsimd.start_cycles)});

  add_engine<&core_config::sync>(v, "sync", "Sync engine (DMA-triggering sequencer)");

  v.push_back({"core.sbuf.partitions", T::count, "partitions", "SBUF partitions", partitions(),
               REF(uint32_t, core.sbuf.partitions)});
  // Partition sizes: a core's memories are allocated when a program first uses it.
  v.push_back({"core.sbuf.partition_size", T::size, "B", "SBUF bytes per partition",
               Check{.min = 0, .min_exclusive = true, .max = kMaxPartitionBytes, .multiple_of = 4},
               REF(uint64_t, core.sbuf.partition_bytes)});
  v.push_back({"core.sbuf.clock", T::frequency, "Hz", "SBUF port clock", clock(),
               REF(double, core.sbuf.clock_hz)});
  v.push_back({"core.sbuf.port_width", T::count, "elements/cycle",
               "elements per cycle per SBUF read or write port", at_least(1),
               REF(uint32_t, core.sbuf.port_elems_per_cycle)});
  v.push_back({"core.sbuf.vector_gpsimd_shared_port", T::boolean, "",
               "vector and GpSimd engines share one SBUF port (NC-v2)", any(),
               REF(bool, core.sbuf.vector_gpsimd_shared_port)});

  v.push_back({"core.psum.partitions", T::count, "partitions", "PSUM partitions", partitions(),
               REF(uint32_t, core.psum.partitions)});
  v.push_back({"core.psum.partition_size", T::size, "B", "PSUM bytes per partition",
               Check{.min = 0, .min_exclusive = true, .max = kMaxPartitionBytes, .multiple_of = 4},
               REF(uint64_t, core.psum.partition_bytes)});
  // Power of two so that a bank index is an address bit field.
  v.push_back({"core.psum.bank_size", T::size, "B", "PSUM bank bytes per partition",
               Check{.min = 4, .power_of_two = true}, REF(uint64_t, core.psum.bank_bytes)});
  v.push_back({"core.psum.clock", T::frequency, "Hz", "PSUM port clock", clock(),
               REF(double, core.psum.clock_hz)});
  v.push_back({"core.psum.port_width", T::count, "elements/cycle",
               "elements per cycle per PSUM port", at_least(1),
               REF(uint32_t, core.psum.port_elems_per_cycle)});
  v.push_back({"core.psum.vector_scalar_shared_port", T::boolean, "",
               "vector and scalar engines share one PSUM port", any(),
               REF(bool, core.psum.vector_scalar_shared_port)});
  v.push_back({"core.psum.shared_port_per_bank", T::boolean, "",
               "the vector/scalar PSUM port sharing applies only within one bank (NC-v3)", any(),
               REF(bool, core.psum.shared_port_per_bank)});

  // DMA engine and queue numbers are 16 bits in the ISA. Queues cost only when a
  // program uses them; engines are modules (cross_check bounds them per chip too).
  v.push_back({"core.dma.engines", T::count, "engines", "DMA engines per core", range(1, 1024),
               REF(uint32_t, core.dma.engines)});
  v.push_back({"core.dma.queues_per_engine", T::count, "queues",
               "queues per DMA engine (served round-robin)", range(1, 65536),
               REF(uint32_t, core.dma.queues_per_engine)});
  v.push_back({"core.dma.bandwidth", T::bandwidth, "B/s", "bandwidth cap of one DMA engine",
               bandwidth(), REF(double, core.dma.bandwidth_bps)});
  v.push_back({"core.dma.fixed_cost", T::time, "s",
               "fixed cost per transfer, from semaphore to data movement", duration(),
               REF(double, core.dma.fixed_cost_s)});
  v.push_back({"core.dma.descriptor_cost", T::time, "s",
               "cost per contiguous chunk (descriptor) of a transfer", duration(),
               REF(double, core.dma.descriptor_cost_s)});
  return v;
}

#undef REF

bool is_pow2(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

bool Check::passes(double v) const {
  if (min_exclusive ? !(v > min) : !(v >= min)) return false;
  if (v > max) return false;
  if (multiple_of != 0 && std::fmod(v, static_cast<double>(multiple_of)) != 0) return false;
  if (power_of_two && (v != std::floor(v) || !is_pow2(static_cast<uint64_t>(v)))) return false;
  return true;
}

std::string Check::text(ValueType t) const {
  // Bounds in the key's unit ("1kHz..1THz", "0..1s"); counts as plain numbers.
  const auto fmt = [t](double v) -> std::string {
    if (v == 0) return "0";
    switch (t) {
      case ValueType::frequency:
        return format_frequency(v);
      case ValueType::bandwidth:
        return format_bandwidth(v);
      case ValueType::time:
        return format_time(v);
      case ValueType::size:
        return format_size(static_cast<uint64_t>(v));
      default:
        return num(v);
    }
  };
  std::string s;
  const auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (min_exclusive)
    add("> " + fmt(min));
  else if (std::isfinite(max))
    add(fmt(min) + ".." + fmt(max));
  else if (min > 0)
    add(">= " + fmt(min));
  if (min_exclusive && std::isfinite(max)) add("<= " + fmt(max));
  if (multiple_of != 0) add("multiple of " + num(static_cast<double>(multiple_of)));
  if (power_of_two) add("power of two");
  return s.empty() ? ">= 0" : s;
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
       [](const platform_config& c) { return static_cast<uint32_t>(c.core.tensor_impl); },
       [](platform_config& c, uint32_t v) { c.core.tensor_impl = static_cast<TensorImpl>(v); }},
      {"core.tensor.numerics",
       {"fast", "systolic"},
       "matmul arithmetic of the C++ model: fast (an fp32 sgemm of the inputs) or systolic "
       "(the PE array's: bf16 products summed in fp32 down each column from +0, row 0 first, "
       "one fold of rows at a time, folds added in order, denormals flushed, NaN canonical; "
       "bit-exact with impl: rtl; bf16 inputs only)",
       [](const platform_config& c) { return static_cast<uint32_t>(c.core.tensor_numerics); },
       [](platform_config& c, uint32_t v) {
         c.core.tensor_numerics = static_cast<TensorNumerics>(v);
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

void set_value(const KeyDef& k, std::string_view text, platform_config& cfg) {
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
    if (!ok) throw std::range_error("must be " + k.check.text(k.type));
  }
  std::visit(
      [&](auto ref) {
        using V = std::remove_reference_t<decltype(ref(cfg))>;
        if constexpr (std::is_same_v<V, double>) {
          ref(cfg) = d;
        } else if constexpr (std::is_same_v<V, bool>) {
          ref(cfg) = b;
        } else {
          if (u > std::numeric_limits<V>::max())
            throw std::range_error("too large (at most " +
                                   std::to_string(std::numeric_limits<V>::max()) + ")");
          ref(cfg) = static_cast<V>(u);
        }
      },
      k.field);
}

std::string get_value(const KeyDef& k, const platform_config& cfg) {
  platform_config c = cfg;  // the field refs take a mutable config
  return std::visit(
      [&](auto ref) -> std::string {
        const auto v = ref(c);
        using V = std::remove_cv_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) {
          return format_bool(v);
        } else if constexpr (std::is_same_v<V, double>) {
          switch (k.type) {
            case ValueType::frequency:
              return format_frequency(v);
            case ValueType::bandwidth:
              return format_bandwidth(v);
            case ValueType::time:
              return format_time(v);
            case ValueType::ratio:
              return format_ratio(v);
            default:
              return num(v);
          }
        } else {
          if (k.type == ValueType::size) return format_size(v);
          return std::to_string(v);
        }
      },
      k.field);
}

std::vector<CrossError> cross_check(const platform_config& cfg) {
  std::vector<CrossError> errs;
  const core_config& c = cfg.core;
  if (c.psum.bank_bytes > c.psum.partition_bytes)
    errs.push_back({"core.psum.bank_size", format_size(c.psum.bank_bytes) +
                                               " is larger than core.psum.partition_size (" +
                                               format_size(c.psum.partition_bytes) + ")"});
  else if (c.psum.partition_bytes % c.psum.bank_bytes != 0)
    errs.push_back({"core.psum.bank_size", format_size(c.psum.bank_bytes) +
                                               " does not divide core.psum.partition_size (" +
                                               format_size(c.psum.partition_bytes) + ")"});
  if (c.psum.partitions != c.sbuf.partitions)
    errs.push_back({"core.psum.partitions", std::to_string(c.psum.partitions) +
                                                " must equal core.sbuf.partitions (" +
                                                std::to_string(c.sbuf.partitions) +
                                                "): engines use one partition range for both"});
  if (c.tensor.rows > c.sbuf.partitions)
    errs.push_back({"core.tensor.rows", std::to_string(c.tensor.rows) +
                                            " exceeds core.sbuf.partitions (" +
                                            std::to_string(c.sbuf.partitions) +
                                            "): K lies on the SBUF partition axis"});
  if (c.tensor.cols > c.psum.partitions)
    errs.push_back({"core.tensor.cols", std::to_string(c.tensor.cols) +
                                            " exceeds core.psum.partitions (" +
                                            std::to_string(c.psum.partitions) +
                                            "): M becomes the PSUM partition axis"});
  const uint32_t side = std::min(c.tensor.rows, c.tensor.cols);
  if (c.tensor.tile_size > side || side % c.tensor.tile_size != 0)
    errs.push_back({"core.tensor.tile_size", std::to_string(c.tensor.tile_size) +
                                                 " must divide min(core.tensor.rows, " +
                                                 "core.tensor.cols) = " + std::to_string(side) +
                                                 " (tiles split the array evenly)"});
  // The RTL PE array has no shadow weight buffer, no throttle and no tiling: the
  // cost model's versions of those would not describe the block's cycles.
  if (c.tensor_impl == TensorImpl::rtl) {
    const char* why = " with core.tensor.impl: rtl (the RTL PE array has no ";
    if (c.tensor.background_load)
      errs.push_back({"core.tensor.background_load",
                      std::string("must be false") + why + "background weight load)"});
    if (c.tensor.throttle)
      errs.push_back({"core.tensor.throttle", std::string("must be false") + why + "throttle)"});
    if (c.tensor.tile_size < side)
      errs.push_back({"core.tensor.tile_size",
                      "must be min(core.tensor.rows, core.tensor.cols) = " + std::to_string(side) +
                          why + "array tiling)"});
  }
  if (uint64_t{cfg.cores} * c.dma.engines > kMaxChipDmaEngines)
    errs.push_back({"core.dma.engines",
                    std::to_string(c.dma.engines) + " x chip.cores (" + std::to_string(cfg.cores) +
                        ") = " + std::to_string(uint64_t{cfg.cores} * c.dma.engines) +
                        " DMA engines on the chip; the model holds at most " +
                        std::to_string(kMaxChipDmaEngines)});
  if (uint64_t{c.tensor.max_moving_free} * 4 > c.psum.bank_bytes)
    errs.push_back({"core.tensor.max_moving_free",
                    std::to_string(c.tensor.max_moving_free) + " fp32 results (" +
                        format_size(uint64_t{c.tensor.max_moving_free} * 4) +
                        ") do not fit one PSUM bank (core.psum.bank_size = " +
                        format_size(c.psum.bank_bytes) + ")"});
  return errs;
}

}  // namespace trnsim::platform::schema
