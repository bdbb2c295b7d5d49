#include "compiler/reuse.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/ir/error.h"
#include "compiler/lower/lower.h"
#include "compiler/partition.h"
#include "compiler/passes/pass.h"
#include "compiler/timings.h"

namespace trnsim::compiler {

namespace {

bool g_reuse = true;

using tile::Kernel;
using tile::QueueId;

// Tile passes named by --print-after (graph pass names are the graph pipeline's).
std::vector<std::string> tile_dumps(const CompileOnnxOptions& o) {
  std::vector<std::string> d;
  for (const std::string& p : o.print_after) {
    bool tile = p == "*";
    for (const passes::PassInfo* q : passes::all_passes()) tile = tile || q->name == p;
    if (tile) d.push_back(p);
  }
  return d;
}

// The tile passes on a lowered piece, as codegen::compile runs them; the pass
// figures are added to *stats.
void run_tile_passes(Kernel& k, const CompileOnnxOptions& o, std::string* dump_text,
                     std::map<std::string, double>& stats) {
  passes::PassContext ctx;
  ctx.target = o.target;
  ctx.dump_after = tile_dumps(o);
  ctx.dump = o.dump ? o.dump : [dump_text](const std::string& pass, const std::string& t) {
    if (dump_text) *dump_text += graph_passes::dump_header(pass) + "\n" + t;
  };
  std::vector<std::string> names = passes::default_pipeline();
  if (!o.keep_on_chip) std::erase(names, std::string(passes::keep_on_chip_pass().name));
  // alloc_hbm runs per piece: its scratch placement within the piece is kept as one
  // region the linker places (Linker::finish); its other offsets are laid out again.
  {
    timings::Scope tv("tile.verify");
    tile::verify(k);
  }
  passes::run_passes(k, ctx, names);
  for (const auto& [name, v] : ctx.stats) stats[name] += v;
}

// Whether two lowered kernels are the same program but for tensor names and
// constant data: same ops, tiles, pools and tensor shapes, types and roles.
bool same_lowering(const Kernel& a, const Kernel& b) {
  if (a.ops.size() != b.ops.size() || a.tensors.size() != b.tensors.size() ||
      a.tiles.size() != b.tiles.size() || a.pools.size() != b.pools.size())
    return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const tile::Tensor &x = a.tensors[i], &y = b.tensors[i];
    if (x.shape != y.shape || x.dtype != y.dtype || x.role != y.role) return false;
  }
  for (size_t i = 0; i < a.pools.size(); ++i)
    if (a.pools[i].space != b.pools[i].space || a.pools[i].bufs != b.pools[i].bufs) return false;
  for (size_t i = 0; i < a.tiles.size(); ++i) {
    const tile::Tile &x = a.tiles[i], &y = b.tiles[i];
    if (x.pool != y.pool || x.shape != y.shape || x.dtype != y.dtype || x.slot != y.slot)
      return false;
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const tile::Op &x = a.ops[i], &y = b.ops[i];
    if (!(x.ins == y.ins) || x.ref != y.ref || x.engine != y.engine ||
        x.engine_auto != y.engine_auto || x.pinned != y.pinned || x.dma_engine != y.dma_engine ||
        x.dma_queue != y.dma_queue || x.dma_pinned != y.dma_pinned || x.node != y.node)
      return false;
  }
  return true;
}

// A lowered kernel without its constant data: what later blocks are compared with.
Kernel shape_of(const Kernel& k) {
  Kernel s;
  s.name = k.name;
  s.pools = k.pools;
  s.tiles = k.tiles;
  s.ops = k.ops;
  for (const tile::Tensor& t : k.tensors) {
    tile::Tensor c;
    c.name = t.name;
    c.shape = t.shape;
    c.dtype = t.dtype;
    c.role = t.role;
    s.tensors.push_back(std::move(c));
  }
  return s;
}

// Links pieces (kernels after the tile passes) into one kernel; see reuse.h.
class Linker {
 public:
  Linker(const ir::Graph& g, std::string name, uint64_t hbm_alignment)
      : align_(std::max<uint64_t>(1, hbm_alignment)) {
    m_.name = std::move(name);
    io_ = lower::io_tensor_names(g);
    for (const auto& [value, tensor] : io_) used_.insert(tensor);
    for (const ir::Value* v : g.inputs()) inputs_.insert(v->name);
    for (const ir::Value* v : g.outputs()) outputs_.insert(v->name);
  }

