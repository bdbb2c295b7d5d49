#include "runtime/tp_io.h"

#include "runtime/device.h"

namespace trnsim::runtime {

namespace {

// Elements before `axis` (outer) and bytes of one index of it (inner).
std::pair<int64_t, size_t> outer_inner(const HostTensor& t, int axis) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= t.shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < t.shape.size(); ++i) inner *= t.shape[i];
  return {outer, size_t(inner) * isa::dtype_size(t.dtype)};
}

const ModelIo* find_io(const std::vector<ModelIo>& ios, const std::string& name) {
  for (const ModelIo& m : ios)
    if (m.name == name || m.tensor == name) return &m;
  return nullptr;
}

}  // namespace

HostTensor axis_slice(const HostTensor& t, int axis, uint32_t part, uint32_t parts,
                      const std::string& what) {
  if (axis < 0 || size_t(axis) >= t.shape.size() || t.shape[size_t(axis)] % int64_t(parts) != 0)
    throw RunError("--tp " + std::to_string(parts) + ": " + what + " of shape " +
                   shape_string(t.shape) + " does not split into " + std::to_string(parts) +
                   " along axis " + std::to_string(axis));
  const auto [outer, inner] = outer_inner(t, axis);
  const int64_t len = t.shape[size_t(axis)], n = len / int64_t(parts);
  HostTensor s;
  s.shape = t.shape;
  s.shape[size_t(axis)] = n;
  s.dtype = t.dtype;
  s.data.reserve(size_t(outer * n) * inner);
  for (int64_t o = 0; o < outer; ++o) {
    const auto from = t.data.begin() + int64_t((size_t(o * len) + part * size_t(n)) * inner);
    s.data.insert(s.data.end(), from, from + int64_t(size_t(n) * inner));
  }
  return s;
}

HostTensor axis_concat(const std::vector<const HostTensor*>& parts, int axis) {
  HostTensor r;
  r.shape = parts.at(0)->shape;
  r.dtype = parts[0]->dtype;
  r.shape[size_t(axis)] = 0;
  for (const HostTensor* p : parts) r.shape[size_t(axis)] += p->shape.at(size_t(axis));
  const auto [outer, inner] = outer_inner(*parts[0], axis);
  r.data.reserve(size_t(r.elems()) * isa::dtype_size(r.dtype));
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor* p : parts) {
      const size_t chunk = size_t(p->shape[size_t(axis)]) * inner;
      const auto from = p->data.begin() + int64_t(size_t(o) * chunk);
      r.data.insert(r.data.end(), from, from + int64_t(chunk));
    }
  return r;
}

void split_tp_inputs(std::vector<std::map<std::string, HostTensor>>& inputs, uint32_t tp,
                     const graph_passes::TensorParallelSplit& split,
                     const std::vector<ModelIo>& model_in) {
  for (const auto& [name, axis] : split.inputs) {
    const ModelIo* io = find_io(model_in, name);
    if (!io) continue;
    const int64_t whole = io->type.shape.at(size_t(axis));
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto it = inputs[k].find(io->tensor);
      if (it == inputs[k].end() || size_t(axis) >= it->second.shape.size() ||
          it->second.shape[size_t(axis)] != whole)
        continue;
      it->second = axis_slice(it->second, axis, uint32_t(k % tp), tp, "input '" + name + "'");
    }
  }
}

void gather_tp_outputs(std::vector<std::map<std::string, HostTensor>>& outputs, uint32_t tp,
                       const graph_passes::TensorParallelSplit& split,
                       const std::vector<ModelIo>& model_out) {
  for (const auto& [name, axis] : split.outputs) {
    const ModelIo* io = find_io(model_out, name);
    if (!io) continue;
    for (size_t first = 0; first + tp <= outputs.size(); first += tp) {
      std::vector<const HostTensor*> parts;
      for (size_t k = first; k < first + tp; ++k) {
        auto it = outputs[k].find(io->tensor);
        if (it == outputs[k].end()) break;
        parts.push_back(&it->second);
      }
      if (parts.size() != tp) continue;
      const HostTensor whole = axis_concat(parts, axis);
      for (size_t k = first; k < first + tp; ++k) outputs[k][io->tensor] = whole;
    }
  }
}

}  // namespace trnsim::runtime
