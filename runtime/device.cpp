#include "runtime/device.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include "models/common/access_checker.h"
#include "models/common/scheduler.h"
#include "models/common/sim_context.h"
#include "models/common/trace.h"
#include "models/common/worker_pool.h"
#include "models/isa/validate.h"
#include "models/network/collective_unit.h"
#include "platform/chip.h"
#include "runtime/comm_profile.h"
#include "runtime/constants.h"
#include "runtime/host_memory.h"
#include "runtime/report.h"

namespace trnsim::runtime {

namespace {
bool g_device_created = false;
constexpr uint64_t kProgramAlign = 4096;
const isa::Engine kCompute[] = {isa::Engine::tensor, isa::Engine::vector, isa::Engine::scalar,
                                isa::Engine::gpsimd, isa::Engine::sync};

double pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

// Whether the run attributes time to the compiler's op kinds (one launch with them).
bool attributes(const std::vector<Launch>& launches) {
  return launches.size() == 1 && launches[0].roofline && !launches[0].roofline->instr_kind.empty();
}

void write_text_file(const std::string& path, const std::function<void(std::ostream&)>& body) {
  try {
    write_file(path, body);
  } catch (const std::runtime_error& e) {
    throw RunError(e.what());
  }
}
}  // namespace

void check_host_memory(const isa::Program& p, bool poison) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: let the run try
  const uint64_t host = uint64_t(pages) * uint64_t(page);
  uint64_t total = 0;
  const isa::TensorDecl* largest = nullptr;
  for (const auto& d : p.tensors) {
    if (d.role == isa::TensorRole::scratch && !poison) continue;
    const uint64_t b = d.bytes();
    total = b > (UINT64_MAX - total) / 2 ? UINT64_MAX : total + 2 * b;
    if (!largest || b > largest->bytes()) largest = &d;
  }
  if (total <= host) return;
  std::string shape = "[";
  for (size_t i = 0; i < largest->shape.size(); ++i)
    shape += (i ? "," : "") + std::to_string(largest->shape[i]);
  throw RunError(
      "program '" + p.name + "': a run with data holds its tensors in host memory: " + "about " +
      std::to_string(total) + " bytes, more than this host's " + std::to_string(host) +
      "; the largest is " + std::string(isa::tensor_role_name(largest->role)) + " '" +
      largest->name + "' " + shape + "] " + std::string(isa::dtype_name(largest->dtype)) + " (" +
      std::to_string(largest->bytes()) +
      " bytes). --no-functional simulates the timing without data");
}

DeviceOptions::DeviceOptions(bool timing_and_data) : functional(timing_and_data) {
  if (const char* e = std::getenv("TRNSIM_CHECK")) {
    const std::string s = e;
    check_races = s.find("races") != std::string::npos;
    poison = s.find("poison") != std::string::npos;
    fail_on_findings = check_races || poison;
  }
  if (const char* e = std::getenv("TRNSIM_SCHEDULER")) {
    const std::string s = e;
    if (s != "systemc" && s != "chip" && !s.empty())
      throw RunError("TRNSIM_SCHEDULER=" + s + ": expected 'chip' (the default) or 'systemc'");
    systemc_threads = s == "systemc";
  }
  if (const char* e = std::getenv("TRNSIM_THREADS")) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(e, &end, 10);
    if (!*e || *end || n > 1024)
      throw RunError(std::string("TRNSIM_THREADS=") + e + ": expected a thread count 0..1024");
    threads = unsigned(n);
  }
}

struct Device::Impl {
  platform::platform_config cfg;
  DeviceOptions opts;
  models::sim_context ctx;
  std::unique_ptr<models::scheduler> sched;
  std::unique_ptr<models::access_checker> checker;
  // The launch's chips (chip.cores each; one unless an SPMD run spans several),
  // and every chip's cores in order: core i is core i % chip_cores of chip i /
  // chip_cores, whose HBM holds its programs.
  std::vector<std::unique_ptr<platform::chip>> chips;
  std::vector<platform::neuron_core*> cores;
  uint32_t chip_cores = 0;
  std::unique_ptr<models::worker_pool> pool;  // functional matmuls (threads > 1)
  stats::group root{"trnsim"};
  std::unique_ptr<trace::recorder> trace;  // the last run's, when tracing
  std::vector<std::unique_ptr<isa::Program>> loaded;
  struct Image {
    uint64_t base = 0;
    bool written = false;  // constants in place
  };
  std::map<std::pair<const isa::Program*, uint32_t>, Image> resident;
  std::vector<uint64_t> resident_top;  // per chip: its HBM below is held by resident images
  std::vector<Launch> pending;
  std::unique_ptr<models::network::collective_unit> coll;  // the last SPMD run's
  // network.model: tlm: the links every SPMD run's collectives cross (built before
  // elaboration ends: every core of every chip of every node is a rank).
  std::unique_ptr<models::network::tlm_network> tlm_net;
  std::unique_ptr<models::network::chip_collectives> tlm_engines;  // one per chip, on tlm_net

  void build_stats(const RunReport& rep, const std::vector<uint32_t>& used,
                   const std::array<uint64_t, isa::kNumDTypes>& flops);

  uint32_t chip_index(uint32_t core) const { return core / chip_cores; }
  models::hbm& hbm_of(uint32_t core) const { return chips[chip_index(core)]->hbm; }
  // Where core `core` sits, for messages: "core 9 (chip 1, core 1)", or "core 9".
  std::string where(uint32_t core) const;
  uint64_t hbm_read_bytes() const;  // summed over the chips
  uint64_t hbm_write_bytes() const;

