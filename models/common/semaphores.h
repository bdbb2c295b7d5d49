// The core's hardware semaphores: counters that start at 0 at launch and are only
// incremented. Engines wait for a counter to reach a value and increment counters
// at read-start or completion. Modelled: values, events and who waits on what (for
// deadlock reports). Not modelled: the semaphore write latency (engines' sequencer
// latency covers it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

namespace trnsim::models {

struct semaphores_params {
  uint32_t count = 256;  // semaphores per core
};

class semaphores : public sc_core::sc_module {
 public:
  semaphores(const sc_core::sc_module_name& name, const semaphores_params& p);

  void reset();  // every counter to 0
  uint32_t count() const { return static_cast<uint32_t>(values_.size()); }
  uint32_t value(uint16_t id) const { return values_.at(id); }
  // Blocks the calling thread until semaphore `id` >= `v`.
  void wait_ge(uint16_t id, uint32_t v);
  void increment(uint16_t id, uint32_t inc);
  // Notified on every increment of any semaphore (DMA engines pick among queues).
  const sc_core::sc_event& changed_event() const { return changed_; }

 private:
  std::vector<uint32_t> values_;
  std::vector<std::unique_ptr<sc_core::sc_event>> events_;
  sc_core::sc_event changed_;
};

}  // namespace trnsim::models