  // Appends one piece: `tmpl`'s ops, pools and tiles, with `tensors`
  // (the piece's own, index for index `tmpl`'s) and `tensor_value` (the piece's input
  // and output tensors' graph values). `node_offset`: the piece's first node in g.
  // `tile_base`: the first tile of `tmpl`'s tiles already added (a block reused),
  // or -1 to add them; returns it.
  int append(const Kernel& tmpl, std::vector<tile::Tensor> tensors,
             const std::map<std::string, std::string>& tensor_value, int node_offset,
             int tile_base = -1) {
    const int piece = pieces_++;
    // The piece's scratch tensors alloc_hbm placed: one region, live in this piece.
    int64_t lo = -1;
    uint64_t hi = 0;
    for (const tile::Tensor& t : tensors)
      if (t.role == isa::TensorRole::scratch && t.hbm_offset >= 0) {
        lo = lo < 0 ? t.hbm_offset : std::min(lo, t.hbm_offset);
        hi = std::max(hi, uint64_t(t.hbm_offset) + t.bytes());
      }
    const int region = lo < 0 ? -1 : static_cast<int>(regions_.size());
    if (region >= 0) regions_.push_back({hi - uint64_t(lo), piece});
    std::vector<int> tmap(tensors.size());
    for (size_t j = 0; j < tensors.size(); ++j) {
      tile::Tensor& t = tensors[j];
      auto it = t.role == isa::TensorRole::input || t.role == isa::TensorRole::output
                    ? tensor_value.find(t.name)
                    : tensor_value.end();
      if (it != tensor_value.end()) {
        tmap[j] = value_tensor(it->second, t);
        auto [l, fresh] = value_life_.try_emplace(tmap[j], piece, piece);
        if (!fresh) l->second.second = piece;
        continue;
      }
      t.name = lower::tensor_name(t.name, used_);
      tmap[j] = static_cast<int>(m_.tensors.size());
      if (t.role == isa::TensorRole::scratch && t.hbm_offset >= 0)
        in_region_[tmap[j]] = {region, uint64_t(t.hbm_offset - lo)};
      else if (t.role == isa::TensorRole::scratch)
        value_life_[tmap[j]] = {piece, piece};  // not placed by alloc_hbm: a block alone
      t.hbm_offset = -1;
      m_.tensors.push_back(std::move(t));
    }
    if (tile_base < 0) {
      const int pool_base = static_cast<int>(m_.pools.size());
      tile_base = static_cast<int>(m_.tiles.size());
      for (const tile::Pool& p : tmpl.pools) m_.pools.push_back(p);
      for (tile::Tile t : tmpl.tiles) {
        t.pool += pool_base;
        m_.tiles.push_back(std::move(t));
      }
    }

    // The piece's semaphores by queue, and each queue's first and last op.
    std::map<int, QueueId> sem_queue;
    std::map<QueueId, size_t> first, last;
    std::map<QueueId, uint32_t> signals;
    for (size_t i = 0; i < tmpl.ops.size(); ++i) {
      const tile::Op& op = tmpl.ops[i];
      const QueueId q = tile::queue_of(op);
      first.emplace(q, i);
      last[q] = i;
      for (const isa::SemSignal& s : op.ins.signals) {
        sem_queue[s.sem] = q;
        signals[q] += s.inc;
      }
    }
    if (tmpl.ops.empty()) return tile_base;
    // The barrier: a nop on the sync queue waits for every queue of the piece before;
    // each queue's first op here waits for it (2n waits rather than n x n).
    const QueueId hub{isa::Engine::sync};
    uint32_t hub_value = 0;
    if (!barrier_.empty()) {
      tile::Op nop;
      nop.id = next_id_++;
      nop.engine = isa::Engine::sync;
      nop.ins.op = isa::Opcode::nop;
      for (const auto& [from, value] : barrier_)
        if (from != hub) nop.ins.waits.push_back({sem_of(from), value});
      nop.ins.signals.push_back({sem_of(hub), 1, isa::SignalWhen::done});
      hub_value = ++base_[hub];
      m_.ops.push_back(std::move(nop));
    }
    std::map<QueueId, uint32_t> added;  // barrier signals this piece adds per queue
    for (size_t i = 0; i < tmpl.ops.size(); ++i) {
      tile::Op op = tmpl.ops[i];
      const QueueId q = tile::queue_of(op);
      if (auto o = tmpl.op_origin.find(op.id); o != tmpl.op_origin.end())
        m_.op_origin[next_id_] = o->second;
      op.id = next_id_++;
      if (op.node >= 0) op.node += node_offset;
      for (int s = 0; s < tile::kNumSlots; ++s) {
        isa::AccessPattern* ap = tile::slot_ap(op.ins, static_cast<tile::Slot>(s));
        if (!ap || op.ref[s] < 0) continue;
        op.ref[s] =
            ap->space == isa::MemSpace::hbm ? tmap[size_t(op.ref[s])] : op.ref[s] + tile_base;
      }
      for (isa::SemWait& w : op.ins.waits) {
        const QueueId& from = sem_queue.at(w.sem);
        w.sem = sem_of(from);
        w.value += base_[from];
      }
      for (isa::SemSignal& s : op.ins.signals) s.sem = sem_of(q);
      if (first.at(q) == i && hub_value > 0 && q != hub) {  // the hub's queue runs in order
        const uint16_t sem = sem_of(hub);
        auto w = std::find_if(op.ins.waits.begin(), op.ins.waits.end(),
                              [&](const isa::SemWait& x) { return x.sem == sem; });
        if (w == op.ins.waits.end())
          op.ins.waits.push_back({sem, hub_value});
        else
          w->value = std::max(w->value, hub_value);
      }
      if (last.at(q) == i && op.ins.signals.empty()) {
        op.ins.signals.push_back({sem_of(q), 1, isa::SignalWhen::done});
        added[q] = 1;
      }
      m_.ops.push_back(std::move(op));
    }
    barrier_.clear();
    for (const auto& [q, i] : last) {
      base_[q] += signals[q] + added[q];
      barrier_[q] = base_[q];
    }
    return tile_base;
  }