  // The phases of Device::run, in order.
  bool is_loaded(const isa::Program* p) const;
  void place(const std::vector<Launch>& launches, std::vector<uint64_t>& bases,
             std::vector<bool>& fresh);
  uint64_t upload(const std::vector<Launch>& launches, const std::vector<uint64_t>& bases,
                  const std::vector<bool>& fresh);
  void load_queues(const std::vector<Launch>& launches, const std::vector<uint64_t>& bases);
  void plan_page_release(const std::vector<Launch>& launches, const std::vector<uint64_t>& bases);
  double simulate(const std::vector<Launch>& launches);
  void check_finished(const std::vector<Launch>& launches) const;
  void bind_ranks(const std::vector<Launch>& launches, const std::vector<uint64_t>& bases);
  void collect_launch(const Launch& l, uint64_t base, const sc_core::sc_time& t0, RunReport& rep,
                      std::array<uint64_t, isa::kNumDTypes>& flops);
  void collect_dma_queues(const Launch& l, RunReport& rep) const;
  void add_totals(RunReport& rep, const std::array<uint64_t, isa::kNumDTypes>& flops) const;
};

Device::Device(const platform::platform_config& cfg, DeviceOptions opts)
    : impl_(std::make_unique<Impl>()) {
  if (g_device_created)
    throw RunError("only one Device per process: SystemC elaborates a platform once");
  g_device_created = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  impl_->cfg = cfg;
  impl_->opts = std::move(opts);
  impl_->ctx.functional = impl_->opts.functional;
  if (impl_->opts.check_races || impl_->opts.poison) {
    impl_->checker = std::make_unique<models::access_checker>(
        models::access_checker_options{impl_->opts.check_races, impl_->opts.poison});
    impl_->ctx.checker = impl_->checker.get();
  }
  // One chip of chip_cores cores per chip the configuration's cores fill.
  const uint32_t cpc = impl_->opts.chip_cores && impl_->opts.chip_cores < cfg.cores
                           ? impl_->opts.chip_cores
                           : cfg.cores;
  if (cfg.cores % cpc != 0)
    throw RunError(std::to_string(cfg.cores) + " cores do not fill chips of " +
                   std::to_string(cpc) + " cores (DeviceOptions::chip_cores)");
  impl_->chip_cores = cpc;
  const uint32_t nchips = cfg.cores / cpc;
  for (uint32_t k = 0; k < nchips; ++k) {
    // One chip keeps the name "chip" (traces and stats paths); several are chip0..
    const std::string name = nchips == 1 ? "chip" : "chip" + std::to_string(k);
    impl_->chips.push_back(
        std::make_unique<platform::chip>(name.c_str(), cfg, impl_->ctx, k * cpc, cpc));
    for (auto& c : impl_->chips.back()->cores) {
      impl_->cores.push_back(c.get());
      // The access checker tells the chips' HBMs apart (each has its own addresses);
      // its agents name their core as their parent sc_object.
      if (impl_->checker && nchips > 1)
        impl_->checker->set_hbm(static_cast<const sc_core::sc_object*>(c.get()),
                                &impl_->chips.back()->hbm);
    }
  }
  impl_->resident_top.assign(nchips, 0);
  if (impl_->opts.functional) {
    const unsigned n =
        impl_->opts.threads ? impl_->opts.threads : models::worker_pool::default_threads();
    if (n > 1) {
      impl_->pool = std::make_unique<models::worker_pool>(n - 1);
      // A few matmuls per worker in flight: enough to keep them busy while the
      // sequencers run ahead, few enough that their operands stay small.
      for (auto* c : impl_->cores)
        c->tensor.compute_on(impl_->pool.get(), &c->psum, 4 * size_t(n - 1));
    }
  }
  // The chip's own scheduler runs the sequencers unless a module needs SystemC
  // time to advance (a timed RTL block) or the options ask for SystemC threads.
  bool timed_rtl = false;
  for (const auto* c : impl_->cores) timed_rtl |= c->tensor_rtl && c->tensor_rtl->timed();
  if (!timed_rtl && !impl_->opts.systemc_threads) {
    impl_->sched = std::make_unique<models::scheduler>();
    impl_->ctx.sched = impl_->sched.get();
    models::scheduler::install(impl_->sched.get());
  }
  if (cfg.network.model == models::NetworkModel::tlm) {
    models::network::topology_params tp;
    tp.net = cfg.network;
    tp.cores_per_chip = impl_->opts.chip_cores ? impl_->opts.chip_cores : cfg.cores;
    tp.dma_bps = models::network::collective_dma_rate(cfg.network, cfg.core.dma.engines,
                                                      cfg.core.dma.bandwidth_bps,
                                                      cfg.core.dma.core_bandwidth_bps);
    tp.per_chip = tp.cores_per_chip;
    const uint64_t ranks = uint64_t{tp.cores_per_chip} * cfg.network.chips * cfg.network.nodes;
    if (ranks > 65536)
      throw RunError(
          "network.model: tlm builds a link block per core of every chip of every "
          "node: " +
          std::to_string(ranks) + " cores exceed 65536 (lower network.nodes)");
    tp.ranks = static_cast<uint32_t>(ranks);
    impl_->tlm_net = std::make_unique<models::network::tlm_network>("network", tp);
    impl_->tlm_engines =
        std::make_unique<models::network::chip_collectives>(*impl_->tlm_net, impl_->sched.get());
  }
  // Finish elaboration and let every sequencer reach its wait for a launch.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

Device::~Device() {
  if (impl_->sched) models::scheduler::install(nullptr);
}

const platform::platform_config& Device::config() const {
  return impl_->cfg;
}

// Checks the given inputs against the tensor table; when `functional`, writes the
// constants (unless resident already) and inputs into HBM (timing-only runs need no
// data). Returns the bytes written.
static uint64_t bind_inputs(const isa::Program& p, const Launch& l, models::hbm& hbm, uint64_t base,
                            bool functional, bool constants) {
  for (const auto& [name, t] : l.inputs) {
    const isa::TensorDecl* d = p.find_tensor(name);
    if (!d) throw RunError("input '" + name + "': program '" + p.name + "' has no such tensor");
    if (d->role != isa::TensorRole::input)
      throw RunError("input '" + name + "': tensor is declared " +
                     std::string(isa::tensor_role_name(d->role)) + ", not input");
    if (t.shape != d->shape)
      throw RunError("input '" + name + "': shape " + shape_string(t.shape) +
                     " but the program expects " + shape_string(d->shape));
  }
  if (!functional) return 0;
  uint64_t bytes = 0;
  std::optional<HbmAccesses> accessed;  // a constant no instruction reads stays unwritten
  for (const auto& d : p.tensors) {
    auto c = p.constants.find(d.name);
    if (c != p.constants.end() && constants) {
      if (!accessed) accessed.emplace(p);
      if (constant_is_read(*accessed, d)) {
        hbm.write(base + d.hbm_offset, c->second.data(), c->second.size());
        bytes += c->second.size();
      }
    }
    if (d.role != isa::TensorRole::input) continue;
    auto it = l.inputs.find(d.name);
    if (it == l.inputs.end())
      throw RunError("missing input '" + d.name + "' " + shape_string(d.shape) + " " +
                     std::string(isa::dtype_name(d.dtype)));
    HostTensor t = it->second.dtype == d.dtype ? it->second : it->second.cast(d.dtype);
    hbm.write(base + d.hbm_offset, t.data.data(), t.data.size());
    bytes += t.data.size();
  }
  return bytes;
}

const isa::Program* Device::load(isa::Program p) {
  isa::Limits lim = impl_->cfg.limits();
  lim.hbm_bytes = p.hbm_bytes();
  try {
    isa::validate(p, lim);
  } catch (const isa::ValidationError& e) {
    throw RunError("program '" + p.name + "': " + e.what());
  }
  impl_->loaded.push_back(std::make_unique<isa::Program>(std::move(p)));
  return impl_->loaded.back().get();
}

void Device::submit(Launch l) {
  impl_->pending.push_back(std::move(l));
}

RunReport Device::wait() {
  std::vector<Launch> l;
  l.swap(impl_->pending);
  return run(l);
}

namespace {
uint64_t align_program(uint64_t b) {
  return (b + kProgramAlign - 1) / kProgramAlign * kProgramAlign;
}
}  // namespace

// Whether `p` was loaded with Device::load (and so keeps a resident image).
bool Device::Impl::is_loaded(const isa::Program* p) const {
  for (const auto& q : loaded)
    if (q.get() == p) return true;
  return false;
}

std::string Device::Impl::where(uint32_t core) const {
  if (chips.size() == 1) return "core " + std::to_string(core);
  return "core " + std::to_string(core) + " (chip " + std::to_string(chip_index(core)) + ", core " +
         std::to_string(core % chip_cores) + ")";
}

uint64_t Device::Impl::hbm_read_bytes() const {
  uint64_t b = 0;
  for (const auto& c : chips) b += c->hbm.read_bytes();
  return b;
}

uint64_t Device::Impl::hbm_write_bytes() const {
  uint64_t b = 0;
  for (const auto& c : chips) b += c->hbm.write_bytes();
  return b;
}

namespace {
// "rank 3 on core 3 (chip 1, core 1)" or "core 0": whose program did not fit.
std::string who(const Launch& l, const std::string& where) {
  return l.rank >= 0 ? "rank " + std::to_string(l.rank) + " on " + where : where;
}
}  // namespace

// Checks the launches (a program, an existing core, one launch per core), validates
// the programs not loaded, and places every program in its core's chip's HBM:
// loaded programs keep an image per core; the rest share the HBM above them.
// `fresh`: constants not written.
void Device::Impl::place(const std::vector<Launch>& launches, std::vector<uint64_t>& bases,
                         std::vector<bool>& fresh) {
  const uint64_t size = cfg.hbm.size_bytes;  // each chip's
  const auto too_big = [&](const Launch& l, const char* what, uint64_t need) {
    const std::string chip =
        chips.size() == 1 ? "the device" : "chip " + std::to_string(chip_index(l.core));
    return RunError(who(l, where(l.core)) + ": " + what + " need " + std::to_string(need) +
                    " bytes of HBM; " + chip + " has " + std::to_string(size));
  };
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    if (!l.program || !is_loaded(l.program) || l.core >= cores.size()) continue;
    uint64_t& top = resident_top[chip_index(l.core)];
    auto [it, added] = resident.try_emplace({l.program, l.core}, Impl::Image{top});
    if (added) {
      top += align_program(l.program->hbm_bytes());
      if (top > size) throw too_big(l, "loaded programs", top);
    }
    bases[i] = it->second.base;
    fresh[i] = !it->second.written;
  }
  std::set<uint32_t> used;
  std::vector<std::pair<const isa::Program*, isa::Limits>> validated;
  std::vector<uint64_t> next_base = resident_top;  // per chip
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    if (!l.program) throw RunError("launch without a program");
    if (l.core >= cores.size())
      throw RunError("core " + std::to_string(l.core) + " does not exist: the chip has " +
                     std::to_string(cores.size()) + " cores");
    if (!used.insert(l.core).second)
      throw RunError("two launches on core " + std::to_string(l.core) + " in one run");
    if (is_loaded(l.program)) continue;  // validated at load, placed above
    isa::Limits lim = cfg.core_of(l.core).limits(size);
    lim.hbm_bytes = l.program->hbm_bytes();
    // SPMD launches share one program: validate it once per core type.
    const bool seen = std::any_of(validated.begin(), validated.end(), [&](const auto& v) {
      return v.first == l.program && v.second == lim;
    });
    if (!seen) try {
        isa::validate(*l.program, lim);
        validated.emplace_back(l.program, lim);
      } catch (const isa::ValidationError& e) {
        throw RunError("program '" + l.program->name + "': " + e.what());
      }
    uint64_t& next = next_base[chip_index(l.core)];
    bases[i] = next;
    next += align_program(l.program->hbm_bytes());
    if (next > size) throw too_big(l, "programs", next);
  }
}

