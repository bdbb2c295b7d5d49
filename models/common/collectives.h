// What a sequencer needs from the collective unit (models/network/collective_unit.h):
// a rank reaching a collective instruction arrives; it is told when the whole
// group has arrived and how long the collective then takes.
#pragma once

#include <cstdint>
#include <string>
#include <systemc>

#include "models/isa/instruction.h"

namespace trnsim::models {

class collective_waiter {
 public:
  virtual ~collective_waiter() = default;
  // The group's last rank arrived: the collective completes `duration` from now.
  virtual void collective_ready(const sc_core::sc_time& duration) = 0;
};

class collective_port {
 public:
  virtual ~collective_port() = default;
  // Rank `rank` reached collective `in` (waits done, start-signals sent). Calls
  // w->collective_ready() now if it is the group's last rank, else later when the
  // last one arrives (never, if one never does). A mismatch with the ranks already
  // there (opcode, sizes, dtype, a rank outside its group) is recorded as a fault of
  // every rank involved (sim_context::faults); none of them then completes.
  virtual void arrive(uint32_t rank, const isa::Instruction& in, collective_waiter* w) = 0;
  // The collectives still waiting for ranks, one line each (deadlock reports).
  virtual std::string pending() const = 0;
};

}  // namespace trnsim::models
