#include "models/common/access_checker.h"

#include <algorithm>
#include <sstream>

#include "models/isa/assembler.h"

namespace trnsim::models {

namespace {
constexpr int kHost = 0;  // agent 0: the host's writes before the run
constexpr uint64_t kPartShift = 32;

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}
}  // namespace

bool access_checker::cell::operator==(const cell& o) const {
  if (write.agent != o.write.agent || write.clk != o.write.clk || reads.size() != o.reads.size())
    return false;
  for (size_t i = 0; i < reads.size(); ++i)
    if (reads[i].agent != o.reads[i].agent || reads[i].clk != o.reads[i].clk) return false;
  return true;
}

void access_checker::begin_run() {
  agents_.clear();
  sems_.clear();
  mems_.clear();
  races_.clear();
  poisons_.clear();
  race_count_ = poison_count_ = 0;
  agents_.push_back({"host", nullptr, nullptr, false, {1}, 1, {}, 0, {}});
}

int access_checker::add_agent(std::string name, const void* core,
                              const std::vector<isa::Instruction>* instrs, bool pipelined) {
  if (agents_.empty()) begin_run();
  agent_state a{std::move(name), core, instrs, pipelined, {}, 0, {}, 0, {}};
  a.vc.assign(agents_.size() + 1, 0);
  a.vc[kHost] = 1;  // the host's writes happened before the launch
  agents_.push_back(std::move(a));
  return int(agents_.size() - 1);
}

void access_checker::host_written(uint64_t lo, uint64_t hi, const void* hbm) {
  if (lo >= hi) return;
  if (agents_.empty()) begin_run();
  shadow& m = mems_[{hbm, int(isa::MemSpace::hbm)}];
  split(m, lo);
  split(m, hi);
  m.erase(m.lower_bound(lo), m.lower_bound(hi));
  m.emplace(lo, segment{hi, cell{{kHost, 1}, {}}});
}