  size_t semaphores() const { return sem_.size(); }
  bool has_value(const std::string& value) const { return by_value_.count(value) > 0; }

  // The linked kernel with every tensor placed in HBM: inputs, outputs and constants
  // apart, in tensor order; then the scratch blocks (each piece's region and each
  // scratch value passed between pieces), where a block reuses the bytes of blocks
  // whose last piece comes before its first. No semaphore is needed for that: the
  // barrier between consecutive pieces makes every queue's first op of a piece wait
  // (through the sync nop) for every queue's last op of the piece before, queues
  // complete their ops in order, and a queue with no op in a piece is ordered through
  // the queues that have one (each of those waited for the previous barrier). So
  // every access of piece p precedes every access of any later piece.
  Kernel finish() {
    m_.semaphores = static_cast<uint32_t>(sem_.size());
    auto round_up = [&](uint64_t v) { return (v + align_ - 1) / align_ * align_; };
    uint64_t at = 0;
    for (size_t t = 0; t < m_.tensors.size(); ++t) {
      tile::Tensor& tt = m_.tensors[t];
      if (tt.role == isa::TensorRole::scratch) continue;
      at = round_up(at);
      tt.hbm_offset = static_cast<int64_t>(at);
      at += tt.bytes();
    }
    const uint64_t base = round_up(at);
    std::vector<passes::HbmBlock> blocks;
    for (const auto& [size, piece] : regions_)
      blocks.push_back({round_up(size), piece, piece, -1, -1, 0});
    std::vector<int> value_block;  // block index regions_.size() + i: this tensor
    for (const auto& [t, life] : value_life_) {
      if (m_.tensors[size_t(t)].role != isa::TensorRole::scratch) continue;
      blocks.push_back(
          {round_up(m_.tensors[size_t(t)].bytes()), life.first, life.second, -1, -1, 0});
      value_block.push_back(t);
    }
    for (const tile::Tensor& tt : m_.tensors)
      if (tt.role == isa::TensorRole::scratch) scratch_unshared_ += round_up(tt.bytes());
    blocks = passes::place_hbm_blocks(std::move(blocks), align_);
    high_ = at;
    auto place = [&](int t, uint64_t addr) {
      tile::Tensor& tt = m_.tensors[size_t(t)];
      tt.hbm_offset = static_cast<int64_t>(base + addr);
      high_ = std::max(high_, base + addr + tt.bytes());
    };
    for (const auto& [t, r] : in_region_) place(t, blocks[size_t(r.first)].addr + r.second);
    for (size_t i = 0; i < value_block.size(); ++i)
      place(value_block[i], blocks[regions_.size() + i].addr);
    scratch_ = high_ > base ? high_ - base : 0;
    return std::move(m_);
  }

