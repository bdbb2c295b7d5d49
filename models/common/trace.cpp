#include "models/common/trace.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>

#include "models/common/stats.h"
#include "models/isa/assembler.h"

namespace trnsim::trace {

namespace {

// Picoseconds per tick of the SystemC time resolution (1 unless changed).
uint64_t ps_per_tick() {
  return static_cast<uint64_t>(std::llround(sc_core::sc_get_time_resolution().to_seconds() * 1e12));
}

// `ps` as microseconds with exactly six decimals: integer arithmetic, so the text
// is the same on every host.
std::string us_text(uint64_t ps) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRIu64 ".%06" PRIu64, ps / 1000000, ps % 1000000);
  return buf;
}
std::string ns_text(uint64_t ps) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03" PRIu64, ps / 1000, ps % 1000);
  return buf;
}

std::string quoted(const std::string& s) {
  return "\"" + stats::json_escape(s) + "\"";
}

// VCD identifiers: base-94 over the printable characters '!'..'~'.
std::string vcd_id(size_t n) {
  std::string s;
  do {
    s += static_cast<char>('!' + n % 94);
    n /= 94;
  } while (n);
  return s;
}

std::string binary(uint32_t v) {
  if (v == 0) return "0";
  std::string s;
  for (; v; v >>= 1) s += (v & 1) ? '1' : '0';
  std::reverse(s.begin(), s.end());
  return s;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts;
  size_t b = 0;
  for (size_t e; (e = s.find('.', b)) != std::string::npos; b = e + 1)
    parts.push_back(s.substr(b, e - b));
  parts.push_back(s.substr(b));
  return parts;
}

}  // namespace

uint32_t recorder::track(const sc_core::sc_object* module, int queue) {
  auto key = std::make_pair(module, queue);
  auto it = track_ids_.find(key);
  if (it != track_ids_.end()) return it->second;
  const sc_core::sc_object* parent = module->get_parent_object();
  const std::string process = parent ? parent->name() : "top";
  std::string thread = module->basename();
  if (queue >= 0) thread += ".q" + std::to_string(queue);
  if (queue == kSpreadShares) thread += ".spread";
  const uint32_t pid = process_id(process);
  const auto id = static_cast<uint32_t>(tracks_.size());
  tracks_.push_back({pid, id, thread});
  track_ids_.emplace(key, id);
  return id;
}

uint32_t recorder::process_id(const std::string& process) {
  auto p = std::find(processes_.begin(), processes_.end(), process);
  const auto pid = static_cast<uint32_t>(p - processes_.begin());
  if (p == processes_.end()) processes_.push_back(process);
  return pid;
}

uint32_t recorder::named_track(const std::string& process, const std::string& thread) {
  const auto key = std::make_pair(process, thread);
  if (auto it = named_ids_.find(key); it != named_ids_.end()) return it->second;
  const uint32_t pid = process_id(process);
  const auto id = static_cast<uint32_t>(tracks_.size());
  tracks_.push_back({pid, id, thread});
  named_ids_.emplace(key, id);
  return id;
}

void recorder::label_process(const std::string& process, const std::string& label) {
  labels_[process] = label;
}

void recorder::span(uint32_t track, const std::string& name, const sc_core::sc_time& start,
                    const sc_core::sc_time& dur, const std::string& args) {
  spans_.push_back({track, name, args, start.value(), dur.value()});
}

std::vector<recorder::interval> recorder::intervals_of(const std::string& process) const {
  const uint64_t tick = ps_per_tick();
  std::vector<interval> v;
  for (const slice_rec& s : slices_)
    if (processes_[tracks_[s.track].pid] == process)
      v.push_back({s.in, s.start * tick, (s.start + std::max(s.dur, s.done)) * tick});
  return v;
}

void recorder::set_program(const std::string& process, const isa::Program* p) {
  programs_[process] = p;
}

void recorder::slice(uint32_t track, const isa::Instruction& in, uint32_t pc,
                     const sc_core::sc_time& start, const sc_core::sc_time& dur,
                     const sc_core::sc_time& wait, const sc_core::sc_time& done) {
  slices_.push_back({&in, track, pc, start.value(), dur.value(), wait.value(), done.value()});
}

