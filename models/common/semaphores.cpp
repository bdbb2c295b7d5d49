#include "models/common/semaphores.h"

namespace trnsim::models {

semaphores::semaphores(const sc_core::sc_module_name& name, const semaphores_params& p)
    : sc_module(name), values_(p.count, 0) {
  events_.reserve(p.count);
  for (uint32_t i = 0; i < p.count; ++i) events_.push_back(std::make_unique<sc_core::sc_event>());
}

void semaphores::reset() {
  std::fill(values_.begin(), values_.end(), 0u);
}

void semaphores::wait_ge(uint16_t id, uint32_t v) {
  while (values_.at(id) < v) sc_core::wait(*events_[id]);
}

void semaphores::increment(uint16_t id, uint32_t inc) {
  values_.at(id) += inc;
  // Delta notification: waiters resume in the same simulated instant, in a
  // deterministic order independent of who signalled first within this delta.
  events_[id]->notify(sc_core::SC_ZERO_TIME);
  changed_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace trnsim::models