  // After finish(): the program's HBM footprint, its scratch part and what the
  // scratch tensors would take without sharing.
  uint64_t hbm_bytes() const { return high_; }
  uint64_t scratch_bytes() const { return scratch_; }
  uint64_t scratch_unshared_bytes() const { return scratch_unshared_; }

 private:
  // The one tensor of graph value `value` (made on its first use from `t`).
  int value_tensor(const std::string& value, const tile::Tensor& t) {
    if (auto it = by_value_.find(value); it != by_value_.end()) {
      const tile::Tensor& have = m_.tensors[size_t(it->second)];
      if (have.shape != t.shape || have.dtype != t.dtype)
        throw ir::CompileError("linking repeated blocks: value '" + value +
                               "' has two tensor types");
      return it->second;
    }
    tile::Tensor n;
    auto io = io_.find(value);
    n.name = io != io_.end() ? io->second : lower::tensor_name(value, used_);
    n.shape = t.shape;
    n.dtype = t.dtype;
    n.role = inputs_.count(value)    ? isa::TensorRole::input
             : outputs_.count(value) ? isa::TensorRole::output
                                     : isa::TensorRole::scratch;
    const int idx = static_cast<int>(m_.tensors.size());
    m_.tensors.push_back(std::move(n));
    by_value_[value] = idx;
    return idx;
  }

  uint16_t sem_of(const QueueId& q) {
    return static_cast<uint16_t>(sem_.emplace(q, sem_.size()).first->second);
  }

  Kernel m_;
  std::map<std::string, std::string> io_;  // graph value -> program tensor name
  std::set<std::string> used_, inputs_, outputs_;
  std::map<std::string, int> by_value_;
  std::map<QueueId, size_t> sem_;        // semaphore per queue
  std::map<QueueId, uint32_t> base_;     // signals per queue so far
  std::map<QueueId, uint32_t> barrier_;  // the last piece's queues: value at its end
  int next_id_ = 0;
  uint64_t align_ = 1;
  int pieces_ = 0;
  std::vector<std::pair<uint64_t, int>> regions_;      // (bytes, piece) per piece's scratch
  std::map<int, std::pair<int, uint64_t>> in_region_;  // tensor -> (region, offset in it)
  std::map<int, std::pair<int, int>> value_life_;      // tensor -> first and last piece
  uint64_t high_ = 0, scratch_ = 0, scratch_unshared_ = 0;
};

// A piece's input and output tensors -> their graph values.
std::map<std::string, std::string> tensor_values(const ir::Graph& seg) {
  std::map<std::string, std::string> r;
  for (const auto& [value, tensor] : lower::io_tensor_names(seg)) r[tensor] = value;
  return r;
}

}  // namespace

void set_reuse_blocks(bool on) {
  g_reuse = on;
}
bool reuse_blocks() {
  return g_reuse;
}