uint32_t recorder::bank(const sc_core::sc_object* sems) {
  auto it = bank_ids_.find(sems);
  if (it != bank_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(banks_.size());
  banks_.push_back(sems->name());
  bank_ids_.emplace(sems, id);
  return id;
}

void recorder::semaphore(const sc_core::sc_object* sems, uint16_t sem, uint32_t value,
                         const sc_core::sc_time& at) {
  sems_.push_back({bank(sems), sem, value, at.value()});
}

void recorder::semaphores_reset(const sc_core::sc_object* sems, const sc_core::sc_time& at) {
  sems_.push_back({bank(sems), kReset, 0, at.value()});
}

std::vector<recorder::interval> recorder::intervals() const {
  const uint64_t tick = ps_per_tick();
  std::vector<interval> v;
  v.reserve(slices_.size());
  for (const slice_rec& s : slices_)
    v.push_back({s.in, s.start * tick, (s.start + std::max(s.dur, s.done)) * tick});
  return v;
}

void recorder::clear() {
  slices_.clear();
  spans_.clear();
  sems_.clear();
}

void recorder::write_chrome(std::ostream& os) const {
  const uint64_t tick = ps_per_tick();
  os << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  for (size_t pid = 0; pid < processes_.size(); ++pid) {
    sep();
    os << "{\"ph\": \"M\", \"pid\": " << pid
       << ", \"name\": \"process_name\", \"args\": {\"name\": "
       << quoted(labels_.count(processes_[pid]) ? labels_.at(processes_[pid]) : processes_[pid])
       << "}},\n";
    os << "{\"ph\": \"M\", \"pid\": " << pid
       << ", \"name\": \"process_sort_index\", \"args\": {\"sort_index\": " << pid << "}}";
  }
  for (const auto& t : tracks_) {
    sep();
    os << "{\"ph\": \"M\", \"pid\": " << t.pid << ", \"tid\": " << t.tid
       << ", \"name\": \"thread_name\", \"args\": {\"name\": " << quoted(t.thread) << "}},\n";
    os << "{\"ph\": \"M\", \"pid\": " << t.pid << ", \"tid\": " << t.tid
       << ", \"name\": \"thread_sort_index\", \"args\": {\"sort_index\": " << t.tid << "}}";
  }
  // By start time, then track: the file does not depend on the order in which
  // processes ran within one simulated instant.
  std::vector<const slice_rec*> order;
  order.reserve(slices_.size());
  for (const auto& s : slices_) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const slice_rec* a, const slice_rec* b) {
    return a->start != b->start ? a->start < b->start : a->track < b->track;
  });
  std::string line;
  for (const slice_rec* sp : order) {
    const slice_rec& s = *sp;
    const track_info& t = tracks_[s.track];
    auto prog = programs_.find(processes_[t.pid]);
    const isa::Program* p = prog == programs_.end() ? nullptr : prog->second;
    const isa::Instruction& in = *s.in;
    std::string waits, signals;
    for (const auto& w : in.waits)
      waits +=
          (waits.empty() ? "s" : " s") + std::to_string(w.sem) + ">=" + std::to_string(w.value);
    for (const auto& g : in.signals)
      signals += (signals.empty() ? "s" : " s") + std::to_string(g.sem) + "+" +
                 std::to_string(g.inc) + (g.when == isa::SignalWhen::start ? "@start" : "");
    line = "{\"ph\": \"X\", \"pid\": " + std::to_string(t.pid) +
           ", \"tid\": " + std::to_string(t.tid) + ", \"name\": \"" +
           std::string(isa::opcode_name(in.op)) + "\", \"ts\": " + us_text(s.start * tick) +
           ", \"dur\": " + us_text(s.dur * tick) + ", \"args\": {\"pc\": " + std::to_string(s.pc) +
           ", \"line\": " + std::to_string(in.line) +
           ", \"operands\": " + quoted(isa::disassemble(in, p)) + ", \"waits\": " + quoted(waits) +
           ", \"signals\": " + quoted(signals) +
           ", \"semaphore_wait_ns\": " + ns_text(s.wait * tick) +
           ", \"done_ns\": " + ns_text(s.done * tick) + "}}";
    sep();
    os << line;
  }
  std::vector<const span_rec*> sorder;
  for (const auto& s : spans_) sorder.push_back(&s);
  std::stable_sort(sorder.begin(), sorder.end(), [](const span_rec* a, const span_rec* b) {
    return a->start != b->start ? a->start < b->start : a->track < b->track;
  });
  for (const span_rec* sp : sorder) {
    const track_info& t = tracks_[sp->track];
    sep();
    os << "{\"ph\": \"X\", \"pid\": " << t.pid << ", \"tid\": " << t.tid
       << ", \"name\": " << quoted(sp->name) << ", \"ts\": " << us_text(sp->start * tick)
       << ", \"dur\": " << us_text(sp->dur * tick) << ", \"args\": {" << sp->args << "}}";
  }
  os << "\n]}\n";
}

void recorder::write_vcd(std::ostream& os) const {
  const uint64_t tick = ps_per_tick();
  // Declare only the semaphores that changed, grouped by bank, in id order.
  std::vector<std::set<uint16_t>> used(banks_.size());
  for (const auto& e : sems_)
    if (e.sem != kReset) used[e.bank].insert(e.sem);
  std::vector<std::map<uint16_t, std::string>> ids(banks_.size());
  size_t next = 0;
  os << "$version trnsim semaphores $end\n$timescale 1ps $end\n";
  for (size_t b = 0; b < banks_.size(); ++b) {
    if (used[b].empty()) continue;
    const auto scopes = split_dots(banks_[b]);
    for (const auto& s : scopes) os << "$scope module " << s << " $end\n";
    for (uint16_t sem : used[b]) {
      ids[b][sem] = vcd_id(next++);
      os << "$var integer 32 " << ids[b][sem] << " s" << sem << " $end\n";
    }
    for (size_t i = 0; i < scopes.size(); ++i) os << "$upscope $end\n";
  }
  os << "$enddefinitions $end\n";
  std::vector<std::map<uint16_t, uint32_t>> value(banks_.size());
  uint64_t now = ~uint64_t(0);
  auto at = [&](uint64_t t) {
    if (t != now) os << "#" << t * tick << "\n";
    now = t;
  };
  // Every declared semaphore starts at 0 at the first recorded time.
  if (!sems_.empty()) {
    at(sems_.front().at);
    os << "$dumpvars\n";
    for (size_t b = 0; b < banks_.size(); ++b)
      for (const auto& [sem, id] : ids[b]) os << "b0 " << id << "\n";
    os << "$end\n";
  }
  for (const auto& e : sems_) {
    if (e.sem == kReset) {
      for (auto& [sem, v] : value[e.bank]) {
        if (v == 0) continue;
        at(e.at);
        v = 0;
        os << "b0 " << ids[e.bank][sem] << "\n";
      }
      continue;
    }
    at(e.at);
    value[e.bank][e.sem] = e.value;
    os << "b" << binary(e.value) << " " << ids[e.bank][e.sem] << "\n";
  }
}

}  // namespace trnsim::trace
