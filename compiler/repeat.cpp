#include "compiler/repeat.h"

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace trnsim::compiler {

namespace {

constexpr int64_t kSmallConstant = 64;

using ir::Node;
using ir::Value;

// A shift-invariant hash of node i: op, output types, and per input its kind and,
// for a node's output, the distance back to that node. Equal blocks have equal
// hashes position by position (except where block 0 reads what precedes the stack).
size_t node_hash(const Node& n, size_t i, const std::unordered_map<const Node*, size_t>& index) {
  size_t h = std::hash<std::string>()(n.op);
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(n.attrs.size());
  for (const Value* v : n.outputs) mix(v ? std::hash<std::string>()(v->type.str()) : 1);
  for (const Value* v : n.inputs) {
    if (!v) {
      mix(2);
    } else if (v->is_constant) {
      mix(3);
      mix(std::hash<std::string>()(v->type.str()));
    } else if (v->producer) {
      mix(4);
      mix(i - index.at(v->producer));
      mix(static_cast<size_t>(v->producer_output));
    } else {
      mix(5);
    }
  }
  return h;
}

bool same_constant(const Value* a, const Value* b) {
  if (a == b) return true;
  if (a->type != b->type) return false;
  if (ir::num_elements(a->type.shape) > kSmallConstant) return true;
  return a->has_data() && b->has_data() && *a->data == *b->data;
}

// Whether blocks [s1, s1 + len) and [s2, s2 + len) are equal (see the header).
bool same_block(const std::vector<const Node*>& nodes,
                const std::unordered_map<const Node*, size_t>& index, size_t s1, size_t s2,
                size_t len) {
  std::map<const Value*, size_t> ext1, ext2;  // outside values by order of first use
  auto inside = [&](const Value* v, size_t s) {
    if (!v->producer) return false;
    const size_t j = index.at(v->producer);
    return j >= s && j < s + len;
  };
  for (size_t t = 0; t < len; ++t) {
    const Node& a = *nodes[s1 + t];
    const Node& b = *nodes[s2 + t];
    if (a.op != b.op || a.attrs != b.attrs || a.outputs.size() != b.outputs.size() ||
        a.inputs.size() != b.inputs.size())
      return false;
    for (size_t k = 0; k < a.outputs.size(); ++k)
      if ((a.outputs[k] == nullptr) != (b.outputs[k] == nullptr) ||
          (a.outputs[k] && a.outputs[k]->type != b.outputs[k]->type))
        return false;
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      const Value* x = a.inputs[k];
      const Value* y = b.inputs[k];
      if (!x || !y) {
        if (x != y) return false;
        continue;
      }
      if (x->is_constant || y->is_constant) {
        if (!x->is_constant || !y->is_constant || !same_constant(x, y)) return false;
        continue;
      }
      const bool xi = inside(x, s1), yi = inside(y, s2);
      if (xi != yi) return false;
      if (xi) {
        if (index.at(x->producer) - s1 != index.at(y->producer) - s2 ||
            x->producer_output != y->producer_output)
          return false;
        continue;
      }
      if (x->type != y->type) return false;
      const size_t ox = ext1.emplace(x, ext1.size()).first->second;
      const size_t oy = ext2.emplace(y, ext2.size()).first->second;
      if (ox != oy) return false;
    }
  }
  return true;
}

}  // namespace

RepeatedBlocks find_repeated_blocks(const ir::Graph& g) {
  std::vector<const Node*> nodes;
  std::unordered_map<const Node*, size_t> index;
  for (const auto& n : g.nodes()) {
    index[n.get()] = nodes.size();
    nodes.push_back(n.get());
  }
  const size_t n = nodes.size();
  std::vector<size_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = node_hash(*nodes[i], i, index);
  RepeatedBlocks best;
  for (size_t len = 1; 2 * len <= n; ++len) {
    // Runs where h[i] == h[i + len]: a run of r such positions from a spans
    // (r + len) / len blocks of period len.
    for (size_t a = 0; a + len < n;) {
      if (h[a] != h[a + len]) {
        ++a;
        continue;
      }
      size_t r = 0;
      while (a + r + len < n && h[a + r] == h[a + r + len]) ++r;
      // Exact checks block by block along the run; a block that differs (a small
      // constant, an outside value) restarts the count after it. Each run found is
      // extended one block earlier while equal (block 0 may read the stack's input
      // where the others read a node).
      const size_t end = a + r + len;
      for (size_t start = a; start + 2 * len <= end;) {
        size_t count = 1;
        while (start + (count + 1) * len <= end &&
               same_block(nodes, index, start + (count - 1) * len, start + count * len, len))
          ++count;
        size_t first = start, total = count;
        while (total >= 2 && first >= len && same_block(nodes, index, first - len, first, len)) {
          first -= len;
          ++total;
        }
        // The hashes may match from mid-layer (the first layer's first node reads the
        // stack's input): shift the blocks earlier while they stay equal, then take
        // in the block that frees at the end.
        auto all_equal = [&](size_t s0, size_t cnt) {
          for (size_t b = 1; b < cnt; ++b)
            if (!same_block(nodes, index, s0 + (b - 1) * len, s0 + b * len, len)) return false;
          return true;
        };
        size_t d = 0;
        while (total >= 2 && d + 1 < len && first >= d + 1 && all_equal(first - d - 1, total)) ++d;
        first -= d;
        while (total >= 2 && first + (total + 1) * len <= n &&
               same_block(nodes, index, first + (total - 1) * len, first + total * len, len))
          ++total;
        if (total >= 2 && (total * len > best.count * best.nodes ||
                           (total * len == best.count * best.nodes && len < best.nodes)))
          best = {first, len, total};
        start += count * len;
      }
      a += r + 1;
    }
  }
  return best;
}

}  // namespace trnsim::compiler