void access_checker::join(clock& into, const clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

void access_checker::acquire(int agent, const void* sems, uint16_t sem, uint32_t value) {
  if (value == 0) return;  // satisfied at launch: orders nothing
  auto it = sems_.find({sems, sem});
  if (it == sems_.end()) return;
  const auto& v = it->second;
  // The increment that brought the semaphore to `value` released this wait.
  auto e = std::lower_bound(v.begin(), v.end(), uint64_t(value),
                            [](const sem_entry& s, uint64_t x) { return s.total < x; });
  if (e != v.end()) join(agents_[agent].vc, e->vc);
}

void access_checker::issue(int agent, uint32_t pc) {
  agent_state& a = agents_[agent];
  if (a.vc.size() <= size_t(agent)) a.vc.resize(agent + 1, 0);
  a.vc[agent] = pc + 1;
  if (a.pipelined) {
    if (a.issued_head > 64 && a.issued_head * 2 > a.issued.size()) {
      a.issued.erase(a.issued.begin(), a.issued.begin() + long(a.issued_head));
      a.issued_head = 0;
    }
    a.issued.push_back(a.vc);
  }
}

void access_checker::complete(int agent) {
  agent_state& a = agents_[agent];
  ++a.completed;
  if (a.pipelined && a.issued_head < a.issued.size()) a.done_vc.swap(a.issued[a.issued_head++]);
}

void access_checker::release(int agent, const void* sems, uint16_t sem, uint32_t inc,
                             isa::SignalWhen when) {
  if (inc == 0) return;
  agent_state& a = agents_[agent];
  auto& v = sems_[{sems, sem}];
  sem_entry e{v.empty() ? inc : v.back().total + inc, v.empty() ? clock{} : v.back().vc};
  if (when == isa::SignalWhen::start) {
    // What has completed by now: for an in-order engine every earlier instruction.
    clock c = a.vc;
    if (c.size() <= size_t(agent)) c.resize(agent + 1, 0);
    c[agent] = a.completed;
    join(e.vc, c);
  } else {
    join(e.vc, a.pipelined ? a.done_vc : a.vc);
  }
  v.push_back(std::move(e));
}

bool access_checker::ordered(const epoch& e, int agent) const {
  return e.agent == agent || e.agent == kHost || e.clk <= at(agents_[agent].vc, e.agent);
}

access_checker::shadow& access_checker::memory_of(int agent, const isa::AccessPattern& ap,
                                                  std::string& name) {
  const agent_state& a = agents_[agent];
  if (ap.space == isa::MemSpace::hbm) {
    name = "hbm";
    const auto h = hbm_of_.find(a.core);
    return mems_[{h == hbm_of_.end() ? nullptr : h->second, int(isa::MemSpace::hbm)}];
  }
  // "chip.core0.vector" / "chip.core0.dma3.q1" -> "chip.core0.sbuf"
  const std::string& n = a.name;
  const size_t dot = n.find(".dma") != std::string::npos ? n.find(".dma") : n.rfind('.');
  name = n.substr(0, dot) + "." + std::string(isa::mem_space_name(ap.space));
  return mems_[{a.core, int(ap.space)}];
}

void access_checker::split(shadow& m, uint64_t at) {
  auto it = m.upper_bound(at);
  if (it == m.begin()) return;
  --it;
  if (it->first < at && at < it->second.end) {
    segment tail = it->second;
    it->second.end = at;
    m.emplace(at, std::move(tail));
  }
}

void access_checker::found_race(const epoch& first, char k0, int agent, char k1,
                                const std::string& mem, uint64_t part, uint64_t lo, uint64_t hi,
                                bool partitioned) {
  const uint32_t clk = agents_[agent].vc[agent];
  auto [it, added] = races_.try_emplace({first.agent, first.clk, agent, clk});
  race& r = it->second;
  if (added) {
    ++race_count_;
    r.kind0 = k0;
    r.kind1 = k1;
    r.seen = at(agents_[agent].vc, first.agent);
    r.mem = mem;
  }
  if (partitioned) r.parts.add(part, part + 1);
  r.bytes.add(lo, hi);
}

void access_checker::found_poison(int agent, const std::string& mem, uint64_t part, uint64_t lo,
                                  uint64_t hi, bool partitioned) {
  auto [it, added] = poisons_.try_emplace({agent, agents_[agent].vc[agent]});
  if (added) {
    ++poison_count_;
    it->second.mem = mem;
  }
  if (partitioned) it->second.parts.add(part, part + 1);
  it->second.bytes.add(lo, hi);
}

// Sorts byte runs and merges the ones that touch or overlap.
void access_checker::merge_runs(std::vector<std::pair<int64_t, int64_t>>& runs) {
  std::sort(runs.begin(), runs.end());
  size_t n = 0;
  for (const auto& r : runs) {
    if (n && r.first <= runs[n - 1].second)
      runs[n - 1].second = std::max(runs[n - 1].second, r.second);
    else
      runs[n++] = r;
  }
  runs.resize(n);
}

void access_checker::check_range(shadow& m, uint64_t lo, uint64_t hi, int agent, access_kind k,
                                 const std::string& mem, uint64_t part, bool partitioned) {
  const uint64_t base = partitioned ? part << kPartShift : 0;
  lo += base;
  hi += base;
  split(m, lo);
  split(m, hi);
  const bool reads = k != access_kind::write, writes = k != access_kind::read;
  const uint32_t clk = agents_[agent].vc[agent];
  // Walk [lo, hi): existing segments and the gaps between them (never accessed).
  uint64_t pos = lo;
  auto it = m.lower_bound(lo);
  while (pos < hi) {
    const bool gap = it == m.end() || it->first > pos;
    const uint64_t end = gap ? (it == m.end() ? hi : std::min(hi, it->first)) : it->second.end;
    if (gap) {
      if (reads && opts_.poison)
        found_poison(agent, mem, part, pos - base, end - base, partitioned);
      cell c;
      if (writes)
        c.write = {agent, clk};
      else
        c.reads.push_back({agent, clk});
      it = m.emplace_hint(it, pos, segment{end, std::move(c)});
      ++it;
      pos = end;
      continue;
    }
    cell& c = it->second.c;
    if (reads && c.write.agent < 0 && opts_.poison)  // read before: still never written
      found_poison(agent, mem, part, pos - base, end - base, partitioned);
    if (opts_.races) {
      if (c.write.agent >= 0 && !ordered(c.write, agent))
        found_race(c.write, 'W', agent, writes && !reads ? 'W' : 'R', mem, part, pos - base,
                   end - base, partitioned);
      if (writes)
        for (const epoch& r : c.reads)
          if (!ordered(r, agent))
            found_race(r, 'R', agent, 'W', mem, part, pos - base, end - base, partitioned);
    }
    if (writes) {
      c.write = {agent, clk};
      c.reads.clear();
    } else {
      auto r = std::find_if(c.reads.begin(), c.reads.end(),
                            [&](const epoch& e) { return e.agent == agent; });
      if (r != c.reads.end())
        r->clk = clk;
      else
        c.reads.push_back({agent, clk});
    }
    pos = end;
    ++it;
  }
  // Keep the map small: merge touching segments with equal history, from the one
  // before the range to the one starting at its end (a write leaves one state over the
  // whole range; overlapping reads by one agent usually leave equal neighbours).
  auto cur = m.lower_bound(lo);
  if (cur != m.begin()) --cur;
  while (cur != m.end() && cur->first <= hi) {
    auto next = std::next(cur);
    if (next != m.end() && next->first == cur->second.end && next->second.c == cur->second.c) {
      cur->second.end = next->second.end;
      m.erase(next);
    } else {
      cur = next;
    }
  }
}

void access_checker::access(int agent, const isa::AccessPattern& ap, uint64_t hbm_base,
                            access_kind k) {
  if (agent <= 0 || ap.partition_count == 0 || ap.free_elems() == 0) return;
  std::string mem;
  shadow& m = memory_of(agent, ap, mem);
  const int64_t es = int64_t(isa::dtype_size(ap.dtype));
  // Byte runs of one row relative to the row start, ascending and merged.
  runs_.clear();
  if (ap.free_contiguous()) {
    const int64_t b = ap.free_min_byte();
    runs_.emplace_back(b, b + int64_t(ap.free_elems()) * es);
  } else {
    isa::for_each_free(ap, [&](uint64_t, int64_t off) {
      if (!runs_.empty() && runs_.back().second == off)
        runs_.back().second += es;
      else
        runs_.emplace_back(off, off + es);
    });
    merge_runs(runs_);
  }
  if (ap.space != isa::MemSpace::hbm) {
    for (uint32_t p = ap.partition_start; p < ap.partition_start + ap.partition_count; ++p)
      for (const auto& [a, b] : runs_)
        check_range(m, uint64_t(int64_t(ap.offset) + a), uint64_t(int64_t(ap.offset) + b), agent, k,
                    mem, p, true);
    return;
  }
  // HBM rows: all rows' runs merged (a column-wise transpose covers a dense block).
  const uint32_t rows = ap.partition_stride == 0 ? 1 : ap.partition_count;
  const int64_t start = int64_t(hbm_base + ap.offset);
  std::vector<std::pair<int64_t, int64_t>> all;
  all.reserve(size_t(rows) * runs_.size());
  for (uint32_t r = 0; r < rows; ++r) {
    const int64_t row = start + int64_t(r) * ap.partition_stride * es;
    for (const auto& [a, b] : runs_) all.emplace_back(row + a, row + b);
  }
  merge_runs(all);
  for (const auto& [a, b] : all) check_range(m, uint64_t(a), uint64_t(b), agent, k, mem, 0, false);
}

std::string access_checker::describe(int agent, uint32_t clk) const {
  const agent_state& a = agents_[agent];
  if (agent == kHost) return "host";
  std::string s = a.name + " instruction " + std::to_string(clk - 1);
  if (a.instrs && clk >= 1 && clk - 1 < a.instrs->size()) {
    const isa::Instruction& in = (*a.instrs)[clk - 1];
    if (in.line) s += " (line " + std::to_string(in.line) + ")";
    s += ": " + isa::disassemble(in);
  }
  return s;
}

std::string access_checker::missing_edge(const epoch& first, int agent, uint32_t clk,
                                         uint32_t seen) const {
  const agent_state& f = agents_[first.agent];
  const agent_state& a = agents_[agent];
  std::string s = "missing edge: " + f.name + " instruction " + std::to_string(first.clk - 1) +
                  " -> " + a.name + " instruction " + std::to_string(clk - 1) + " (";
  s += seen ? a.name + " is ordered after " + f.name + " instructions 0.." +
                  std::to_string(seen - 1) + " only"
            : "no semaphore wait orders " + a.name + " after anything " + f.name + " did";
  // Which semaphores would carry the edge.
  std::string sigs;
  if (f.instrs)
    for (uint32_t i = first.clk - 1; i < f.instrs->size() && sigs.empty(); ++i)
      for (const auto& g : (*f.instrs)[i].signals) {
        sigs += (sigs.empty() ? "" : ", ") + std::string("s") + std::to_string(g.sem) + "+" +
                std::to_string(g.inc) + (g.when == isa::SignalWhen::start ? "@start" : "@done");
        if (i != first.clk - 1) sigs += " (at its instruction " + std::to_string(i) + ")";
      }
  s += sigs.empty() ? "; it signals no semaphore after it)"
                    : "; a wait on what it signals, " + sigs + ", would order them)";
  return s;
}

std::string access_checker::report(size_t max) const {
  std::ostringstream o;
  auto where = [](const std::string& mem, const range& parts, const range& bytes) {
    std::string s = mem;
    if (parts.hi > 0)
      s += " partitions " + std::to_string(parts.lo) + ".." + std::to_string(parts.hi - 1) +
           " bytes " + std::to_string(bytes.lo) + ".." + std::to_string(bytes.hi - 1);
    else
      s += " bytes " + hex(bytes.lo) + ".." + hex(bytes.hi - 1);
    return s;
  };
  size_t n = 0;
  for (const auto& [key, r] : races_) {
    if (n++ == max) {
      o << "... and " << races_.size() - max << " more races\n";
      break;
    }
    const auto& [a0, c0, a1, c1] = key;
    const char* what = r.kind0 == 'W' && r.kind1 == 'R'   ? "read after write"
                       : r.kind0 == 'R' && r.kind1 == 'W' ? "write after read"
                                                          : "write after write";
    o << "race (" << what << ") on " << where(r.mem, r.parts, r.bytes) << "\n"
      << "  first:  " << describe(a0, c0) << "\n"
      << "  second: " << describe(a1, c1) << "\n"
      << "  " << missing_edge({a0, c0}, a1, c1, r.seen) << "\n";
  }
  n = 0;
  for (const auto& [key, p] : poisons_) {
    if (n++ == max) {
      o << "... and " << poisons_.size() - max << " more poisoned reads\n";
      break;
    }
    o << "poisoned read of never-written " << where(p.mem, p.parts, p.bytes) << "\n"
      << "  by " << describe(key.first, key.second) << "\n";
  }
  return o.str();
}

}  // namespace trnsim::models
