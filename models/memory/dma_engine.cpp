#include "models/memory/dma_engine.h"

#include "models/memory/hbm.h"

#include <algorithm>
#include <stdexcept>

#include "models/common/access_checker.h"
#include "models/common/ap_extension.h"
#include "models/common/ap_fast.h"
#include "models/common/scheduler.h"
#include "models/common/sim_time.h"
#include "models/common/trace.h"
#include "models/isa/assembler.h"
#include "models/memory/hbm.h"

namespace trnsim::models {

namespace {

// Rows [lo, hi) of a pattern (partitions of sbuf, rows of hbm).
isa::AccessPattern rows_of(const isa::AccessPattern& ap, uint32_t lo, uint32_t hi) {
  isa::AccessPattern r = ap;
  r.partition_count = hi - lo;
  if (ap.space == isa::MemSpace::hbm)
    r.offset = uint64_t(int64_t(ap.offset) +
                        int64_t(lo) * ap.partition_stride * int64_t(isa::dtype_size(ap.dtype)));
  else
    r.partition_start += lo;
  return r;
}

std::string at_instruction(size_t pc, const isa::Instruction& in) {
  return "instruction " + std::to_string(pc) +
         (in.line ? " (line " + std::to_string(in.line) + ")" : "") + ": " + isa::disassemble(in);
}

}  // namespace

dma_engine::dma_engine(const sc_core::sc_module_name& name, const dma_params& p, semaphores& sems,
                       sim_context& ctx)
    : sc_module(name),
      hbm_socket("hbm_socket"),
      sbuf_socket("sbuf_socket"),
      params_(p),
      sems_(sems),
      ctx_(ctx) {
  xfer_.ext.words = true;  // the SBUF side moves words (ap_extension::words)
}

void dma_engine::spawn_thread() {
  // Spawned when first started or woken under SystemC's kernel, statically
  // sensitive to both events as an elaborated thread would be: a chip on its own
  // scheduler, and an engine no program uses, cost no coroutine (nor its stack).
  if (spawned_) return;
  spawned_ = true;
  std::string base = name();
  std::replace(base.begin(), base.end(), '.', '_');
  sc_core::sc_spawn_options opts;
  opts.dont_initialize();
  opts.set_sensitivity(&start_event_);
  opts.set_sensitivity(&wake_);
  sc_core::sc_spawn([this] { run(); }, (base + "_run").c_str(), &opts);
}

void dma_engine::load(uint16_t q, const std::vector<isa::Instruction>* instrs) {
  if (q >= params_.queues_per_engine)
    throw std::out_of_range(std::string(name()) + ": queue " + std::to_string(q) + " of " +
                            std::to_string(params_.queues_per_engine));
  // Only the queues up to the highest loaded one exist: a program's cost does not
  // grow with the queues it leaves unused.
  if (q >= queues_.size()) {
    if (!instrs || instrs->empty()) return;
    queues_.resize(size_t(q) + 1);
  }
  queues_[q] = queue_state{};
  queues_[q].instrs = instrs;
  if (instrs && !instrs->empty()) {
    const auto it = std::lower_bound(live_.begin(), live_.end(), q);
    if (it == live_.end() || *it != q) live_.insert(it, q);
  }
}

void dma_engine::clear() {
  queues_.clear();
  live_.clear();
  shares_.clear();
  failed_ = false;
}

void dma_engine::start() {
  next_ = 0;
  launch_ = now();
  // Waits met while the engine moved other data count from when they were met.
  if (params_.start_latency_s > 0) sems_.keep_history(true);
  for (size_t i = 0; i < queues_.size(); ++i) {
    auto& q = queues_[i];
    const auto* instrs = q.instrs;
    q = queue_state{};
    q.instrs = instrs;
    q.last_issue = launch_;
    // Not pipelined for the checker: however many are issued, a queue's transfers
    // start (issue, to the checker) one after the other completed, on one engine.
    q.agent = ctx_.checker && !q.done()
                  ? ctx_.checker->add_agent(std::string(name()) + ".q" + std::to_string(i),
                                            get_parent_object(), q.instrs, false)
                  : -1;
  }
  running_ =
      std::any_of(queues_.begin(), queues_.end(), [](const queue_state& q) { return !q.done(); });
  phase_ = phase::pick;
  if (running_) {
    if (ctx_.sched) {
      ctx_.sched->resume_at(&agent_, now());
    } else {
      spawn_thread();
      start_event_.notify(sc_core::SC_ZERO_TIME);
    }
  }
}

void dma_engine::poke() {
  if (ctx_.sched) {
    ctx_.sched->wake(&agent_);
  } else {
    spawn_thread();
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
}

bool dma_engine::idle() const {
  if (failed_ || !shares_.empty()) return false;
  return std::all_of(queues_.begin(), queues_.end(), [](const queue_state& q) { return q.done(); });
}

std::vector<std::string> dma_engine::pending() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < queues_.size(); ++i) {
    const auto& q = queues_[i];
    if (q.done()) continue;
    const size_t pc = std::min(q.nissued, q.instrs->size() - 1);
    const isa::Instruction& in = (*q.instrs)[pc];
    std::string s = "queue " + std::to_string(i) + ": ";
    if (q.spread || q.nissued >= q.instrs->size()) {
      s += "waiting for " + std::to_string(q.spread ? q.spread->remaining : 0) + " spread shares ";
    } else {
      for (const auto& w : in.waits)
        if (sems_.value(w.sem) < w.value) {
          s += "waiting for s" + std::to_string(w.sem) + " >= " + std::to_string(w.value) +
               " (now " + std::to_string(sems_.value(w.sem)) + ") ";
          break;
        }
    }
    s += "at instruction " + std::to_string(pc);
    if (in.line) s += " (line " + std::to_string(in.line) + ")";
    out.push_back(s + ": " + isa::disassemble(in));
  }
  return out;
}

