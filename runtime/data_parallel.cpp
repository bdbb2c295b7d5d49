#include "runtime/data_parallel.h"

#include <algorithm>

#include "compiler/ir/error.h"
#include "runtime/device.h"

namespace trnsim::runtime {

ir::Graph import_batch_split(const std::string& path, const frontend::ImportOptions& opts) {
  try {
    return frontend::import_onnx_file(path, opts);
  } catch (const ir::CompileError& e) {
    // Inputs that D does not divide fail with their own message; a node failing
    // on the smaller batch most likely holds the whole batch in a constant.
    const std::string m = e.what();
    if (m.find("--dp ") != std::string::npos) throw;
    throw RunError(m + "\n(--dp " + std::to_string(opts.batch_split) +
                   " compiles the model for batch / " + std::to_string(opts.batch_split) +
                   "; a model whose nodes fix the whole batch, e.g. a Reshape to a constant "
                   "shape, needs an export with a dynamic batch axis)");
  }
}

HostTensor batch_slice(const HostTensor& t, uint32_t part, uint32_t parts) {
  if (t.shape.empty() || t.shape[0] % int64_t(parts) != 0)
    throw RunError("--dp " + std::to_string(parts) + ": an input of shape " +
                   shape_string(t.shape) + " has no batch (dim 0) it divides");
  HostTensor s = t;
  s.shape[0] /= int64_t(parts);
  const size_t bytes = t.data.size() / parts;
  s.data.assign(t.data.begin() + int64_t(part * bytes),
                t.data.begin() + int64_t((part + 1) * bytes));
  return s;
}

isa::Program shift_groups(const isa::Program& p, uint32_t by) {
  isa::Program q = p;
  for (isa::Queue& qu : q.queues)
    for (isa::Instruction& in : qu.instrs)
      for (uint32_t& r : in.group) r += by;
  return q;
}

}  // namespace trnsim::runtime
