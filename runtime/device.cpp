#include "runtime/device.h"

#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>

#include "models/common/sim_context.h"
#include "models/isa/validate.h"
#include "platform/chip.h"

namespace trnsim::runtime {

namespace {
bool g_device_created = false;
constexpr uint64_t kProgramAlign = 4096;
}  // namespace

struct Device::Impl {
  platform::platform_config cfg;
  models::sim_context ctx;
  std::unique_ptr<platform::chip> chip;
  stats::group root{"trnsim"};
  double last_sim_ns = 0, last_host_s = 0;
  uint64_t last_instructions = 0;
};

Device::Device(const platform::platform_config& cfg, DeviceOptions opts)
    : impl_(std::make_unique<Impl>()) {
  if (g_device_created)
    throw RunError("only one Device per process: SystemC elaborates a platform once");
  g_device_created = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  impl_->cfg = cfg;
  impl_->ctx.functional = opts.functional;
  impl_->chip = std::make_unique<platform::chip>("chip", cfg, impl_->ctx);
  auto& r = impl_->root;
  r.add_value("simulated_ns", "ns", "simulated time of the last run", &impl_->last_sim_ns);
  r.add_counter("instructions", "instructions", "instructions executed in the last run",
                &impl_->last_instructions);
  r.add_value("host_seconds", "s", "host time of the last run", &impl_->last_host_s);
  impl_->chip->register_stats(r.child("chip", "the simulated chip"));
  // Finish elaboration and let every sequencer reach its wait for a launch.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

Device::~Device() = default;

const platform::platform_config& Device::config() const {
  return impl_->cfg;
}

// Checks the given inputs against the tensor table; when `functional`, writes the
// constants and inputs into HBM (timing-only runs need no data).
static void bind_inputs(const isa::Program& p, const Launch& l, models::hbm& hbm, uint64_t base,
                        bool functional) {
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
  if (!functional) return;
  for (const auto& d : p.tensors) {
    auto c = p.constants.find(d.name);
    if (c != p.constants.end()) hbm.write(base + d.hbm_offset, c->second.data(), c->second.size());
    if (d.role != isa::TensorRole::input) continue;
    auto it = l.inputs.find(d.name);
    if (it == l.inputs.end())
      throw RunError("missing input '" + d.name + "' " + shape_string(d.shape) + " " +
                     std::string(isa::dtype_name(d.dtype)));
    HostTensor t = it->second.dtype == d.dtype ? it->second : it->second.cast(d.dtype);
    hbm.write(base + d.hbm_offset, t.data.data(), t.data.size());
  }
}

RunReport Device::run(const std::vector<Launch>& launches) {
  auto& I = *impl_;
  auto& chip = *I.chip;
  if (!I.ctx.faults.empty()) throw RunError("device is unusable after an earlier model fault");
  std::set<uint32_t> used;
  uint64_t next_base = 0;
  std::vector<uint64_t> bases;
  for (const auto& l : launches) {
    if (!l.program) throw RunError("launch without a program");
    if (l.core >= chip.cores.size())
      throw RunError("core " + std::to_string(l.core) + " does not exist: the chip has " +
                     std::to_string(chip.cores.size()) + " cores");
    if (!used.insert(l.core).second)
      throw RunError("two launches on core " + std::to_string(l.core) + " in one run");
    isa::Limits lim = I.cfg.limits();
    lim.hbm_bytes = l.program->hbm_bytes();
    try {
      isa::validate(*l.program, lim);
    } catch (const isa::ValidationError& e) {
      throw RunError("program '" + l.program->name + "': " + e.what());
    }
    bases.push_back(next_base);
    next_base += (l.program->hbm_bytes() + kProgramAlign - 1) / kProgramAlign * kProgramAlign;
    if (next_base > I.cfg.hbm.size_bytes)
      throw RunError("programs need " + std::to_string(next_base) +
                     " bytes of HBM; the device has " + std::to_string(I.cfg.hbm.size_bytes));
  }
  for (size_t i = 0; i < launches.size(); ++i)
    bind_inputs(*launches[i].program, launches[i], chip.hbm, bases[i], I.ctx.functional);

  // Load every queue, remembering per-launch counters to report deltas.
  struct before_t {
    std::vector<uint64_t> instr;
    std::vector<double> busy, wait;
  };
  std::vector<before_t> before(launches.size());
  const isa::Engine compute[] = {isa::Engine::tensor, isa::Engine::vector, isa::Engine::scalar,
                                 isa::Engine::gpsimd, isa::Engine::sync};
  for (size_t i = 0; i < launches.size(); ++i) {
    auto& core = *chip.cores[launches[i].core];
    const isa::Program& p = *launches[i].program;
    for (auto e : compute) core.engine_for(e).load(nullptr);
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
    for (auto e : compute) {
      auto& en = core.engine_for(e);
      before[i].instr.push_back(en.instructions());
      before[i].busy.push_back(en.busy_ns());
      before[i].wait.push_back(en.sem_wait_ns());
    }
    double dma_busy = 0;
    uint64_t dma_instr = 0;
    for (auto& d : core.dma) dma_busy += d->busy_ns(), dma_instr += d->instructions();
    before[i].instr.push_back(dma_instr);
    before[i].busy.push_back(dma_busy);
    before[i].wait.push_back(0);
  }
  const uint64_t hbm_r0 = chip.hbm.read_bytes(), hbm_w0 = chip.hbm.write_bytes();
  const sc_core::sc_time t0 = sc_core::sc_time_stamp();
  for (const auto& l : launches) {
    auto& core = *chip.cores[l.core];
    for (auto e : compute) core.engine_for(e).start();
    for (auto& d : core.dma) d->start();
  }
  const auto h0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double host_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();

  if (!I.ctx.faults.empty()) {
    std::string msg = "simulation fault:";
    for (const auto& f : I.ctx.faults) msg += "\n  " + f.where + ": " + f.message;
    throw RunError(msg);
  }
  std::string stuck;
  for (const auto& l : launches) {
    auto& core = *chip.cores[l.core];
    for (auto e : compute) {
      auto& en = core.engine_for(e);
      if (!en.idle()) stuck += "\n  " + std::string(en.name()) + ": " + en.pending();
    }
    for (auto& d : core.dma)
      for (const auto& s : d->pending()) stuck += "\n  " + std::string(d->name()) + " " + s;
  }
  if (!stuck.empty())
    throw RunError("deadlock: no queue can make progress; pending semaphore waits:" + stuck);

  RunReport rep;
  rep.host_seconds = host_s;
  rep.hbm_read_bytes = chip.hbm.read_bytes() - hbm_r0;
  rep.hbm_write_bytes = chip.hbm.write_bytes() - hbm_w0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto& l = launches[i];
    auto& core = *chip.cores[l.core];
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
    size_t k = 0;
    for (auto e : compute) {
      auto& en = core.engine_for(e);
      r.engines.push_back({std::string(isa::engine_name(e)), en.instructions() - before[i].instr[k],
                           en.busy_ns() - before[i].busy[k], en.sem_wait_ns() - before[i].wait[k]});
      ++k;
    }
    double dma_busy = 0;
    uint64_t dma_instr = 0;
    for (auto& d : core.dma) dma_busy += d->busy_ns(), dma_instr += d->instructions();
    r.engines.push_back({"dma", dma_instr - before[i].instr[k], dma_busy - before[i].busy[k], 0});
    for (const auto& e : r.engines) r.instructions += e.instructions;
    if (I.ctx.functional) {
      for (const auto& d : l.program->tensors) {
        if (d.role != isa::TensorRole::output) continue;
        HostTensor t;
        t.shape = d.shape;
        t.dtype = d.dtype;
        t.data.resize(d.bytes());
        chip.hbm.read(bases[i] + d.hbm_offset, t.data.data(), t.data.size());
        r.outputs.emplace(d.name, std::move(t));
      }
    }
    rep.simulated_ns = std::max(rep.simulated_ns, r.simulated_ns);
    rep.launches.push_back(std::move(r));
  }
  I.last_sim_ns = rep.simulated_ns;
  I.last_host_s = host_s;
  I.last_instructions = 0;
  for (const auto& r : rep.launches) I.last_instructions += r.instructions;
  rep.stats_json = I.root.to_json();
  rep.stats_text = I.root.to_text();
  return rep;
}

}  // namespace trnsim::runtime
