#include "models/common/scheduler.h"

#include <algorithm>

#include "models/common/sim_time.h"

namespace trnsim::models {

void scheduler::push_next(agent* a) {
  a->parked_ = false;
  a->queued_ = true;
  next_.push_back(a);
}

void scheduler::resume_at(agent* a, const sc_core::sc_time& t) {
  a->parked_ = false;
  if (t <= now_) {
    push_next(a);
    return;
  }
  checked_time(t);  // the models check their times; a wrapped one must not reorder events
  heap_.push_back({t.value(), seq_++, a});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void scheduler::wake(agent* a) {
  if (a->parked_ && !a->queued_) push_next(a);
}

void scheduler::run() {
  // The time source while it runs, restored however run() ends.
  struct activate {
    scheduler* outer;
    explicit activate(scheduler* s) : outer(active_) { active_ = s; }
    ~activate() { active_ = outer; }
  } on(this);
  for (;;) {
    if (next_.empty()) {
      if (heap_.empty()) break;
      // The next time step: every agent due then, in scheduling order.
      const uint64_t t = heap_.front().at;
      now_ = time_from_ticks(t);
      while (!heap_.empty() && heap_.front().at == t) {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        agent* a = heap_.back().a;
        heap_.pop_back();
        a->queued_ = true;
        next_.push_back(a);
      }
    }
    // One delta: the agents woken now run; those they wake run in the next one.
    current_.swap(next_);
    for (agent* a : current_) {
      a->queued_ = false;
      a->resume();
    }
    current_.clear();
  }
}

}  // namespace trnsim::models