// Host memory checked, scratch poisoned (with --poison), constants and inputs
// written into HBM. Returns the bytes uploaded.
uint64_t Device::Impl::upload(const std::vector<Launch>& launches,
                              const std::vector<uint64_t>& bases, const std::vector<bool>& fresh) {
  if (ctx.functional)
    for (const Launch& l : launches) check_host_memory(*l.program, opts.poison);
  if (opts.poison && ctx.functional) {
    // Scratch starts as poison: whatever reads it before writing it computes NaN.
    for (const Launch& l : launches) {
      cores[l.core]->sbuf.fill(opts.poison_byte);
      cores[l.core]->psum.fill(opts.poison_byte);
    }
    for (size_t i = 0; i < launches.size(); ++i)
      for (const auto& d : launches[i].program->tensors)
        if (d.role == isa::TensorRole::output || d.role == isa::TensorRole::scratch) {
          const std::vector<uint8_t> pattern(d.bytes(), opts.poison_byte);
          hbm_of(launches[i].core).write(bases[i] + d.hbm_offset, pattern.data(), pattern.size());
        }
  }
  uint64_t uploaded = 0;
  for (size_t i = 0; i < launches.size(); ++i)
    uploaded += bind_inputs(*launches[i].program, launches[i], hbm_of(launches[i].core), bases[i],
                            ctx.functional, fresh[i]);
  for (const Launch& l : launches)
    if (auto it = resident.find({l.program, l.core}); it != resident.end())
      it->second.written = ctx.functional;
  return uploaded;
}