dma_engine::queue_stats dma_engine::queue(size_t q) const {
  if (q >= queues_.size()) return {false, 0, 0};  // never loaded
  const auto& s = queues_[q];
  return {s.instrs && !s.instrs->empty(), s.bytes, s.copies};
}

void dma_engine::reset_stats() {
  executed_ = shares_moved_ = bytes_ = descriptors_ = helper_shares_ = 0;
  busy_ = sc_core::SC_ZERO_TIME;
  held_bytes_ = 0;
  held_busy_ = sc_core::SC_ZERO_TIME;
  held_until_ = sc_core::SC_ZERO_TIME;
  activity_ = activity{};
}

double dma_engine::core_active_ns() {
  const activity& a = core_activity();
  sc_core::sc_time t = a.total;
  if (a.moving) t += now() - a.since;
  return t.to_seconds() * 1e9;
}

void dma_engine::register_stats(stats::group& g) {
  g.add_counter("instructions", "instructions", "instructions of this engine's queues completed",
                &executed_);
  g.add_counter("shares", "transfers",
                "pieces this engine moved (a whole dma_copy, or its share of a spread one)",
                &shares_moved_);
  g.add_counter("bytes", "bytes", "bytes written by this engine", &bytes_);
  g.add_counter("descriptors", "descriptors", "contiguous chunks moved", &descriptors_);
  g.add_counter("helper_shares", "transfers", "spread shares moved for other engines' queues",
                &helper_shares_);
  g.add("busy_ns", "ns", "time spent transferring", [this] { return busy_ns(); });
  g.add("avg_share_bytes", "bytes", "mean bytes per share",
        [this] { return shares_moved_ ? double(bytes_) / double(shares_moved_) : 0.0; });
  // The queues loaded now (only those exist); read through queue(), as a later
  // load may move them.
  for (size_t i = 0; i < queues_.size(); ++i) {
    auto& qg = g.child("q" + std::to_string(i), "one DMA queue");
    qg.set_visible([this, i] { return queue(i).used; });  // only queues a program used
    qg.add(
        "bytes", "bytes", "bytes moved by this queue's instructions",
        [this, i] { return double(queue(i).bytes); }, true);
    qg.add(
        "copies", "instructions", "dma_copy instructions of this queue completed",
        [this, i] { return double(queue(i).copies); }, true);
  }
}

