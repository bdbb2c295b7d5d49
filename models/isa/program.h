// Program: our analogue of a NEFF. Per-engine instruction streams, DMA queues, the
// tensor table (HBM layout relative to the program's load base) and constant data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/isa/instruction.h"

namespace trnsim::isa {

enum class TensorRole : uint8_t { input, output, constant, scratch };
std::string_view tensor_role_name(TensorRole r);

struct TensorDecl {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::fp32;
  TensorRole role = TensorRole::scratch;
  uint64_t hbm_offset = 0;  // bytes from the program's HBM base
  uint64_t bytes() const;
  bool operator==(const TensorDecl&) const = default;
};

struct Queue {
  Engine engine = Engine::sync;
  uint16_t dma_engine = 0;  // dma queues only: which DMA engine of the core
  uint16_t dma_queue = 0;   // ... and which of its queues
  std::vector<Instruction> instrs;
  std::string label() const;  // "tensor", "dma.3.0"
  bool operator==(const Queue&) const = default;
};

struct Program {
  std::string name = "program";
  uint32_t num_semaphores = 0;
  std::vector<Queue> queues;        // at most one per compute engine; any number of DMA queues
  std::vector<TensorDecl> tensors;  // HBM tensor table
  std::map<std::string, std::vector<uint8_t>> constants;  // tensor name -> raw bytes

  uint64_t hbm_bytes() const;  // footprint: max tensor end offset
  const TensorDecl* find_tensor(std::string_view name) const;
  size_t instruction_count() const;
  size_t wait_count() const;  // semaphore waits of every instruction
  bool operator==(const Program&) const = default;
};

// Sync mutation (trnsim compile/run --drop-sync N): removes wait `n` (0-based, in
// queue, instruction, wait order: the order of the disassembly) and returns what was
// removed ("vector instruction 12 (line 40): wait s3>=2"). Throws std::out_of_range
// naming the program's wait count when n is too large.
std::string drop_wait(Program& p, size_t n);

}  // namespace trnsim::isa
