#include "models/common/semaphores.h"

#include <stdexcept>

#include "models/common/trace.h"

namespace trnsim::models {

semaphores::semaphores(const sc_core::sc_module_name& name, const semaphores_params& p)
    : sc_module(name), values_(p.count, 0), waiters_(p.count, 0), watches_(p.count) {
  events_.reserve(p.count);
  for (uint32_t i = 0; i < p.count; ++i) events_.push_back(std::make_unique<sc_core::sc_event>());
}

void semaphores::check(uint16_t id) const {
  if (id >= values_.size())
    throw std::out_of_range("semaphore s" + std::to_string(id) + " out of range (" +
                            std::to_string(values_.size()) + " semaphores)");
}

void semaphores::reset() {
  std::fill(values_.begin(), values_.end(), 0u);
  for (auto& w : watches_) w.clear();
  if (trace_) trace_->semaphores_reset(this, now());
}

void semaphores::wait_ge(uint16_t id, uint32_t v) {
  check(id);
  while (values_[id] < v) {
    ++waiters_[id];
    sc_core::wait(*events_[id]);
    --waiters_[id];
  }
}

bool semaphores::add_watch(uint16_t id, const watch& w) {
  check(id);
  if (values_[id] >= w.value) return false;
  for (const auto& x : watches_[id])
    if (x.value == w.value && x.ev == w.ev && x.agent == w.agent) return true;  // pending
  watches_[id].push_back(w);
  return true;
}

bool semaphores::notify_when_ge(uint16_t id, uint32_t v, sc_core::sc_event& ev) {
  return add_watch(id, {v, &ev, nullptr});
}

bool semaphores::wake_when_ge(uint16_t id, uint32_t v, scheduler::agent* a) {
  return add_watch(id, {v, nullptr, a});
}

void semaphores::increment(uint16_t id, uint32_t inc) {
  check(id);
  const uint32_t v = values_[id] += inc;
  if (trace_) trace_->semaphore(this, id, v, now());
  // Delta notification: waiters resume in the same simulated instant, in a
  // deterministic order independent of who signalled first within this delta.
  if (waiters_[id]) events_[id]->notify(sc_core::SC_ZERO_TIME);
  auto& ws = watches_[id];
  for (size_t i = 0; i < ws.size();) {
    if (ws[i].value <= v) {
      if (ws[i].ev)
        ws[i].ev->notify(sc_core::SC_ZERO_TIME);
      else
        scheduler::active()->wake(ws[i].agent);
      ws[i] = ws.back();
      ws.pop_back();
    } else {
      ++i;
    }
  }
}

}  // namespace trnsim::models