bool dma_engine::ready(const isa::Instruction& in) const {
  for (const auto& w : in.waits)
    if (sems_.value(w.sem) < w.value) return false;
  return true;
}

uint64_t dma_engine::descriptors(const isa::AccessPattern& ap) {
  // One descriptor per contiguous run: a whole row when the free pattern is
  // contiguous (HBM rows laid end to end make one run), otherwise one per innermost
  // run of stride 1 (or per element).
  const uint64_t es = fast::elem_size(ap.dtype);
  if (fast::free_contiguous(ap)) {
    const int64_t row_bytes = int64_t(fast::free_elems(ap) * es);
    if (ap.space == isa::MemSpace::hbm && ap.partition_count > 1 &&
        ap.partition_stride * int64_t(es) == row_bytes)
      return 1;
    return ap.partition_count;
  }
  const int inner = fast::innermost_dim(ap);
  const uint64_t run = inner >= 0 && ap.dims[inner].stride == 1 ? ap.dims[inner].size : 1;
  return fast::free_elems(ap) * ap.partition_count / std::max<uint64_t>(run, 1);
}

sc_core::sc_time dma_engine::own_time(uint64_t bytes, uint64_t descriptors) const {
  // A pure function of its arguments; a queue repeats a few transfer shapes.
  if (own_cache_.valid && own_cache_.bytes == bytes && own_cache_.descriptors == descriptors)
    return own_cache_.time;
  own_cache_ = {
      bytes, descriptors, true,
      seconds_to_time(params_.fixed_cost_s + params_.descriptor_cost_s * double(descriptors) +
                      double(bytes) / params_.bandwidth_bps)};
  return own_cache_.time;
}

sc_core::sc_time dma_engine::transfer(isa::AccessPattern src, isa::AccessPattern dst, uint64_t base,
                                      int agent) {
  if (src.space == isa::MemSpace::hbm) src.offset += base;
  if (dst.space == isa::MemSpace::hbm) dst.offset += base;
  if (agent > 0) {
    ctx_.checker->access(agent, src, 0, access_checker::access_kind::read);
    ctx_.checker->access(agent, dst, 0, access_checker::access_kind::write);
  }
  const bool f = ctx_.functional;
  if (!fixed_cost_valid_) {
    fixed_cost_ = seconds_to_time(params_.fixed_cost_s);
    fixed_cost_valid_ = true;
  }
  const sc_core::sc_time fixed = fixed_cost_;
  auto& rs = src.space == isa::MemSpace::hbm ? hbm_socket : sbuf_socket;
  auto& ws = dst.space == isa::MemSpace::hbm ? hbm_socket : sbuf_socket;

  // Both sides start after the fixed cost; HBM and SBUF report when they finish.
  sc_core::sc_time rd = fixed, wr = fixed;
  src_buf_.resize(f ? src.bytes() : 0);
  ap_transport(rs, xfer_, tlm::TLM_READ_COMMAND, src, f ? src_buf_.data() : nullptr, rd, false, !f);
  uint8_t* out = src_buf_.data();
  if (f && src.dtype != dst.dtype) {
    f32_.resize(src.elems());
    isa::to_fp32(src.dtype, src_buf_.data(), f32_.data(), f32_.size());
    dst_buf_.resize(dst.bytes());
    if (stochastic_)
      isa::from_fp32_stochastic(dst.dtype, f32_.data(), dst_buf_.data(), f32_.size(),
                                share_stream_);
    else
      isa::from_fp32(dst.dtype, f32_.data(), dst_buf_.data(), f32_.size());
    out = dst_buf_.data();
  }
  ap_transport(ws, xfer_, tlm::TLM_WRITE_COMMAND, dst, f ? out : nullptr, wr, false, !f);

  const uint64_t desc = std::max(descriptors(src), descriptors(dst));
  descriptors_ += desc;
  const uint64_t moved = std::max(fast::bytes(src), fast::bytes(dst));
  activity& a = core_activity();
  if (now() != a.batch_at) {  // a new instant: the earlier ones' work is queued
    if (a.batch_work != sc_core::SC_ZERO_TIME)
      a.shared_free = std::max(a.shared_free, a.batch_at) + a.batch_work;
    a.batch_at = now();
    a.batch_work = sc_core::SC_ZERO_TIME;
  }
  const sc_core::sc_time work = seconds_to_time(double(moved) / params_.core_bandwidth_bps +
                                                double(desc) * params_.core_descriptor_cost_s);
  a.batch_work += work;
  const sc_core::sc_time shared_end = std::max(a.shared_free, now()) + work;
  return std::max({own_time(moved, desc), rd, wr, shared_end - now()});
}

