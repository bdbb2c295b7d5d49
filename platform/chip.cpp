#include "platform/chip.h"

namespace trnsim::platform {

chip::chip(const sc_core::sc_module_name& name, const platform_config& cfg,
           models::sim_context& ctx, uint32_t first_core, uint32_t n)
    : sc_module(name), hbm("hbm", cfg.hbm) {
  if (n == 0) n = cfg.cores;
  for (uint32_t i = 0; i < n; ++i) {
    auto c = std::make_unique<neuron_core>(("core" + std::to_string(i)).c_str(),
                                           cfg.core_of(first_core + i), ctx);
    for (auto& d : c->dma) {
      d->hbm_socket.bind(hbm.tgt_socket);
      d->set_hbm(&hbm);
    }
    cores.push_back(std::move(c));
  }
}

void chip::reset_stats() {
  hbm.reset_stats();
  for (auto& c : cores) c->reset_stats();
}

void chip::register_stats(stats::group& g) {
  hbm.register_stats(g.child("hbm", "high-bandwidth memory shared by the cores"));
  for (size_t i = 0; i < cores.size(); ++i)
    cores[i]->register_stats(g.child("core" + std::to_string(i), "one NeuronCore"));
}

}  // namespace trnsim::platform
