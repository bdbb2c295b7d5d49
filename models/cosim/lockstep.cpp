#include "models/cosim/lockstep.h"

#include <cstdio>

#include "models/cosim/systolic_reference.h"

namespace trnsim::cosim {
namespace {

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08X", v);
  return b;
}

}  // namespace

void lockstep::fail(const std::string& what) {
  if (!first_) first_ = "transaction " + std::to_string(count_) + ": " + what;
}

bool lockstep::step(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                    uint32_t vectors) {
  const uint32_t R = rtl_.opts().rows, C = rtl_.opts().cols;
  last_ = rtl_.run_tile(w, x, vectors);
  const tile_run& t = last_;
  bool ok = true;
  if (!t.ok) {
    fail(t.error);
    ok = false;
  } else {
    const std::vector<uint32_t> want = systolic_reference(w, R, C, x, vectors);
    for (size_t i = 0; i < want.size() && ok; ++i)
      if (t.out[i] != want[i]) {
        const size_t j = i / C, c = i % C;
        fail("vector " + std::to_string(j) + ", column " + std::to_string(c) +
             " (result beat at RTL cycle " + std::to_string(t.res_cycle[j]) + "): rtl " +
             hex(t.out[i]) + " != model " + hex(want[i]));
        ok = false;
      }
    const uint64_t fold = rtl_.fold_cycles(vectors);
    if (ok && t.cycles != fold + t.stall_cycles) {
      fail("cycles: rtl " + std::to_string(t.cycles) + " != fold formula 2R + C + S - 2 = " +
           std::to_string(fold) + " + " + std::to_string(t.stall_cycles) +
           " refused result cycles (job from RTL cycle " + std::to_string(t.start_cycle) + ")");
      ok = false;
    }
  }
  ++count_;
  return ok;
}

}  // namespace trnsim::cosim