sc_core::sc_time dma_engine::hold_start() const {
  sc_core::sc_time start = std::max(now(), held_until_);
  if (phase_ == phase::transfer) start = std::max(start, cur_end_);
  return start;
}

sc_core::sc_time dma_engine::hold(uint64_t bytes, uint64_t descriptors) {
  const sc_core::sc_time t = now();
  sc_core::sc_time start = std::max(t, held_until_);
  if (phase_ == phase::transfer) start = std::max(start, cur_end_);
  if (bytes != hold_memo_bytes_ || descriptors != hold_memo_desc_) {
    hold_memo_own_ = seconds_to_time(params_.descriptor_cost_s * double(descriptors) +
                                     double(bytes) / params_.bandwidth_bps);
    hold_memo_work_ = seconds_to_time(double(bytes) / params_.core_bandwidth_bps +
                                      double(descriptors) * params_.core_descriptor_cost_s);
    hold_memo_bytes_ = bytes;
    hold_memo_desc_ = descriptors;
  }
  const sc_core::sc_time own = hold_memo_own_;
  held_until_ = checked_time(start + own);
  held_busy_ += own;
  held_bytes_ += bytes;
  // The core's shared rate, as transfer() queues a share starting now.
  activity& a = core_activity();
  if (t != a.batch_at) {
    if (a.batch_work != sc_core::SC_ZERO_TIME)
      a.shared_free = std::max(a.shared_free, a.batch_at) + a.batch_work;
    a.batch_at = t;
    a.batch_work = sc_core::SC_ZERO_TIME;
  }
  const sc_core::sc_time work = hold_memo_work_;
  a.batch_work += work;
  return std::max(held_until_, std::max(a.shared_free, t) + work);
}

const std::vector<dma_engine*>& dma_engine::peers() {
  if (peers_.empty()) {
    // The core's engines are this module's siblings sharing its semaphores.
    const sc_core::sc_object* parent = get_parent_object();
    const auto& objs = parent ? parent->get_child_objects() : sc_core::sc_get_top_level_objects();
    for (sc_core::sc_object* o : objs)
      if (auto* d = dynamic_cast<dma_engine*>(o); d && &d->sems_ == &sems_) peers_.push_back(d);
  }
  return peers_;
}

void dma_engine::issue(queue_state& q) {
  const size_t n = q.instrs->size();
  while (q.nissued < n && !q.drain && q.nissued - q.ndone < params_.queue_depth) {
    const isa::Instruction& in = (*q.instrs)[q.nissued];
    const bool spread = in.op == isa::Opcode::dma_copy && in.spread > 1;
    if (spread && q.nissued != q.ndone) return;  // issues alone
    if (!ready(in)) return;
    // The slot: the instruction queue_depth before this one completed (done_at holds
    // the completions of instructions ndone - done_at.size() .. ndone - 1).
    sc_core::sc_time free = q.last_issue;
    if (q.nissued >= params_.queue_depth) {
      const size_t k = q.nissued - params_.queue_depth - (q.ndone - q.done_at.size());
      free = std::max(free, q.done_at[k]);
    }
    // When its waits were met: from the semaphores' history, else (no start latency,
    // so only the trace's wait time depends on it) now.
    const bool history = params_.start_latency_s > 0;
    sc_core::sc_time at = free;
    for (const auto& w : in.waits)
      at = std::max(at, history ? sems_.reached_at(w.sem, w.value) : now());
    q.last_issue = at;
    const double lat = in.op == isa::Opcode::dma_copy ? params_.start_latency_s : 0.0;
    q.issued.push_back({at + seconds_to_time(lat), at - free});
    ++q.nissued;
    if (spread) q.drain = true;
  }
}