// Stats reset, tracing set up, every queue of every launch loaded, and the access
// checker told what the host wrote.
void Device::Impl::load_queues(const std::vector<Launch>& launches,
                               const std::vector<uint64_t>& bases) {
  // Stats are per run: every counter starts at 0.
  for (auto& c : chips) c->reset_stats();
  // The roofline's attribution reads the instructions' intervals off a recorder.
  const bool attribute = attributes(launches);
  const bool overlap = opts.comm_overlap && launches.front().rank >= 0;
  const bool tracing = !opts.trace_path.empty() || !opts.vcd_path.empty() || attribute || overlap;
  trace = tracing ? std::make_unique<trace::recorder>() : nullptr;
  ctx.trace = opts.trace_path.empty() && !attribute && !overlap ? nullptr : trace.get();
  for (auto* c : cores) c->sems.set_trace(opts.vcd_path.empty() ? nullptr : trace.get());

  for (size_t i = 0; i < launches.size(); ++i) {
    auto& core = *cores[launches[i].core];
    const isa::Program& p = *launches[i].program;
    for (auto e : kCompute) core.engine_for(e).load(nullptr);
    for (auto& d : core.dma) {
      d->clear();
      d->set_hbm_base(bases[i]);
    }
    for (const auto& q : p.queues) {
      if (q.engine == isa::Engine::dma)
        core.dma[q.dma_engine]->load(q.dma_queue, &q.instrs);
      else
        core.engine_for(q.engine).load(&q.instrs);
    }
    core.sems.reset();
    if (ctx.trace) {
      // Tracks in a fixed order: the five engines, then the used DMA queues.
      for (auto e : kCompute) trace->track(&core.engine_for(e));
      std::vector<std::pair<uint16_t, uint16_t>> dq;
      for (const auto& q : p.queues)
        if (q.engine == isa::Engine::dma && !q.instrs.empty())
          dq.emplace_back(q.dma_engine, q.dma_queue);
      std::sort(dq.begin(), dq.end());
      for (auto [e, q] : dq) trace->track(core.dma[e].get(), q);
      trace->set_program(core.name(), &p);
    }
  }
  if (checker) {
    // Agents register as the queues start; the host wrote inputs and constants.
    checker->begin_run();
    for (size_t i = 0; i < launches.size(); ++i)
      for (const auto& d : launches[i].program->tensors)
        if (d.role == isa::TensorRole::input || d.role == isa::TensorRole::constant)
          checker->host_written(bases[i] + d.hbm_offset, bases[i] + d.hbm_offset + d.bytes(),
                                chips.size() > 1 ? &hbm_of(launches[i].core) : nullptr);
  }
  plan_page_release(launches, bases);
}

// A functional run drops a scratch tensor's HBM pages once no DMA copy will touch
// them again (the page must lie wholly in scratch, clear of every other tensor of
// its chip's HBM). Each chip's HBM plans its own launches' pages.
void Device::Impl::plan_page_release(const std::vector<Launch>& launches,
                                     const std::vector<uint64_t>& bases) {
  ctx.release_hbm = false;
  if (!ctx.functional) return;
  for (size_t k = 0; k < chips.size(); ++k) {
    std::vector<std::pair<uint64_t, uint64_t>> scratch, other, freeable;
    std::vector<std::pair<const std::vector<isa::Instruction>*, uint64_t>> queues;
    for (size_t i = 0; i < launches.size(); ++i) {
      if (chip_index(launches[i].core) != k) continue;
      for (const auto& d : launches[i].program->tensors) {
        const uint64_t b = bases[i] + d.hbm_offset, e = b + d.bytes();
        if (e > b) (d.role == isa::TensorRole::scratch ? scratch : other).emplace_back(b, e);
      }
      for (const auto& q : launches[i].program->queues) queues.emplace_back(&q.instrs, bases[i]);
    }
    std::sort(other.begin(), other.end());
    for (auto [b, e] : scratch) {
      // [b, e) minus every other tensor's bytes.
      for (const auto& [ob, oe] : other) {
        if (oe <= b || ob >= e) continue;
        if (ob > b) freeable.emplace_back(b, ob);
        b = std::max(b, oe);
        if (b >= e) break;
      }
      if (b < e) freeable.emplace_back(b, e);
    }
    chips[k]->hbm.plan_release(freeable, queues);
  }
  ctx.release_hbm = true;
}

