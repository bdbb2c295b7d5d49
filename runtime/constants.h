// Constants a program never reads. A compiled program may keep a constant that only
// the compiler's own rewrites used (the fp32 weights its bf16 copies were cast
// from): no instruction reads its bytes, so a functional run need not hold
// it in host memory nor write it into HBM.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "models/isa/binary.h"
#include "models/isa/program.h"

namespace trnsim::runtime {

// The HBM bytes the program's instructions may access (any operand in HBM: DMA
// copies' sources and destinations), relative to its load base: sorted, disjoint
// [begin, end) ranges.
class HbmAccesses {
 public:
  explicit HbmAccesses(const isa::Program& p);
  // Whether any read touches [begin, end).
  bool any(uint64_t begin, uint64_t end) const;

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

// Whether an instruction may access some byte of constant tensor `d`.
bool constant_is_read(const HbmAccesses& reads, const isa::TensorDecl& d);

// Erases from p.constants every constant whose bytes no instruction accesses.
// Returns the bytes released.
uint64_t drop_unread_constants(isa::Program& p);

// What a run loads of a binary program's constants (isa::load_program): none for a
// timing-only run, which moves no data; else those an instruction accesses.
isa::ConstantFilter constants_to_load(bool functional);

}  // namespace trnsim::runtime
