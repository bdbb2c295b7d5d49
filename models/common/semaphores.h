// The core's hardware semaphores: counters that start at 0 at launch and are only
// incremented. Engines wait for a counter to reach a value and increment counters
// at read-start or completion. Modelled: values, waits (a waiter resumes one delta
// cycle after the increment that releases it) and who waits on what (for deadlock
// reports), and, when asked for (keep_history), when recent increments happened, so
// a DMA queue that was busy when its wait was met still counts its start latency
// from that moment. Not modelled: the semaphore write latency (engines' sequencer
// latency covers it). Only increments someone waits for notify an event, which keeps
// semaphore traffic off the simulation kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "models/common/core_params.h"
#include "models/common/scheduler.h"

namespace trnsim::trace {
class recorder;
}

namespace trnsim::models {

class semaphores : public sc_core::sc_module {
 public:
  semaphores(const sc_core::sc_module_name& name, const semaphores_params& p);

  void reset();  // every counter to 0, every pending watch dropped
  uint32_t count() const { return count_; }
  // Throws std::out_of_range past count().
  uint32_t value(uint16_t id) const {
    if (id >= count_) check(id);
    return values_.empty() ? 0 : values_[id];
  }
  // Blocks the calling thread until semaphore `id` >= `v`.
  void wait_ge(uint16_t id, uint32_t v);
  void increment(uint16_t id, uint32_t inc);
  // Notifies `ev` (delta) once semaphore `id` reaches `v`, for a thread that waits
  // on several conditions (a DMA engine's queues). Returns false, registering
  // nothing, when `id` already has. A watch fires once; registering the same
  // (id, v, ev) again while it is pending changes nothing.
  bool notify_when_ge(uint16_t id, uint32_t v, sc_core::sc_event& ev);
  // The same for a scheduler agent: scheduler::active()->wake(a) once `id` reaches `v`.
  bool wake_when_ge(uint16_t id, uint32_t v, scheduler::agent* a);

  // Keep the times of each semaphore's last kHistory increments (for reached_at).
  void keep_history(bool on) { history_on_ = on; }
  static constexpr size_t kHistory = 64;
  // When semaphore `id` first reached `v` (<= its value): exact while the increment
  // that did is among the last kHistory, else the oldest one kept (a later time).
  sc_core::sc_time reached_at(uint16_t id, uint32_t v) const;

  // Records every value change (VCD); nullptr: off.
  void set_trace(trace::recorder* t) { trace_ = t; }

 private:
  struct watch {
    uint32_t value;
    sc_core::sc_event* ev;    // a SystemC thread's event, or
    scheduler::agent* agent;  // a scheduler agent
  };
  void check(uint16_t id) const;  // throws std::out_of_range past count_
  // check(id), and the per-semaphore state allocated on first use: a core no
  // program uses costs nothing however many semaphores it has.
  void use(uint16_t id);
  // Registers `w` unless `id` has reached its value (false) or it is pending already.
  bool add_watch(uint16_t id, const watch& w);
  uint32_t count_;
  std::vector<uint32_t> values_;
  std::vector<uint32_t> waiters_;  // threads blocked in wait_ge, per semaphore
  std::vector<std::vector<watch>> watches_;
  std::vector<std::unique_ptr<sc_core::sc_event>> events_;  // made by a thread's first wait
  struct stamp {
    uint32_t value;  // after the increment
    sc_core::sc_time at;
  };
  // A semaphore's last kHistory stamps, oldest at `head` once full: a ring, so an
  // increment never allocates after the first kHistory, and reached_at() finds its
  // stamp by bisection (values only grow, unless the 32-bit counter wrapped).
  struct history {
    std::vector<stamp> buf;
    uint32_t head = 0;
    bool wrapped = false;  // a value wrapped past 2^32: stamps out of order
    size_t size() const { return buf.size(); }
    const stamp& at(size_t i) const {  // i-th oldest
      const size_t k = head + i;
      return buf[k < buf.size() ? k : k - buf.size()];
    }
    void clear() {
      buf.clear();
      head = 0;
      wrapped = false;
    }
  };
  bool history_on_ = false;
  std::vector<history> history_;
  trace::recorder* trace_ = nullptr;
};

}  // namespace trnsim::models