// SPMD launches (ranks set): one collective unit for the run, each rank's sync
// engine bound to it; ranks must be 0..R-1, once each, on every launch or none.
void Device::Impl::bind_ranks(const std::vector<Launch>& launches,
                              const std::vector<uint64_t>& bases) {
  if (tlm_engines) tlm_engines->clear();
  coll.reset();
  ctx.collectives = nullptr;
  size_t ranked = 0;
  for (const Launch& l : launches) ranked += l.rank >= 0;
  if (ranked == 0) return;
  if (ranked != launches.size()) throw RunError("SPMD run: every launch needs a rank, or none");
  std::vector<models::network::collective_unit::rank_binding> b(launches.size());
  std::vector<bool> seen(launches.size(), false);
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto r = static_cast<size_t>(launches[i].rank);
    if (r >= launches.size() || seen[r])
      throw RunError("SPMD run: launch ranks must be 0.." + std::to_string(launches.size() - 1) +
                     ", once each (rank " + std::to_string(r) + ")");
    seen[r] = true;
    b[r].hbm = &hbm_of(launches[i].core);
    b[r].hbm_base = bases[i];
    b[r].name = "rank " + std::to_string(r) + " (core" + std::to_string(launches[i].core) + ")";
    for (auto& d : cores[launches[i].core]->dma) b[r].dma.push_back(d.get());
    cores[launches[i].core]->sync.set_rank(uint32_t(r), bases[i]);
  }
  models::network::topology_params tp;
  tp.net = cfg.network;
  tp.cores_per_chip = opts.chip_cores ? opts.chip_cores : cfg.cores;
  tp.dma_bps = models::network::collective_dma_rate(cfg.network, cfg.core.dma.engines,
                                                    cfg.core.dma.bandwidth_bps,
                                                    cfg.core.dma.core_bandwidth_bps);
  const size_t simulated = b.size();
  for (size_t r = simulated; r < opts.fold_ranks; ++r)
    b.push_back(
        {nullptr,
         0,
         "rank " + std::to_string(r) + " (folded into rank " + std::to_string(r % simulated) + ")",
         {}});
  coll = std::make_unique<models::network::collective_unit>(tp, std::move(b), ctx);
  coll->record_transfers(!opts.trace_path.empty());
  if (tlm_engines) coll->use_tlm(tlm_engines.get());
  if (opts.fold_ranks > simulated) coll->fold(uint32_t(simulated));
  ctx.collectives = coll.get();
}

// Starts the launches' engines and DMA and simulates until every queue is done or
// blocked. Returns the host seconds it took.
double Device::Impl::simulate(const std::vector<Launch>& launches) {
  for (const auto& l : launches) {
    auto& core = *cores[l.core];
    for (auto e : kCompute) core.engine_for(e).start();
    for (auto& d : core.dma) d->start();
  }
  const auto h0 = std::chrono::steady_clock::now();
  if (sched)
    sched->run();
  else
    sc_core::sc_start();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
}

// Throws RunError for a model fault, or a deadlock with each queue's pending wait.
void Device::Impl::check_finished(const std::vector<Launch>& launches) const {
  if (!ctx.faults.empty()) {
    std::string msg = "simulation fault:";
    for (const auto& f : ctx.faults) msg += "\n  " + f.where + ": " + f.message;
    throw RunError(msg);
  }
  std::string stuck;
  for (const auto& l : launches) {
    auto& core = *cores[l.core];
    for (auto e : kCompute) {
      auto& en = core.engine_for(e);
      if (!en.idle()) stuck += "\n  " + std::string(en.name()) + ": " + en.pending();
    }
    for (auto& d : core.dma)
      for (const auto& s : d->pending()) stuck += "\n  " + std::string(d->name()) + " " + s;
  }
  const std::string rv = coll ? coll->pending() : "";
  if (!rv.empty())
    throw RunError("collective rendezvous never completed (a rank never reached it):" + rv +
                   "\npending queues:" + stuck);
  if (!stuck.empty())
    throw RunError("deadlock: no queue can make progress; pending semaphore waits:" + stuck);
}

// One launch's figures and outputs (read from HBM at `base`), added to `rep` and
// its matmul FLOPs to `flops`.
void Device::Impl::collect_launch(const Launch& l, uint64_t base, const sc_core::sc_time& t0,
                                  RunReport& rep, std::array<uint64_t, isa::kNumDTypes>& flops) {
  auto& core = *cores[l.core];
  LaunchResult r;
  sc_core::sc_time end = t0;
  for (const auto& q : l.program->queues) {
    if (q.instrs.empty()) continue;
    const sc_core::sc_time& d = q.engine == isa::Engine::dma
                                    ? core.dma[q.dma_engine]->last_done()
                                    : core.engine_for(q.engine).last_done();
    end = std::max(end, d);
  }
  r.simulated_ns = (end - t0).to_seconds() * 1e9;
  for (auto e : kCompute) {
    auto& en = core.engine_for(e);
    r.engines.push_back({std::string(isa::engine_name(e)), en.instructions(), en.busy_ns(),
                         en.sem_wait_ns(), en.port_stall_ns()});
    for (int t = 0; t < isa::kNumDTypes; ++t) flops[t] += en.flops(static_cast<isa::DType>(t));
  }
  EngineStats dma{"dma"};
  for (auto& d : core.dma) dma.busy_ns += d->busy_ns(), dma.instructions += d->instructions();
  if (!core.dma.empty()) dma.active_ns = core.dma.front()->core_active_ns();
  r.engines.push_back(dma);
  for (const auto& e : r.engines) r.instructions += e.instructions;
  collect_dma_queues(l, rep);
  rep.sbuf_high_water_bytes = std::max(rep.sbuf_high_water_bytes, core.sbuf.high_water_bytes());
  rep.psum_high_water_bytes = std::max(rep.psum_high_water_bytes, core.psum.high_water_bytes());
  rep.sbuf_touched_bytes = std::max(rep.sbuf_touched_bytes, core.sbuf.touched_bytes());
  rep.psum_touched_bytes = std::max(rep.psum_touched_bytes, core.psum.touched_bytes());
  if (ctx.functional) {
    for (const auto& d : l.program->tensors) {
      if (d.role != isa::TensorRole::output) continue;
      HostTensor t;
      t.shape = d.shape;
      t.dtype = d.dtype;
      t.data.resize(d.bytes());
      hbm_of(l.core).read(base + d.hbm_offset, t.data.data(), t.data.size());
      r.outputs.emplace(d.name, std::move(t));
    }
  }
  rep.simulated_ns = std::max(rep.simulated_ns, r.simulated_ns);
  rep.instructions += r.instructions;
  if (rep.engines.empty())
    rep.engines = r.engines;
  else
    for (size_t k = 0; k < r.engines.size(); ++k) {
      rep.engines[k].instructions += r.engines[k].instructions;
      rep.engines[k].busy_ns += r.engines[k].busy_ns;
      rep.engines[k].sem_wait_ns += r.engines[k].sem_wait_ns;
      rep.engines[k].port_stall_ns += r.engines[k].port_stall_ns;
      rep.engines[k].active_ns += r.engines[k].active_ns;
    }
  rep.launches.push_back(std::move(r));
}

