#include "models/isa/program.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trnsim::isa {

std::string_view tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::input:
      return "input";
    case TensorRole::output:
      return "output";
    case TensorRole::constant:
      return "constant";
    case TensorRole::scratch:
      return "scratch";
  }
  return "?";
}

// Saturates at UINT64_MAX so absurd shapes (from a corrupt file) fail range checks
// instead of wrapping; a negative dimension counts as empty.
uint64_t TensorDecl::bytes() const {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return UINT64_MAX;
  }
  return n;
}

std::string Queue::label() const {
  if (engine != Engine::dma) return std::string(engine_name(engine));
  return "dma." + std::to_string(dma_engine) + "." + std::to_string(dma_queue);
}

uint64_t Program::hbm_bytes() const {
  uint64_t end = 0;
  for (const auto& t : tensors) {
    uint64_t e;
    if (__builtin_add_overflow(t.hbm_offset, t.bytes(), &e)) e = UINT64_MAX;
    end = std::max(end, e);
  }
  return end;
}

const TensorDecl* Program::find_tensor(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

size_t Program::instruction_count() const {
  size_t n = 0;
  for (const auto& q : queues) n += q.instrs.size();
  return n;
}

size_t Program::wait_count() const {
  size_t n = 0;
  for (const auto& q : queues)
    for (const auto& in : q.instrs) n += in.waits.size();
  return n;
}

std::string drop_wait(Program& p, size_t n) {
  size_t k = 0;
  for (auto& q : p.queues)
    for (size_t i = 0; i < q.instrs.size(); ++i) {
      auto& w = q.instrs[i].waits;
      if (n >= k + w.size()) {
        k += w.size();
        continue;
      }
      const SemWait gone = w[n - k];
      w.erase(w.begin() + long(n - k));
      return q.label() + " instruction " + std::to_string(i) +
             (q.instrs[i].line ? " (line " + std::to_string(q.instrs[i].line) + ")" : "") +
             ": wait s" + std::to_string(gone.sem) + ">=" + std::to_string(gone.value);
    }
  throw std::out_of_range("drop-sync " + std::to_string(n) + ": program '" + p.name + "' has " +
                          std::to_string(k) + " semaphore waits (0.." +
                          std::to_string(k ? k - 1 : 0) + ")");
}

}  // namespace trnsim::isa
