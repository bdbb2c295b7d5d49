#include "models/cosim/protocol_engine.h"

#include <algorithm>

namespace trnsim::cosim {

protocol_engine::protocol_engine(rtl_block& block, protocol_checker* checker)
    : b_(block), chk_(checker) {}

void protocol_engine::set_back_pressure(double stall_rate, uint64_t seed) {
  stall_rate_ = std::clamp(stall_rate, 0.0, 1.0);
  rng_.seed(seed);
}

bool protocol_engine::ready_draw() {
  if (stall_rate_ <= 0) return true;
  // 53 random bits -> [0, 1): the same sequence on every host for a seed.
  const double u = double(rng_() >> 11) * 0x1p-53;
  return u >= stall_rate_;
}

void protocol_engine::pre_edge() {
  b_.in.clk = false;
  b_.eval();
  if (chk_) chk_->observe(now_, b_.in, b_.out);
  if (now_ >= trace_from_ && now_ < trace_to_) b_.dump_trace(2 * now_);
}

void protocol_engine::edge() {
  b_.in.clk = true;
  b_.eval();
  if (now_ >= trace_from_ && now_ < trace_to_) b_.dump_trace(2 * now_ + 1);
  ++now_;
}

void protocol_engine::reset(uint64_t cycles) {
  pins_in& in = b_.in;
  in.rst_n = false;
  in.st_valid = in.mv_valid = in.st_last = in.mv_last = false;
  in.res_ready = false;
  for (uint64_t i = 0; i < std::max<uint64_t>(cycles, 1); ++i) {
    pre_edge();
    edge();
  }
  in.rst_n = true;
}

rtl_job_result protocol_engine::run(const rtl_job& job, const engine_limits& limits) {
  rtl_job_result r;
  pins_in& in = b_.in;
  const pins_out& out = b_.out;
  const size_t stw = in.st_data.size(), mvw = in.mv_data.size(), rw = out.res_data.size();
  if (job.st_words.size() != job.st_beats * stw || job.mv_words.size() != job.mv_beats * mvw ||
      job.mv_beats == 0) {
    r.error = b_.name() + ": malformed job (frame sizes disagree with the bus widths)";
    return r;
  }
  r.res_words.reserve(job.mv_beats * rw);
  uint64_t st_sent = 0, mv_sent = 0, idle = 0, elapsed = 0;
  bool started = false;
  const uint64_t violations_before = chk_ ? chk_->violation_count() : 0;
  while (true) {
    // Offer the next beat of each input frame; the consumer side draws its ready.
    in.st_valid = st_sent < job.st_beats;
    if (in.st_valid) {
      std::copy_n(job.st_words.begin() + st_sent * stw, stw, in.st_data.begin());
      in.st_last = st_sent + 1 == job.st_beats && fault_ != fault::drop_st_last;
    }
    in.mv_valid = mv_sent < job.mv_beats;
    if (in.mv_valid) {
      std::copy_n(job.mv_words.begin() + mv_sent * mvw, mvw, in.mv_data.begin());
      in.mv_last = mv_sent + 1 == job.mv_beats && fault_ != fault::drop_mv_last;
    }
    in.res_ready = ready_draw();
    pre_edge();

    const bool st_fire = in.st_valid && out.st_ready;
    const bool mv_fire = in.mv_valid && out.mv_ready;
    const bool res_fire = out.res_valid && in.res_ready;
    const bool stalled = out.res_valid && !in.res_ready;
    if (st_fire && !started) {
      started = true;
      r.start_cycle = now_;
    }
    if (started && stalled) ++r.stall_cycles;
    st_sent += st_fire;
    mv_sent += mv_fire;
    bool done = false;
    if (res_fire) {
      r.res_words.insert(r.res_words.end(), out.res_data.begin(), out.res_data.end());
      r.res_cycle.push_back(now_);
      ++r.res_beats;
      done = out.res_last;
    }
    idle = st_fire || mv_fire || res_fire ? 0 : idle + !stalled;
    const uint64_t at = now_;
    edge();
    ++elapsed;
    if (done) {
      r.cycles = at - r.start_cycle + 1;
      break;
    }
    if (idle > limits.watchdog_cycles || elapsed > limits.max_cycles) {
      const char* waiting = st_sent < job.st_beats   ? "stationary ready"
                            : mv_sent < job.mv_beats ? "moving ready"
                                                     : "the last result";
      r.error = b_.name() + ": watchdog at cycle " + std::to_string(at) + ": " +
                (idle > limits.watchdog_cycles
                     ? "no handshake for " + std::to_string(idle) + " unstalled cycles (limit " +
                           std::to_string(limits.watchdog_cycles) + ")"
                     : "job ran " + std::to_string(elapsed) + " cycles (limit " +
                           std::to_string(limits.max_cycles) + ")") +
                "; st " + std::to_string(st_sent) + "/" + std::to_string(job.st_beats) + ", mv " +
                std::to_string(mv_sent) + "/" + std::to_string(job.mv_beats) + ", res " +
                std::to_string(r.res_beats) + "/" + std::to_string(job.mv_beats) +
                " beats; waiting for " + waiting;
      in.st_valid = in.mv_valid = false;
      return r;
    }
  }
  in.st_valid = in.mv_valid = false;
  if (chk_ && chk_->violation_count() != violations_before) {
    // The job's first violation (the checker keeps the first 64 messages).
    const auto& v = chk_->violations();
    const size_t i = std::min<size_t>(violations_before, v.size() - 1);
    r.error = b_.name() + ": protocol violation: " + v[i] +
              (chk_->violation_count() - violations_before > 1 ? " (and more)" : "");
    return r;
  }
  if (r.res_beats != job.mv_beats) {
    r.error = b_.name() + ": " + std::to_string(r.res_beats) + " result beats for " +
              std::to_string(job.mv_beats) + " moving beats";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace trnsim::cosim