// The DMA queues launch `l` used, with their instruction counts from the program.
void Device::Impl::collect_dma_queues(const Launch& l, RunReport& rep) const {
  auto& core = *cores[l.core];
  for (size_t e = 0; e < core.dma.size(); ++e)
    for (size_t q = 0; q < core.dma[e]->queue_count(); ++q) {
      const auto qs = core.dma[e]->queue(q);
      if (!qs.used) continue;
      const isa::Queue* pq = nullptr;
      for (const auto& x : l.program->queues)
        if (x.engine == isa::Engine::dma && x.dma_engine == e && x.dma_queue == q) pq = &x;
      rep.dma_queues.push_back({l.core, uint32_t(e), uint32_t(q),
                                pq ? uint64_t(pq->instrs.size()) : 0, qs.bytes, qs.copies});
    }
}

// The run's derived figures: HBM bandwidth use, FLOPs, TFLOP/s and MFU.
void Device::Impl::add_totals(RunReport& rep,
                              const std::array<uint64_t, isa::kNumDTypes>& flops) const {
  const double secs = rep.simulated_ns * 1e-9;
  if (secs > 0)
    rep.hbm_mbu_pct = pct(double(rep.hbm_read_bytes + rep.hbm_write_bytes) / secs,
                          cfg.hbm.bandwidth_bps * rep.chips);
  for (int t = 0; t < isa::kNumDTypes; ++t) {
    rep.flops += flops[t];
    if (flops[t] > flops[static_cast<size_t>(rep.mfu_dtype)])
      rep.mfu_dtype = static_cast<isa::DType>(t);
  }
  if (secs > 0) {
    rep.tflops = double(rep.flops) / secs / 1e12;
    rep.mfu_pct = pct(double(rep.flops) / secs, peak_flops(cfg, rep.mfu_dtype) * rep.cores);
  }
}

RunReport Device::run(const std::vector<Launch>& launches) {
  auto& I = *impl_;
  if (!I.ctx.faults.empty()) throw RunError("device is unusable after an earlier model fault");
  if (launches.empty()) return {};
  std::vector<bool> fresh(launches.size(), true);
  std::vector<uint64_t> bases(launches.size(), 0);
  I.place(launches, bases, fresh);
  const uint64_t uploaded = I.upload(launches, bases, fresh);
  I.load_queues(launches, bases);
  I.bind_ranks(launches, bases);
  const uint64_t hbm_r0 = I.hbm_read_bytes(), hbm_w0 = I.hbm_write_bytes();
  const sc_core::sc_time t0 = models::now();
  const std::clock_t cpu0 = std::clock();
  const double host_s = I.simulate(launches);
  const double host_cpu_s = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  // Products still held by PSUM go in (a later run, or a test, may read it).
  for (const Launch& l : launches) {
    try {
      I.cores[l.core]->psum.drain();
    } catch (const std::exception& e) {
      I.ctx.faults.push_back({I.cores[l.core]->psum.name(), e.what()});
    }
  }
  I.check_finished(launches);

  RunReport rep;
  if (I.checker) {
    rep.races = I.checker->race_count();
    rep.poisoned_reads = I.checker->poison_count();
    rep.check_report = I.checker->report();
    if (I.opts.fail_on_findings && !I.checker->clean())
      throw RunError("access checks failed: " + std::to_string(rep.races) + " race(s), " +
                     std::to_string(rep.poisoned_reads) + " poisoned read(s)\n" + rep.check_report);
  }
  rep.uploaded_bytes = uploaded;
  rep.host_seconds = host_s;
  rep.host_cpu_seconds = host_cpu_s;
  rep.hbm_read_bytes = I.hbm_read_bytes() - hbm_r0;
  rep.hbm_write_bytes = I.hbm_write_bytes() - hbm_w0;
  std::array<uint64_t, isa::kNumDTypes> flops{};
  std::vector<uint32_t> cores;
  for (size_t i = 0; i < launches.size(); ++i) {
    cores.push_back(launches[i].core);
    I.collect_launch(launches[i], bases[i], t0, rep, flops);
    LaunchResult& lr = rep.launches.back();
    lr.rank = launches[i].rank;
    if (I.coll) {
      const auto& cs = I.coll->stats().at(static_cast<size_t>(launches[i].rank));
      lr.collectives = cs.collectives;
      lr.collective_ns = cs.collective_ns;
      lr.rendezvous_ns = cs.rendezvous_ns;
      lr.comm_bytes = cs.bytes;
      lr.contention_ns = cs.contention_ns;
      lr.comm_hbm_bytes = cs.hbm_bytes;
    }
  }
  if (I.coll) add_comm_profile(*I.coll, I.trace.get(), launches, I.cores, t0, rep);
  rep.cores = uint32_t(cores.size());
  std::set<uint32_t> chips_used;
  for (uint32_t c : cores) chips_used.insert(I.chip_index(c));
  rep.chips = uint32_t(chips_used.size());
  I.add_totals(rep, flops);
  I.build_stats(rep, cores, flops);
  if (launches.size() == 1) {
    const Launch& l = launches[0];
    platform::platform_config c = I.cfg;
    c.core = I.cfg.core_of(l.core);
    double busy = 0;
    std::vector<double> kind_ns;
    if (attributes(launches))
      kind_ns = attribute_time(*l.roofline, *l.program, I.trace->intervals(), &busy);
    rep.roofline = make_roofline(c, 1, l.roofline, *l.program, flops, rep.simulated_ns,
                                 attributes(launches) ? &kind_ns : nullptr, busy);
    add_roofline_stats(I.root, rep.roofline);
  }
  rep.stats_json = I.root.to_json();
  rep.stats_text = I.root.to_text();
  if (!I.opts.trace_path.empty())
    write_text_file(I.opts.trace_path, [&](std::ostream& os) { I.trace->write_chrome(os); });
  if (!I.opts.vcd_path.empty())
    write_text_file(I.opts.vcd_path, [&](std::ostream& os) { I.trace->write_vcd(os); });
  return rep;
}

