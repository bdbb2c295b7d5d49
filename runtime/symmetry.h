// Symmetry classes of an SPMD run (`trnsim run --ranks R`, timing only). When every
// rank runs the same instruction stream on the same shapes, ranks differ only by
// where they sit: rank r is core r % C of chip r / C (C = chip.cores), and the C
// cores of a chip share its HBM (every chip has its own, platform/chip.h, in the
// full run as in the folded one). Every chip then behaves alike, so rank r behaves as
// rank r % C: the run simulates the C ranks of chip 0 (one representative per
// class) and lets each other rank arrive at a collective when its representative
// does. The collective model still times each collective over the links of its
// whole group (models/network/collective_engine.h): the folded ranks' traffic is in
// every collective's time, as in the full simulation, where groups do not contend
// with each other either.
//
// Folding needs, for every rank r: the same HBM tensor table as rank r % C (shapes,
// dtypes, roles, offsets; names and constant values do not time), and for every
// instruction i, rank r's instruction i equal to rank r % C's but for its collective
// group, whose size and ranks per chip (what the collective's time depends on) are
// the same; and each representative's groups must hold the representatives of their
// members (so a group completes from the representatives' arrivals alone); and no
// partial permute (peers with `-`: its ranks' DMA and HBM loads differ). Functional
// runs simulate every rank; --check-races and --trace see the simulated ranks only.
// docs/scale-out.md has the plan beyond one process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/isa/program.h"

namespace trnsim::runtime {

struct SymmetryPlan {
  uint32_t ranks = 0;      // the run's ranks
  uint32_t simulated = 0;  // ranks simulated (0..simulated-1); == ranks when not folded
  std::string why_not;     // when not folded: the first rank or instruction that differs
  bool folded() const { return simulated < ranks; }
};

// `progs[r]`: rank r's program (pointers may repeat). `chip_cores`: cores per chip.
SymmetryPlan plan_symmetry(const std::vector<const isa::Program*>& progs, uint32_t chip_cores);

// One line for the report: "symmetry: 32 ranks in 2 classes ..." or why not folded.
std::string describe_symmetry(const SymmetryPlan& p);

}  // namespace trnsim::runtime
