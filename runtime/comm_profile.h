// The communication profile of an SPMD run: the collective unit's summaries and
// per-link figures copied into the report, each rank's communication time (the
// union of its collectives' intervals) and how much of it overlapped its own
// compute (any other instruction's interval, when recorded), and in a trace a
// process per rank, a "collectives" track per rank (the rank's collective engine:
// each collective from the group's completion to the rank's end) and a "network"
// process with a track per link carrying each transfer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/common/trace.h"
#include "models/network/collective_unit.h"
#include "platform/neuron_core.h"
#include "runtime/device.h"

namespace trnsim::runtime {

void add_comm_profile(const models::network::collective_unit& unit, trace::recorder* trace,
                      const std::vector<Launch>& launches,
                      const std::vector<platform::neuron_core*>& cores, const sc_core::sc_time& t0,
                      RunReport& rep);

// The report's lines: the collectives with their algorithms, each link's bytes,
// busy and contended share of the step, and the step's communication share and
// how much of it overlapped compute.
std::string format_comm_profile(const RunReport& rep);

}  // namespace trnsim::runtime