std::optional<isa::Program> generate_reusing_blocks(ir::Graph& g, const RepeatedBlocks& rb,
                                                    const CompileOnnxOptions& o,
                                                    std::string* dump_text,
                                                    std::map<std::string, double>* stats,
                                                    ProgramRoofline* roofline) {
  if (rb.count < 2) return std::nullopt;
  // Outputs no node computes (an input, a constant) are lowered with the whole graph.
  for (const ir::Value* v : g.outputs())
    if (v->is_graph_input || v->is_constant) return std::nullopt;
  // Value names must be unique: pieces are linked by them.
  {
    std::set<std::string> names;
    for (const auto& v : g.values())
      if (!names.insert(v->name).second) return std::nullopt;
  }
  const size_t n = g.num_nodes();
  const size_t stack_end = rb.start + rb.count * rb.nodes;
  std::map<std::string, double> st;
  std::set<std::string> used;
  Linker link(g, g.name.empty() ? "graph" : lower::tensor_name(g.name, used),
              o.target.hbm_alignment);

  // A piece compiled on its own.
  auto own = [&](size_t begin, size_t end) {
    const LentSegment lent(g, begin, end);
    const ir::Graph& seg = lent.graph();
    Kernel k = [&] {
      timings::Scope t("lower");
      return lower::lower_graph(seg, o.target);
    }();
    run_tile_passes(k, o, dump_text, st);
    timings::Scope t("reuse.link");
    std::vector<tile::Tensor> tensors = std::move(k.tensors);
    k.tensors.clear();
    link.append(k, std::move(tensors), tensor_values(seg), static_cast<int>(begin));
  };

  if (rb.start > 0) own(0, rb.start);
  // Block 0 through the passes; later blocks reuse its ops where they lower alike.
  Kernel tmpl, shape;
  std::map<std::string, double> block_stats;
  double compiled = 1, reused = 0;
  int tmpl_tiles = -1;
  std::vector<size_t> tmpl_index;    // tmpl's tensors' indices in the lowered block
  std::vector<int64_t> tmpl_offset;  // and their offsets from alloc_hbm
  {
    const LentSegment lent(g, rb.start, rb.start + rb.nodes);
    const ir::Graph& seg = lent.graph();
    tmpl = [&] {
      timings::Scope t("lower");
      return lower::lower_graph(seg, o.target);
    }();
    shape = shape_of(tmpl);
    run_tile_passes(tmpl, o, dump_text, block_stats);
    // alloc_hbm drops tensors no op touches: each tensor left, by name, is the
    // lowered block's tensor of that index in a later block.
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < shape.tensors.size(); ++i)
      if (!index.emplace(shape.tensors[i].name, i).second)
        throw ir::CompileError("reusing blocks: two tensors named '" + shape.tensors[i].name + "'");
    for (const tile::Tensor& t : tmpl.tensors) {
      auto it = index.find(t.name);
      if (it == index.end())
        throw ir::CompileError("reusing blocks: the tile passes added tensor '" + t.name + "'");
      tmpl_index.push_back(it->second);
      tmpl_offset.push_back(t.hbm_offset);
    }
    timings::Scope t("reuse.link");
    std::vector<tile::Tensor> tensors = std::move(tmpl.tensors);
    tmpl.tensors.clear();
    tmpl_tiles =
        link.append(tmpl, std::move(tensors), tensor_values(seg), static_cast<int>(rb.start));
  }
  for (const auto& [k, v] : block_stats) st[k] += v;
  for (size_t b = 1; b < rb.count; ++b) {
    const size_t begin = rb.start + b * rb.nodes;
    const LentSegment lent(g, begin, begin + rb.nodes);
    const ir::Graph& seg = lent.graph();
    Kernel k = [&] {
      timings::Scope t("reuse.lower_block");
      return lower::lower_graph(seg, o.target);
    }();
    bool same;
    {
      timings::Scope t("reuse.compare");
      same = same_lowering(k, shape);
    }
    if (!same) {
      ++compiled;
      run_tile_passes(k, o, dump_text, st);
      timings::Scope t("reuse.link");
      std::vector<tile::Tensor> tensors = std::move(k.tensors);
      k.tensors.clear();
      link.append(k, std::move(tensors), tensor_values(seg), static_cast<int>(begin));
      continue;
    }
    ++reused;
    for (const auto& [key, v] : block_stats) st[key] += v;
    timings::Scope t("reuse.link");
    std::vector<tile::Tensor> tensors;
    tensors.reserve(tmpl_index.size());
    for (size_t j = 0; j < tmpl_index.size(); ++j) {
      tensors.push_back(std::move(k.tensors[tmpl_index[j]]));
      tensors.back().hbm_offset = tmpl_offset[j];
    }
    link.append(tmpl, std::move(tensors), tensor_values(seg), static_cast<int>(begin), tmpl_tiles);
  }
  if (stack_end < n) own(stack_end, n);
  if (link.semaphores() > o.target.semaphores) return std::nullopt;
  // Every graph input keeps its tensor, read or not (the runtime binds them by name).
  for (const ir::Value* v : g.inputs())
    if (!link.has_value(v->name)) return std::nullopt;

  Kernel merged = link.finish();
  // The pieces' alloc_hbm figures, summed, do not describe the linked program.
  st["alloc_hbm.bytes"] = static_cast<double>(link.hbm_bytes());
  st["alloc_hbm.scratch_bytes"] = static_cast<double>(link.scratch_bytes());
  st["alloc_hbm.scratch_unshared_bytes"] = static_cast<double>(link.scratch_unshared_bytes());
  isa::Program p = [&] {
    timings::Scope t("codegen");
    return codegen::generate_owning(merged, o.target);
  }();
  if (roofline) {
    timings::Scope t("roofline");
    *roofline = analyse_roofline(g, merged, p);
  }
  st["repeat.compiled_blocks"] = compiled;
  st["repeat.reused_blocks"] = reused;
  if (stats)
    for (const auto& [k, v] : st) (*stats)[k] += v;
  return p;
}

}  // namespace trnsim::compiler