bool dma_engine::execute(size_t qi) {
  auto& q = queues_[qi];
  const size_t pc = q.nstarted++;
  const isa::Instruction& in = (*q.instrs)[pc];
  cur_waited_ = q.issued.front().waited;
  q.issued.pop_front();
  fast::prefetch_ahead(*q.instrs, pc);
  if (q.agent > 0) {
    for (const auto& w : in.waits) ctx_.checker->acquire(q.agent, &sems_, w.sem, w.value);
    ctx_.checker->issue(q.agent, uint32_t(pc));
  }
  signal(in, isa::SignalWhen::start, q.agent);
  if (in.op != isa::Opcode::dma_copy) {  // nop: waits and signals only, one delta
    cur_q_ = qi;
    phase_ = phase::nop;
    return true;
  }

  const uint32_t n = std::max<uint32_t>(in.spread, 1);
  const uint32_t rows = in.dst.partition_count;
  // Without spread the transfer is this engine's one transfer in flight: its state
  // can be a member (an owner-less shared_ptr, no allocation).
  local_st_ = {this, qi, n};
  auto st = n > 1 ? std::make_shared<spread_state>(local_st_)
                  : std::shared_ptr<spread_state>(std::shared_ptr<void>(), &local_st_);
  if (n > 1) {
    const auto& ps = peers();
    std::string err;
    if (n > ps.size())
      err = "spread=" + std::to_string(n) + " but the core has " + std::to_string(ps.size()) +
            " DMA engines";
    else if (in.src[0].partition_count != rows || rows < n)
      err = "spread=" + std::to_string(n) +
            " needs src and dst with the same row count, at least " + std::to_string(n) +
            " (src has " + std::to_string(in.src[0].partition_count) + ", dst " +
            std::to_string(rows) + ")";
    if (!err.empty()) {
      ctx_.faults.push_back(
          {std::string(name()) + ".q" + std::to_string(qi), at_instruction(pc, in) + ": " + err});
      failed_ = true;
      return false;
    }
    const size_t self = size_t(std::find(ps.begin(), ps.end(), this) - ps.begin());
    q.spread = st;
    for (uint32_t k = 1; k < n; ++k) {
      dma_engine* e = ps[(self + k) % ps.size()];
      e->shares_.push_back(share{&in, uint32_t(uint64_t(rows) * k / n),
                                 uint32_t(uint64_t(rows) * (k + 1) / n), hbm_base_, st, pc});
      e->poke();
    }
  }
  cur_share_ = share{&in, 0, uint32_t(rows / n), hbm_base_, st, pc};
  return begin_share(cur_share_);
}

void dma_engine::finish_nop(size_t qi) {
  auto& q = queues_[qi];
  const isa::Instruction& in = (*q.instrs)[q.ndone];
  if (ctx_.trace) {
    const sc_core::sc_time now = models::now();
    ctx_.trace->slice(ctx_.trace->track(this, int(qi)), in, uint32_t(q.ndone), now,
                      sc_core::SC_ZERO_TIME, cur_waited_, sc_core::SC_ZERO_TIME);
  }
  signal(in, isa::SignalWhen::done, q.agent);
  complete(q, in);
}