// The stats tree of the last run: the run's figures (summed over the cores it
// used), then the chip's tree with every block's per-run counters.
void Device::Impl::build_stats(const RunReport& rep, const std::vector<uint32_t>& used,
                               const std::array<uint64_t, isa::kNumDTypes>& flops) {
  auto& r = root;
  r.clear();
  const double ns = rep.simulated_ns;
  const double n = double(rep.cores);
  const std::string dt(isa::dtype_name(rep.mfu_dtype));
  r.add_fixed("simulated_ns", "ns", "simulated time of the last run (launch to last completion)",
              ns);
  r.add_fixed("instructions", "instructions", "instructions executed in the last run",
              double(rep.instructions), true);
  r.add_fixed("cores", "cores", "cores the last run used", n, true);
  r.add_fixed("flops", "FLOP", "matmul floating-point operations, 2 x K x M x N each",
              double(rep.flops), true);
  r.add_fixed("tflops", "TFLOP/s", "flops / simulated time", rep.tflops);
  r.add_fixed("mfu_pct", "%",
              "tflops / peak of the cores used for " + dt +
                  (rep.flops ? " (the matmul input dtype with the most FLOPs)" : " (no matmul)"),
              rep.mfu_pct);
  r.add_fixed("host_seconds", "s", "host time of the last run (varies from run to run)",
              rep.host_seconds);
  r.add_fixed("host_seconds_cpu", "s",
              "process CPU time of the last run's simulation (varies from run to run)",
              rep.host_cpu_seconds);

  auto& fd = r.child("flops_by_dtype", "matmul FLOPs by input dtype (the wider input)");
  for (int t = 0; t < isa::kNumDTypes; ++t)
    if (flops[t])
      fd.add_fixed(std::string(isa::dtype_name(static_cast<isa::DType>(t))), "FLOP",
                   "matmul FLOPs with this input dtype", double(flops[t]), true);

  auto& eg = r.child("engines", "compute engines, summed over the cores the run used");
  for (size_t k = 0; k < std::size(kCompute); ++k) {
    const isa::Engine e = kCompute[k];
    const EngineStats& s = rep.engines[k];
    auto& g = eg.child(std::string(isa::engine_name(e)));
    g.add_fixed("instructions", "instructions", "instructions executed", double(s.instructions),
                true);
    g.add_fixed("active_pct", "%", "busy_ns / (simulated_ns x cores)", pct(s.busy_ns, ns * n));
    g.add_fixed("busy_ns", "ns", "time spent executing instructions", s.busy_ns);
    g.add_fixed("semaphore_wait_ns", "ns", "time spent waiting on semaphores", s.sem_wait_ns);
    g.add_fixed("port_stall_ns", "ns",
                "time accesses waited for an SBUF/PSUM port held by another engine",
                s.port_stall_ns);
    auto& ops = g.child("opcodes", "instructions executed by opcode");
    for (int i = 0; i < isa::kNumOpcodes; ++i) {
      const auto op = static_cast<isa::Opcode>(i);
      if (!isa::engine_allows(e, op)) continue;
      uint64_t c = 0;
      for (uint32_t core : used) c += cores[core]->engine_for(e).opcode_count(op);
      ops.add_fixed(std::string(isa::opcode_name(op)), "instructions",
                    "instructions of this opcode", double(c), true);
    }
  }

  auto& hg = r.child("hbm", "HBM traffic of the run (every core, every chip's HBM)");
  hg.add_fixed("read_bytes", "bytes", "bytes read from HBM", double(rep.hbm_read_bytes), true);
  hg.add_fixed("write_bytes", "bytes", "bytes written to HBM", double(rep.hbm_write_bytes), true);
  hg.add_fixed("chips", "chips", "chips whose cores the run used, each with its own HBM",
               double(rep.chips), true);
  hg.add_fixed("mbu_pct", "%",
               "(read + write bytes) / simulated time / (one chip's peak HBM bandwidth x chips)",
               rep.hbm_mbu_pct);

  uint64_t shares = 0, bytes = 0, copies = 0;
  for (uint32_t c : used)
    for (auto& d : cores[c]->dma) shares += d->shares(), bytes += d->bytes();
  for (const auto& q : rep.dma_queues) copies += q.copies;
  const EngineStats& ds = rep.engines.back();
  auto& dg = r.child("dma", "DMA engines, summed over the cores the run used");
  dg.add_fixed("instructions", "instructions", "DMA queue instructions executed",
               double(ds.instructions), true);
  dg.add_fixed("copies", "instructions", "dma_copy instructions completed (spread ones once)",
               double(copies), true);
  dg.add_fixed("shares", "transfers",
               "pieces the engines moved: a dma_copy spread over N engines is N shares",
               double(shares), true);
  dg.add_fixed("bytes", "bytes", "bytes written by the DMA engines", double(bytes), true);
  dg.add_fixed("avg_share_bytes", "bytes", "bytes / shares",
               shares ? double(bytes) / double(shares) : 0.0);
  dg.add_fixed("busy_ns", "ns", "transfer time summed over the DMA engines", ds.busy_ns);
  dg.add_fixed("active_pct", "%",
               "time at least one DMA engine of a core moved data / (simulated_ns x cores), as "
               "the vendor profiler's DMA active %",
               pct(ds.active_ns, ns * n));
  dg.add_fixed("active_ns", "ns",
               "time at least one DMA engine of a core moved data, summed "
               "over cores",
               ds.active_ns);
  dg.add_fixed("engines_busy_pct", "%",
               "busy_ns / (simulated_ns x DMA engines x cores): how "
               "busy the average engine was",
               pct(ds.busy_ns, ns * n * cfg.core.dma.engines));
  auto& qg = dg.child("queues", "the DMA queues the programs used: coreN.dmaE.qQ");
  for (const auto& q : rep.dma_queues) {
    auto& g = qg.child("core" + std::to_string(q.core))
                  .child("dma" + std::to_string(q.engine))
                  .child("q" + std::to_string(q.queue));
    g.add_fixed("instructions", "instructions", "instructions of this queue",
                double(q.instructions), true);
    g.add_fixed("copies", "instructions", "dma_copy instructions completed", double(q.copies),
                true);
    g.add_fixed("bytes", "bytes", "bytes moved by this queue's instructions", double(q.bytes),
                true);
    g.add_fixed("avg_copy_bytes", "bytes", "bytes / copies",
                q.copies ? double(q.bytes) / double(q.copies) : 0.0);
  }
  for (const auto& [name, desc, high, touched] :
       {std::tuple{"sbuf", "state buffer, the largest of the cores used", rep.sbuf_high_water_bytes,
                   rep.sbuf_touched_bytes},
        std::tuple{"psum", "partial-sum buffer, the largest of the cores used",
                   rep.psum_high_water_bytes, rep.psum_touched_bytes}}) {
    auto& g = r.child(name, desc);
    g.add_fixed("high_water_bytes", "bytes",
                "(highest byte offset touched in any partition + 1) x partitions", double(high),
                true);
    g.add_fixed("touched_bytes", "bytes",
                "distinct bytes accessed at least once, summed over partitions", double(touched),
                true);
  }

  if (!rep.launches.empty() && rep.launches.front().rank >= 0) {
    auto& rg = r.child("ranks", "SPMD ranks (runtime/spmd.h): each rank's collectives");
    for (const LaunchResult& l : rep.launches) {
      auto& g = rg.child("rank" + std::to_string(l.rank));
      g.add_fixed("simulated_ns", "ns", "the rank's launch to its last completion", l.simulated_ns);
      g.add_fixed("collectives", "instructions", "collective instructions completed",
                  double(l.collectives), true);
      g.add_fixed("collective_ns", "ns", "the collective model's time of them, summed",
                  l.collective_ns);
      g.add_fixed("rendezvous_ns", "ns", "time its sync queue waited for the group's other ranks",
                  l.rendezvous_ns);
      g.add_fixed("comm_bytes", "bytes", "bytes the rank's collective transfers sent",
                  double(l.comm_bytes), true);
      g.add_fixed("comm_pct", "%", "collective_ns / simulated_ns",
                  pct(l.collective_ns, l.simulated_ns));
      g.add_fixed("contention_ns", "ns",
                  "of collective_ns, the time its DMA engines or HBM were busy with compute",
                  l.contention_ns);
      g.add_fixed("comm_hbm_bytes", "bytes", "HBM bytes its collectives read and wrote",
                  double(l.comm_hbm_bytes), true);
      g.add_fixed("comm_ns", "ns", "the union of its collectives' intervals", l.comm_ns);
      if (l.overlap_known)
        g.add_fixed("overlap_pct", "%", "of comm_ns, the time its other instructions ran",
                    pct(l.overlap_ns, l.comm_ns));
    }
    auto& lg = r.child("links", "network resources the collectives used (topology.h names)");
    for (const LinkLine& k : rep.links) {
      std::string key = k.name;  // dots separate stats paths
      std::replace(key.begin(), key.end(), '.', '_');
      auto& g = lg.child(key);
      g.add_fixed("bytes", "bytes", "bytes the collectives moved over it", double(k.bytes), true);
      g.add_fixed("transfers", "transfers", "transfers over it", double(k.transfers), true);
      g.add_fixed("busy_pct", "%", "time with a transfer on it / simulated_ns", pct(k.busy_ns, ns));
      g.add_fixed("contended_pct", "%", "time with two or more on it / simulated_ns",
                  pct(k.contended_ns, ns));
    }
  }

  // One chip: "chip"; several: chip0, chip1, ... (each its HBM and cores, numbered
  // within the chip); chips and cores the run did not use are left out.
  for (size_t k = 0; k < chips.size(); ++k) {
    auto& cg = chips.size() == 1
                   ? r.child("chip", "the simulated chip: every block's counters for the run")
                   : r.child("chip" + std::to_string(k),
                             "chip " + std::to_string(k) + " of the launch (its cores are " +
                                 std::to_string(k * chip_cores) + ".." +
                                 std::to_string((k + 1) * chip_cores - 1) +
                                 "): its HBM's and every block's counters for the run");
    chips[k]->register_stats(cg);
    bool chip_used = false;
    for (uint32_t c = 0; c < chip_cores; ++c) {
      const uint32_t core = uint32_t(k) * chip_cores + c;
      const bool in = std::find(used.begin(), used.end(), core) != used.end();
      chip_used |= in;
      if (stats::group* g = cg.find_child("core" + std::to_string(c)))
        g->set_visible([in] { return in; });
    }
    if (chips.size() > 1) cg.set_visible([chip_used] { return chip_used; });
  }
}

}  // namespace trnsim::runtime
