// Static checks of a program against the hardware's rules: operand placement
// (which engine may touch which memory), access-pattern bounds, the partition-start
// rule, dtype combinations, matmul limits, PSUM bank boundaries, semaphore ids.
#pragma once

#include <stdexcept>
#include <string>

#include "models/isa/program.h"

namespace trnsim::isa {

// The few hardware sizes the checks need; filled from the platform config.
struct Limits {
  uint32_t partitions = 128;
  uint64_t sbuf_partition_bytes = 192 * 1024;
  uint64_t psum_partition_bytes = 16 * 1024;
  uint64_t psum_bank_bytes = 2 * 1024;
  uint32_t matmul_max_k = 128;  // SBUF partitions (K; the PE array folds)
  uint32_t matmul_max_m = 128;  // PSUM partitions (M)
  uint32_t matmul_max_n = 512;
  bool matmul_double_row = false;  // fp8 matmul may take K = 2 x partitions (NC-v3+)
  uint64_t hbm_bytes = 0;          // space available to the program (0: unchecked)
  uint32_t dma_engines = 16;
  uint32_t dma_queues = 16;
  uint32_t max_semaphores = 256;
  bool operator==(const Limits&) const = default;
};

class ValidationError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws ValidationError naming queue, instruction index, source line, opcode and
// the rule broken.
void validate(const Program& p, const Limits& lim);
// The same for a single instruction (used by engines as a second line of defence).
void validate_instruction(const Instruction& in, Engine e, const Limits& lim,
                          uint32_t num_semaphores);

}  // namespace trnsim::isa