void dma_engine::set_rounding(const rounding_params& r) {
  stochastic_ = r.stochastic;
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name
  for (const char* c = name(); *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001B3ull;
  rounding_stream_ = isa::stochastic_bits(h, r.seed);
}

isa::AccessPattern dma_engine::share_pattern(const share& s, const isa::AccessPattern& ap) {
  // Only a spread transfer is cut into rows (src and dst then have the same row
  // count); a whole one keeps its patterns, whose row counts may differ.
  return s.in->spread <= 1 ? ap : rows_of(ap, s.row_lo, s.row_hi);
}

void dma_engine::signal(const isa::Instruction& in, isa::SignalWhen when, int agent) {
  for (const auto& g : in.signals)
    if (g.when == when) {
      if (agent > 0) ctx_.checker->release(agent, &sems_, g.sem, g.inc, g.when);
      sems_.increment(g.sem, g.inc);
    }
}

bool dma_engine::begin_share(const share& s) {
  const isa::Instruction& in = *s.in;
  const isa::AccessPattern src = share_pattern(s, in.src[0]), dst = share_pattern(s, in.dst);
  sc_core::sc_time dur;
  const int agent = s.st->owner->queues_[s.st->queue].agent;
  if (stochastic_)
    share_stream_ =
        isa::stochastic_bits(isa::stochastic_bits(s.st->owner->rounding_stream_, s.st->queue),
                             (uint64_t{s.pc} << 32) | s.row_lo);
  try {
    dur = transfer(src, dst, s.hbm_base, agent);
    checked_time(now() + dur);  // its end in the time range
  } catch (const std::exception& e) {
    const dma_engine& o = *s.st->owner;
    std::string msg = at_instruction(s.pc, in) + ": ";
    if (s.st->owner != this)
      msg += "share of rows " + std::to_string(s.row_lo) + ".." + std::to_string(s.row_hi) +
             " on " + name() + ": ";
    ctx_.faults.push_back(
        {std::string(o.name()) + ".q" + std::to_string(s.st->queue), msg + e.what()});
    failed_ = true;
    return false;
  }
  cur_dur_ = dur;
  cur_end_ = now() + dur;
  phase_ = phase::transfer;
  activity& a = core_activity();
  if (a.moving++ == 0) a.since = now();
  return true;
}

void dma_engine::end_share(const share& s) {
  const isa::Instruction& in = *s.in;
  const sc_core::sc_time dur = cur_dur_;
  busy_ += dur;
  activity& a = core_activity();
  if (--a.moving == 0) a.total += now() - a.since;
  if (ctx_.trace) {
    const dma_engine& o = *s.st->owner;
    const sc_core::sc_time start = now() - dur;
    const int track = &o == this ? int(s.st->queue) : trace::recorder::kSpreadShares;
    ctx_.trace->slice(ctx_.trace->track(this, track), in, uint32_t(s.pc), start, dur,
                      &o == this ? cur_waited_ : sc_core::SC_ZERO_TIME, dur);
  }
  bytes_ += fast::bytes(share_pattern(s, in.dst));
  ++shares_moved_;
  if (s.st->owner != this) ++helper_shares_;
  // Every engine that took part signals completion.
  signal(in, isa::SignalWhen::done, s.st->owner->queues_[s.st->queue].agent);
  finish_share(s.st);
}

void dma_engine::finish_share(const std::shared_ptr<spread_state>& st) {
  if (--st->remaining > 0) return;
  dma_engine& o = *st->owner;
  auto& q = o.queues_[st->queue];
  const isa::Instruction& in = (*q.instrs)[q.ndone];
  q.bytes += fast::bytes(in.dst);
  ++q.copies;
  if (ctx_.release_hbm && o.hbm_) o.hbm_->copy_done(in, o.hbm_base_);
  o.complete(q, in);
  if (&o != this) o.poke();
}

void dma_engine::complete(queue_state& q, const isa::Instruction&) {
  if (q.agent > 0) ctx_.checker->complete(q.agent);
  q.spread.reset();
  q.drain = false;
  ++q.ndone;
  q.done_at.push_back(now());
  if (q.done_at.size() > params_.queue_depth) q.done_at.pop_front();
  ++executed_;
  last_done_ = std::max(last_done_, now());
}

dma_engine::park dma_engine::advance() {
  using K = park::kind;
  for (;;) {
    if (phase_ == phase::nop) {
      finish_nop(cur_q_);
      phase_ = phase::pick;
    } else if (phase_ == phase::transfer) {
      end_share(cur_share_);
      cur_share_ = share{};
      phase_ = phase::pick;
    }
    if (failed_) return {K::start};
    // A collective holds the engine (hold()): nothing of its own starts meanwhile.
    if (held_until_ > now()) return {K::time, held_until_ - now()};
    // Round-robin over the queues whose oldest issued instruction may start now (in
    // order within each) and one more slot, after every queue, for shares of other
    // engines' spread transfers: from next_, queues next_.., the share slot, then
    // queues ..next_-1. Only queues with work (live_, ascending) are looked at.
    const size_t share_slot = queues_.size(), slots = share_slot + 1;
    const sc_core::sc_time t = now();
    size_t pick = slots;
    bool later = false;  // an issued instruction starts later
    sc_core::sc_time next;
    if (running_) {
      std::erase_if(live_, [&](uint16_t i) { return queues_[i].done(); });
      const auto can_go = [&](uint16_t i) {
        auto& q = queues_[i];
        issue(q);
        if (q.nstarted == q.nissued) return false;
        const sc_core::sc_time& at = q.issued.front().start_at;
        if (at <= t) return true;
        if (!later || at < next) next = at;
        later = true;
        return false;
      };
      const auto mid = std::lower_bound(live_.begin(), live_.end(), next_);
      for (auto it = mid; it != live_.end(); ++it)
        if (can_go(*it) && pick == slots) pick = *it;
      if (pick == slots && !shares_.empty()) pick = share_slot;
      for (auto it = live_.begin(); it != mid; ++it)
        if (can_go(*it) && pick == slots) pick = *it;
    } else if (!shares_.empty()) {
      pick = share_slot;
    }
    if (pick == slots) {
      if (running_ && live_.empty()) running_ = false;
      if (!running_) return {K::start_or_wake};
      // A start time to come: no semaphore change can make another one earlier (it
      // would start start_latency after it). A peer's share waits until then.
      if (later) return {K::time, next - t};
      // Sleep until a blocked queue's first unmet wait is met (or a peer wakes us):
      // no wake-up for increments nobody here waits for.
      for (uint16_t i : live_) {
        const auto& q = queues_[i];
        if (q.nissued >= q.instrs->size() || q.drain) continue;
        for (const auto& w : (*q.instrs)[q.nissued].waits)
          if (ctx_.sched ? sems_.wake_when_ge(w.sem, w.value, &agent_)
                         : sems_.notify_when_ge(w.sem, w.value, wake_))
            break;
      }
      return {K::wake};
    }
    next_ = (pick + 1) % slots;
    bool started;
    if (pick == share_slot) {
      cur_share_ = shares_.front();
      shares_.pop_front();
      started = begin_share(cur_share_);
    } else {
      started = execute(pick);
    }
    if (started) return {K::time, phase_ == phase::transfer ? cur_dur_ : sc_core::SC_ZERO_TIME};
  }
}

void dma_engine::run() {
  using K = park::kind;
  for (;;) {
    const park p = advance();
    if (p.k == K::time)
      sc_core::wait(p.dt);
    else if (p.k == K::wake)
      sc_core::wait(wake_);
    else if (p.k == K::start_or_wake)
      sc_core::wait(start_event_ | wake_);
    else
      sc_core::wait(start_event_);
  }
}

void dma_engine::step() {
  const park p = advance();
  if (p.k == park::kind::time)
    ctx_.sched->resume_at(&agent_, now() + p.dt);
  else
    ctx_.sched->park(&agent_);
}

}  // namespace trnsim::models
