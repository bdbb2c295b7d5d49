#include "models/common/semaphores.h"

#include <stdexcept>

#include "models/common/trace.h"

namespace trnsim::models {

semaphores::semaphores(const sc_core::sc_module_name& name, const semaphores_params& p)
    : sc_module(name), count_(p.count) {}

void semaphores::check(uint16_t id) const {
  if (id >= count_)
    throw std::out_of_range("semaphore s" + std::to_string(id) + " out of range (" +
                            std::to_string(count_) + " semaphores)");
}

void semaphores::use(uint16_t id) {
  check(id);
  if (!values_.empty()) return;
  values_.assign(count_, 0);
  waiters_.assign(count_, 0);
  watches_.resize(count_);
  events_.resize(count_);
}

void semaphores::reset() {
  std::fill(values_.begin(), values_.end(), 0u);  // (empty: never used, all 0)
  for (auto& h : history_) h.clear();
  for (auto& w : watches_) w.clear();
  if (trace_) trace_->semaphores_reset(this, now());
}

void semaphores::wait_ge(uint16_t id, uint32_t v) {
  use(id);
  if (!events_[id]) events_[id] = std::make_unique<sc_core::sc_event>();
  while (values_[id] < v) {
    ++waiters_[id];
    sc_core::wait(*events_[id]);
    --waiters_[id];
  }
}

bool semaphores::add_watch(uint16_t id, const watch& w) {
  use(id);
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
  use(id);
  uint32_t v;
  const bool wrapped = __builtin_add_overflow(values_[id], inc, &v);
  values_[id] = v;
  if (history_on_) {
    if (history_.size() < count_) history_.resize(count_);
    auto& h = history_[id];
    h.wrapped |= wrapped;
    if (h.buf.size() < kHistory) {
      if (h.buf.empty()) h.buf.reserve(kHistory);
      h.buf.push_back({v, now()});
    } else {
      h.buf[h.head] = {v, now()};
      h.head = h.head + 1 == kHistory ? 0 : h.head + 1;
    }
  }
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

sc_core::sc_time semaphores::reached_at(uint16_t id, uint32_t v) const {
  if (v == 0 || id >= history_.size() || history_[id].size() == 0) return sc_core::SC_ZERO_TIME;
  const history& h = history_[id];
  const size_t n = h.size();
  // The oldest stamp with value >= v.
  if (h.wrapped) {
    for (size_t i = 0; i < n; ++i)
      if (h.at(i).value >= v) return h.at(i).at;
  } else {
    size_t lo = 0, hi = n;  // values ascend: bisect for the first >= v
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (h.at(mid).value >= v)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (lo < n) return h.at(lo).at;
  }
  return h.at(n - 1).at;  // not reached yet: callers ask only once it has
}

}  // namespace trnsim::models
