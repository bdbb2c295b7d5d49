#include "models/engines/engine.h"

#include <algorithm>

#include "models/common/access_checker.h"
#include "models/common/ap_extension.h"
#include "models/common/ap_fast.h"
#include "models/common/scheduler.h"
#include "models/common/sim_time.h"
#include "models/common/trace.h"
#include "models/isa/assembler.h"
#include "models/isa/dtype.h"

namespace trnsim::models {

engine::engine(const sc_core::sc_module_name& name, isa::Engine kind, const engine_params& p,
               semaphores& sems, sim_context& ctx)
    : sc_module(name),
      sbuf_socket("sbuf_socket"),
      psum_socket("psum_socket"),
      kind_(kind),
      params_(p),
      sems_(sems),
      ctx_(ctx) {}

void engine::spawn_threads() {
  // Spawned by the first start() under SystemC's kernel, statically sensitive to
  // their events as elaborated threads would be: a chip on its own scheduler, and
  // an engine no program uses, cost no coroutine (nor its stack).
  if (spawned_) return;
  spawned_ = true;
  std::string base = name();
  std::replace(base.begin(), base.end(), '.', '_');
  sc_core::sc_spawn_options run_opts, done_opts;
  run_opts.dont_initialize();
  run_opts.set_sensitivity(&start_event_);
  done_opts.dont_initialize();
  done_opts.set_sensitivity(&completion_event_);
  sc_core::sc_spawn([this] { run(); }, (base + "_run").c_str(), &run_opts);
  sc_core::sc_spawn([this] { complete(); }, (base + "_complete").c_str(), &done_opts);
}

void engine::set_rounding(const rounding_params& r) {
  stochastic_ = r.stochastic;
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name
  for (const char* c = name(); *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001B3ull;
  rounding_stream_ = isa::stochastic_bits(h, r.seed);
}

void engine::load(const std::vector<isa::Instruction>* instrs) {
  writes_ = 0;
  queue_ = instrs;
  pc_ = 0;
  state_ = state::idle;
}

void engine::start() {
  agent_ = -1;
  if (queue_ && !queue_->empty()) {
    if (ctx_.checker) agent_ = ctx_.checker->add_agent(name(), get_parent_object(), queue_, true);
    state_ = state::waiting;
    pc_ = 0;
    phase_ = phase::fetch;
    if (ctx_.sched) {
      ctx_.sched->resume_at(&seq_agent_, models::now());
    } else {
      spawn_threads();
      start_event_.notify(sc_core::SC_ZERO_TIME);
    }
  } else {
    state_ = state::done;
  }
}

sc_core::sc_time engine::cycles_to_time(double cycles) const {
  // Fibonacci hashing: counts are often multiples of 16 and 64.
  const uint64_t c = cycles >= 0 && cycles < 1e18 ? uint64_t(cycles) : 0;
  const size_t slot = (c * 0x9e3779b97f4a7c15ull) >> 60;  // 16 slots
  time_entry& e = time_cache_[slot];
  if (e.cycles != cycles) e = {cycles, seconds_to_time(cycles / params_.clock_hz)};
  return e.time;
}

std::string engine::pending() const {
  if (!queue_ || pc_ >= queue_->size() || state_ == state::done || state_ == state::idle) return "";
  const isa::Instruction& in = (*queue_)[pc_];
  std::string s = "instruction " + std::to_string(pc_);
  if (in.line) s += " (line " + std::to_string(in.line) + ")";
  if (phase_ == phase::rendezvous)
    s = "waiting for the other ranks of its group at " + s;
  else if (state_ == state::waiting)
    s = "waiting for s" + std::to_string(waiting_sem_) + " >= " + std::to_string(waiting_value_) +
        " (now " + std::to_string(sems_.value(waiting_sem_)) + ") at " + s;
  else
    s = "stopped at " + s;
  return s + ": " + isa::disassemble(in);
}

void engine::register_stats(stats::group& g) {
  g.add_counter("instructions", "instructions", "instructions executed", &instructions_);
  g.add("busy_ns", "ns", "time spent executing instructions", [this] { return busy_ns(); });
  g.add("semaphore_wait_ns", "ns", "time spent waiting on semaphores",
        [this] { return sem_wait_ns(); });
  g.add("port_stall_ns", "ns", "time accesses waited for an SBUF/PSUM port held by another engine",
        [this] { return port_stall_ns(); });
  if (kind_ == isa::Engine::tensor)
    g.add(
        "flops", "FLOP", "matmul floating-point operations (2 x K x M x N each)",
        [this] {
          uint64_t f = 0;
          for (uint64_t x : flops_) f += x;
          return double(f);
        },
        true);
  auto& ops = g.child("opcodes", "instructions executed by opcode");
  for (int i = 0; i < isa::kNumOpcodes; ++i) {
    auto op = static_cast<isa::Opcode>(i);
    if (!isa::engine_allows(kind_, op)) continue;
    ops.add_counter(std::string(isa::opcode_name(op)), "instructions",
                    "instructions of this opcode", &by_opcode_[i]);
  }
}

void engine::reset_stats() {
  instructions_ = 0;
  by_opcode_.fill(0);
  flops_.fill(0);
  busy_ = sem_wait_ = port_stall_ = sc_core::SC_ZERO_TIME;
}

// The dtype a matmul's FLOPs count against: the wider input (fp32 > bf16/fp16 > fp8);
// the moving one when both are as wide.
static isa::DType matmul_dtype(const isa::Instruction& in) {
  const isa::DType s = in.src[0].dtype, m = in.src[1].dtype;
  return isa::dtype_size(s) > isa::dtype_size(m) ? s : m;
}

void engine::signal(const isa::Instruction& in, isa::SignalWhen when) {
  if (agent_ > 0 && when == isa::SignalWhen::done) ctx_.checker->complete(agent_);
  for (const auto& s : in.signals)
    if (s.when == when) {
      if (agent_ > 0) ctx_.checker->release(agent_, &sems_, s.sem, s.inc, when);
      sems_.increment(s.sem, s.inc);
    }
}

sc_core::sc_time engine::read_tile(const isa::AccessPattern& ap, Tile* t) {
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  auto& sock = ap.space == isa::MemSpace::psum ? psum_socket : sbuf_socket;
  const bool f = ctx_.functional;
  const bool direct = ap.dtype == isa::DType::fp32;  // lands in the tile as it is
  uint8_t* buf = nullptr;
  if (f) {
    t->parts = ap.partition_count;
    t->cols = ap.free_elems();
    t->v.resize(size_t(t->parts) * t->cols);  // no zeroing: the read fills every element
    if (direct) {
      buf = reinterpret_cast<uint8_t*>(t->v.data());
    } else {
      scratch_.resize(ap.bytes());
      buf = scratch_.data();
    }
  }
  if (agent_ > 0) ctx_.checker->access(agent_, ap, 0, access_checker::access_kind::read);
  sc_core::sc_time stall = sc_core::SC_ZERO_TIME;
  ap_transport(sock, xfer_, tlm::TLM_READ_COMMAND, ap, buf, d, false, !f, &stall);
  port_stall_ += stall;
  stream_start_ = std::max(stream_start_, stall);
  if (f && !direct) isa::to_fp32(ap.dtype, scratch_.data(), t->v.data(), t->v.size());
  return d;
}

sc_core::sc_time engine::write_tile(const isa::AccessPattern& ap, const Tile* t, bool accumulate,
                                    bool data) {
  // Results stream out as soon as the operands stream in: offer the write then.
  sc_core::sc_time d = stream_start_;
  auto& sock = ap.space == isa::MemSpace::psum ? psum_socket : sbuf_socket;
  const bool f = ctx_.functional && data;
  uint8_t* buf = nullptr;
  if (f && ap.dtype == isa::DType::fp32) {
    // fp32 results go out of the tile as they are (targets only read write data).
    buf = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(t->v.data()));
  } else if (f && stochastic_ && isa::is_float(ap.dtype)) {
    scratch_.resize(ap.bytes());
    isa::from_fp32_stochastic(ap.dtype, t->v.data(), scratch_.data(), t->v.size(),
                              isa::stochastic_bits(rounding_stream_, writes_++));
    buf = scratch_.data();
  } else if (f) {
    scratch_.resize(ap.bytes());
    isa::from_fp32(ap.dtype, t->v.data(), scratch_.data(), t->v.size());
    buf = scratch_.data();
  }
  if (agent_ > 0)
    ctx_.checker->access(
        agent_, ap, 0,
        accumulate ? access_checker::access_kind::accumulate : access_checker::access_kind::write);
  sc_core::sc_time stall = sc_core::SC_ZERO_TIME;
  ap_transport(sock, xfer_, tlm::TLM_WRITE_COMMAND, ap, buf, d, accumulate, !f, &stall);
  port_stall_ += stall;
  return d;
}

sc_core::sc_time engine::execute(const isa::Instruction& in) {
  if (in.op == isa::Opcode::nop) return sc_core::SC_ZERO_TIME;
  stream_start_ = sc_core::SC_ZERO_TIME;
  const bool f = ctx_.functional;
  ExecArgs& args = args_;
  ExecResult& res = res_;
  sc_core::sc_time port = sc_core::SC_ZERO_TIME;
  for (int i = 0; i < in.nsrc; ++i) port = std::max(port, read_tile(in.src[i], &args.src[i]));
  if (in.arg0.is_ap) port = std::max(port, read_tile(in.arg0.ap, &args.arg0));
  if (in.arg1.is_ap) port = std::max(port, read_tile(in.arg1.ap, &args.arg1));
  const bool later = f && defer(in, args);
  if (f && !later) compute(in, args, res);
  const bool acc = in.op == isa::Opcode::matmul && in.accumulate;
  port = std::max(port, write_tile(in.dst, &res.dst, acc, !later));
  if (in.has_accum) port = std::max(port, write_tile(in.accum, &res.accum));
  return port;
}

void engine::compute(const isa::Instruction& in, ExecArgs& args, ExecResult& res) {
  models::execute(in, args, res);
}

engine::timing engine::instruction_timing(const isa::Instruction& in,
                                          const sc_core::sc_time& port) {
  // A nop has no datapath work: it costs the static overhead only.
  const uint64_t cycles = in.op == isa::Opcode::nop ? 0 : cost_cycles(in);
  const sc_core::sc_time d =
      cycles_to_time(params_.overhead_cycles) + std::max(cycles_to_time(double(cycles)), port);
  return {d, d};
}

void engine::complete_at(const isa::Instruction& in, const sc_core::sc_time& at) {
  completes_at_ = at;
  const sc_core::sc_time now = models::now();
  if (at <= now && completions_.empty()) {
    last_done_ = now;
    signal(in, isa::SignalWhen::done);
    return;
  }
  if (completions_.empty()) {
    if (ctx_.sched)
      ctx_.sched->resume_at(&done_agent_, at);
    else
      completion_event_.notify(at - now);
  }
  completions_.push_back({at, &in});
}

bool engine::fire_completions() {
  const sc_core::sc_time now = models::now();
  while (!completions_.empty() && completions_.front().at <= now) {
    const isa::Instruction* in = completions_.front().in;
    completions_.pop_front();
    last_done_ = now;
    signal(*in, isa::SignalWhen::done);
  }
  return !completions_.empty();
}

void engine::complete() {
  for (;;) {  // entered when completion_event_ fires; waits for it again at the end
    if (fire_completions())
      completion_event_.notify(completions_.front().at - sc_core::sc_time_stamp());
    else
      completed_.notify();
    sc_core::wait(completion_event_);
  }
}

void engine::fire_due() {
  if (fire_completions())
    ctx_.sched->resume_at(&done_agent_, completions_.front().at);
  else
    ctx_.sched->wake(&seq_agent_);  // a draining sequencer can finish
}

void engine::fail(const isa::Instruction& in, const std::string& why) {
  ctx_.faults.push_back({name(), "instruction " + std::to_string(pc_) +
                                     (in.line ? " (line " + std::to_string(in.line) + ")" : "") +
                                     ": " + isa::disassemble(in) + ": " + why});
  state_ = state::failed;
  phase_ = phase::drain;
}

engine::park engine::advance() {
  using K = park::kind;
  for (;;) {
    switch (phase_) {
      case phase::fetch:
        if (!queue_ || pc_ >= queue_->size() || state_ == state::failed) {
          phase_ = phase::drain;
          continue;
        }
        fast::prefetch_ahead(*queue_, pc_);
        state_ = state::waiting;
        t0_ = models::now();
        blocked_ = false;
        widx_ = 0;
        phase_ = phase::waits;
        [[fallthrough]];
      case phase::waits: {
        const isa::Instruction& in = (*queue_)[pc_];
        for (; widx_ < in.waits.size(); ++widx_) {
          const auto& w = in.waits[widx_];
          waiting_sem_ = w.sem;
          waiting_value_ = w.value;
          if (sems_.value(w.sem) < w.value) {
            blocked_ = true;
            return {K::sem, w.sem, w.value, sc_core::SC_ZERO_TIME};
          }
        }
        phase_ = phase::latency;
        // A released wait reaches the sequencer after the semaphore latency.
        if (blocked_ && params_.sem_latency_cycles) {
          try {
            const sc_core::sc_time dt = cycles_to_time(params_.sem_latency_cycles);
            checked_time(models::now() + dt);
            return {K::time, 0, 0, dt};
          } catch (const std::exception& e) {
            fail(in, e.what());
            continue;
          }
        }
        [[fallthrough]];
      }
      case phase::latency: {
        const isa::Instruction& in = (*queue_)[pc_];
        sem_wait_ += models::now() - t0_;
        if (agent_ > 0) {
          for (const auto& w : in.waits) ctx_.checker->acquire(agent_, &sems_, w.sem, w.value);
          ctx_.checker->issue(agent_, uint32_t(pc_));
        }
        state_ = state::running;
        signal(in, isa::SignalWhen::start);
        if (isa::is_collective(in.op)) {
          if (!ctx_.collectives) {
            fail(in, "a collective needs an SPMD launch of several ranks (trnsim run --ranks R)");
            continue;
          }
          // The collective reads src and writes dst of this rank's HBM, ordered by
          // this queue's semaphores like any other access. In a partial permute a
          // rank with no peer reads nothing, and one no rank sends to keeps its dst
          // as it was (a later read of it sees what was there before).
          using AK = access_checker::access_kind;
          if (agent_ > 0) {
            bool reads = in.nsrc > 0, writes = isa::opcode_info(in.op).has_dst;
            if (in.op == isa::Opcode::permute) {
              const auto at = std::find(in.group.begin(), in.group.end(), rank_);
              const auto pos = static_cast<size_t>(at - in.group.begin());
              reads = reads && pos < in.peers.size() && in.peers[pos] != isa::kNoPeer;
              writes =
                  writes && std::find(in.peers.begin(), in.peers.end(), rank_) != in.peers.end();
            }
            if (reads) ctx_.checker->access(agent_, in.src[0], hbm_base_, AK::read);
            if (writes) ctx_.checker->access(agent_, in.dst, hbm_base_, AK::write);
          }
          rv_ready_ = false;
          phase_ = phase::rendezvous;
          ctx_.collectives->arrive(rank_, in, &rv_);
          continue;
        }
        try {
          tm_ = instruction_timing(in, execute(in));
          // Both ends within the time range: the sums below cannot wrap.
          const sc_core::sc_time now = models::now();
          checked_time(now + tm_.issue);
          checked_time(now + tm_.done);
        } catch (const std::exception& e) {
          fail(in, e.what());
          continue;
        }
        issued_ = models::now();
        phase_ = phase::issued;
        return {K::time, 0, 0, tm_.issue};
      }
      case phase::rendezvous: {
        if (!rv_ready_) return {K::rendezvous, 0, 0, sc_core::SC_ZERO_TIME};
        const isa::Instruction& in = (*queue_)[pc_];
        tm_ = {rv_dur_, rv_dur_};
        try {
          checked_time(models::now() + rv_dur_);
        } catch (const std::exception& e) {
          fail(in, e.what());
          continue;
        }
        issued_ = models::now();
        phase_ = phase::issued;
        return {K::time, 0, 0, tm_.issue};
      }
      case phase::issued: {
        const isa::Instruction& in = (*queue_)[pc_];
        const sc_core::sc_time issued = issued_;
        // Completions keep issue order; busy time is the union of [issue, done].
        const sc_core::sc_time end =
            std::max({issued + tm_.issue, issued + tm_.done, completes_at_});
        busy_ += end - std::min(end, std::max(issued, busy_until_));
        busy_until_ = std::max(busy_until_, end);
        ++instructions_;
        ++by_opcode_[static_cast<size_t>(in.op)];
        if (in.op == isa::Opcode::matmul) {  // K x M x N multiply-adds, 2 FLOP each
          const isa::MatmulDims d = isa::matmul_dims(in);
          flops_[static_cast<size_t>(matmul_dtype(in))] += 2 * d.K * d.M * d.N;
        }
        if (ctx_.trace)
          ctx_.trace->slice(ctx_.trace->track(this), in, uint32_t(pc_), issued, tm_.issue,
                            issued - t0_, end - issued);
        complete_at(in, end);
        ++pc_;
        phase_ = phase::fetch;
        continue;
      }
      case phase::drain:
        // The queue is done when its last instruction has completed.
        if (!completions_.empty()) return {K::drain, 0, 0, sc_core::SC_ZERO_TIME};
        if (state_ != state::failed) state_ = state::done;
        return {};
    }
  }
}

void engine::run() {
  using K = park::kind;
  for (;;) {  // entered when start_event_ fires; waits for it again after the queue
    for (park p = advance(); p.k != K::finished; p = advance()) {
      if (p.k == K::sem)
        sems_.wait_ge(p.sem, p.value);
      else if (p.k == K::time)
        sc_core::wait(p.dt);
      else if (p.k == K::rendezvous)
        sc_core::wait(rv_event_);
      else
        sc_core::wait(completed_);
    }
    sc_core::wait(start_event_);
  }
}

void engine::step() {
  using K = park::kind;
  const park p = advance();
  if (p.k == K::sem) {
    ctx_.sched->park(&seq_agent_);
    sems_.wake_when_ge(p.sem, p.value, &seq_agent_);
  } else if (p.k == K::time) {
    ctx_.sched->resume_at(&seq_agent_, models::now() + p.dt);
  } else if (p.k == K::drain || p.k == K::rendezvous) {
    ctx_.sched->park(&seq_agent_);
  }
}

void engine::rv_waiter::collective_ready(const sc_core::sc_time& d) {
  // Called by the group's last arrival: for this engine itself (it goes on at
  // once), or for one parked in phase::rendezvous (woken in the next delta).
  e->rv_ready_ = true;
  e->rv_dur_ = d;
  if (e->ctx_.sched)
    e->ctx_.sched->wake(&e->seq_agent_);
  else
    e->rv_event_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace trnsim::models
