#include "models/engines/tensor_engine.h"

#include <algorithm>
#include <cmath>

#include "models/common/scheduler.h"
#include "models/common/sim_time.h"
#include "models/isa/dtype.h"

namespace trnsim::models {
namespace {

using sc_core::sc_time;

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// Cycles that `work` cycles of full-rate streaming take when the rate ramps linearly
// from `start` (fraction of full) to 1 over `ramp` cycles and the stream begins
// `since` cycles into the ramp. Work done from the ramp's origin to t (t <= ramp) is
// start*t + k*t^2 with k = (1 - start) / (2 ramp).
double ramped_cycles(double work, double since, double ramp, double start) {
  if (since >= ramp || start >= 1) return work;
  const double k = (1 - start) / (2 * ramp);
  const auto done_by = [&](double t) { return start * t + k * t * t; };
  const double before = done_by(since);
  const double in_ramp = done_by(ramp) - before;
  if (work >= in_ramp) return (ramp - since) + (work - in_ramp);
  const double t = (-start + std::sqrt(start * start + 4 * k * (before + work))) / (2 * k);
  return t - since;
}

}  // namespace

tensor_engine::tensor_engine(const sc_core::sc_module_name& name, const tensor_engine_params& p,
                             semaphores& sems, sim_context& ctx)
    : engine(name, isa::Engine::tensor, p, sems, ctx), tparams_(p) {
  const uint32_t side = std::min(p.rows, p.cols);
  const uint32_t n = p.tile_size > 0 && p.tile_size < side ? side / p.tile_size : 1;
  slots_.resize(std::max<uint32_t>(n, 1));
}

tensor_engine::mapping tensor_engine::map_matmul(const isa::Instruction& in) const {
  const isa::AccessPattern &st = in.src[0], &mv = in.src[1];
  const auto [K, M, N] = isa::matmul_dims(in);
  const bool double_row = tparams_.fp8_double_row && isa::is_fp8(st.dtype);
  const bool fp32 = st.dtype == isa::DType::fp32 || mv.dtype == isa::DType::fp32;
  const uint32_t t = tparams_.tile_size;
  mapping m;
  m.tiled = slots_.size() > 1 && !double_row && K <= t && M <= t;
  m.rows = m.tiled ? t : tparams_.rows;
  m.cols = m.tiled ? t : tparams_.cols;
  m.k_passes = ceil_div(K, uint64_t{m.rows} * (double_row ? 2 : 1));
  m.m_passes = ceil_div(M, m.cols);
  m.stream = std::max<uint64_t>(N, params_.min_ii_cycles) * (fp32 ? tparams_.fp32_slowdown : 1);
  return m;
}

uint64_t tensor_engine::cost_cycles(const isa::Instruction& in) {
  switch (in.op) {
    case isa::Opcode::matmul: {
      const mapping m = map_matmul(in);
      return m.k_passes * m.m_passes * (2 * uint64_t{m.rows} + m.cols + m.stream - 2);
    }
    case isa::Opcode::transpose: {
      // src^T against the identity: P on rows, F on columns, folded on a small array.
      const uint64_t p = in.src[0].partition_count, f = in.src[0].free_elems();
      const uint64_t pp = std::min<uint64_t>(p, tparams_.rows);
      const uint64_t fp = std::min<uint64_t>(f, tparams_.cols);
      return ceil_div(p, tparams_.rows) * ceil_div(f, tparams_.cols) *
             std::max<uint64_t>(pp, std::min<uint64_t>(params_.min_ii_cycles, fp));
    }
    default:
      return 0;
  }
}

double tensor_engine::utilisation(const sc_time& from, const sc_time& to) const {
  if (to <= from) return 1;
  double busy = 0;
  for (const auto& a : activity_) {
    const sc_time s = std::max(a.start, from), e = std::min(a.end, to);
    if (e > s) busy += a.weight * (e - s).to_seconds();
  }
  return busy / (to - from).to_seconds();
}

sc_time tensor_engine::stream_time(const sc_time& at, uint64_t cycles, double weight) {
  if (!tparams_.throttle || cycles == 0) return cycles_to_time(double(cycles));
  if (!window_valid_) {
    window_ = sc_time(tparams_.throttle_idle_s, sc_core::SC_SEC);
    window_valid_ = true;
  }
  const sc_time window = window_;
  if (!ramping_ ||
      (at >= ramp_origin_ + window && utilisation(at - window, at) < tparams_.throttle_reengage)) {
    ramping_ = true;
    ramp_origin_ = at;
  }
  const double hz = params_.clock_hz;
  const double since = at > ramp_origin_ ? (at - ramp_origin_).to_seconds() * hz : 0;
  const double c =
      ramped_cycles(double(cycles), since, tparams_.throttle_ramp_s * hz, tparams_.throttle_start);
  // Whole cycles; the epsilon keeps an exact result from rounding up.
  const sc_time d = cycles_to_time(std::ceil(c - 1e-9));
  // Streams start out of order across tile slots: keep two windows of history.
  std::erase_if(activity_, [&](const activity& a) { return a.end + window + window < at; });
  activity_.push_back({at, at + d, weight});
  return d;
}

engine::timing tensor_engine::transpose_timing(const isa::Instruction& in, const sc_time& port) {
  const sc_time now = models::now();
  sc_time start = checked_time(now + cycles_to_time(params_.overhead_cycles));
  for (const auto& s : slots_)
    start = std::max(start, tparams_.background_load ? s.stream_free : s.done);
  const sc_time end =
      checked_time(start + std::max(stream_time(start, cost_cycles(in), 1.0), port));
  for (auto& s : slots_) s = {end, end, end};
  return {end - now, end - now};
}

sc_time tensor_engine::execute(const isa::Instruction& in) {
  array_timed_ = false;
  exec_start_ = now();
  return engine::execute(in);
}

void tensor_engine::compute(const isa::Instruction& in, ExecArgs& args, ExecResult& res) {
  if (!datapath_ || in.op != isa::Opcode::matmul) return engine::compute(in, args, res);
  // A matmul reads its two operands (stationary, moving) and writes dst (isa::validate).
  const uint64_t cycles = datapath_->matmul(in, args.src[0], args.src[1], res.dst);
  ++dp_matmuls_;
  dp_cycles_ += cycles;
  dp_model_cycles_ += cost_cycles(in);
  array_timed_ = datapath_->array_clock_hz() > 0;
  last_array_cycles_ = cycles;
}

void tensor_engine::compute_on(worker_pool* pool, psum* p, size_t in_flight) {
  pool_ = pool && pool->workers() > 0 ? pool : nullptr;
  psum_ = p;
  in_flight_ = std::max<size_t>(in_flight, 1);
}

bool tensor_engine::defer(const isa::Instruction& in, ExecArgs& args) {
  if (!pool_ || !psum_ || datapath_ || in.op != isa::Opcode::matmul ||
      in.dst.space != isa::MemSpace::psum || in.dst.dtype != isa::DType::fp32)
    return false;
  if (psum_->held() >= in_flight_) psum_->drain(in_flight_ - 1);
  std::shared_ptr<job> j;
  if (spare_.empty()) {
    j = std::make_shared<job>();
  } else {
    j = std::move(spare_.back());
    spare_.pop_back();
  }
  // The operands move to the job; the engine reads the next ones into its buffers.
  std::swap(j->args.src[0], args.src[0]);
  std::swap(j->args.src[1], args.src[1]);
  j->in = in;  // a copy: the worker never looks at the program
  auto t = pool_->submit([j] { models::execute(j->in, j->args, j->res); });
  psum::held_write w;
  w.ap = in.dst;
  w.accumulate = in.accumulate;
  w.data = [t, j] {
    t->wait();
    return reinterpret_cast<const uint8_t*>(j->res.dst.v.data());
  };
  w.done = [this, j] { spare_.push_back(j); };
  psum_->hold(std::move(w));
  return true;
}

engine::timing tensor_engine::datapath_timing(const sc_time& port) {
  // Relative to the start of execute(): a timed RTL block has already spent its
  // cycles of SystemC time in there, a decoupled one none.
  const sc_time t0 = exec_start_;
  sc_time start = checked_time(t0 + cycles_to_time(params_.overhead_cycles));
  for (const auto& s : slots_) start = std::max(start, s.done);
  const sc_time array = seconds_to_time(double(last_array_cycles_) / datapath_->array_clock_hz());
  // As in the cost model, the port time bounds the span from the load to the end of
  // the stream, which is the array time without its drain.
  const sc_time drain = cycles_to_time(double(tparams_.rows + tparams_.cols - 2));
  sc_time done = start + array;
  if (array < drain + port) done = checked_time(start + port) + drain;
  checked_time(done);
  for (auto& s : slots_) s = {done, done, done};
  const sc_time now = models::now();
  const sc_time rest = done > now ? done - now : sc_core::SC_ZERO_TIME;
  return {rest, rest};
}

engine::timing tensor_engine::instruction_timing(const isa::Instruction& in, const sc_time& port) {
  if (array_timed_) return datapath_timing(port);
  if (in.op == isa::Opcode::transpose) return transpose_timing(in, port);
  if (in.op != isa::Opcode::matmul) return engine::instruction_timing(in, port);

  const sc_time now = models::now();
  const bool bg = tparams_.background_load;
  const mapping m = map_matmul(in);
  // The slots it occupies: the earliest free tile, or all of them.
  size_t first = 0, count = slots_.size();
  if (m.tiled) {
    count = 1;
    for (size_t i = 1; i < slots_.size(); ++i) {
      const auto key = [&](const slot& s) { return bg ? s.stream_free : s.done; };
      if (key(slots_[i]) < key(slots_[first])) first = i;
    }
  }
  slot s = slots_[first];
  for (size_t i = first + 1; i < first + count; ++i) {
    s.shadow_free = std::max(s.shadow_free, slots_[i].shadow_free);
    s.stream_free = std::max(s.stream_free, slots_[i].stream_free);
    s.done = std::max(s.done, slots_[i].done);
  }

  const uint64_t M = in.src[0].free_elems();
  const sc_time drain = cycles_to_time(double(m.rows + m.cols - 2));
  const double weight =
      m.tiled ? double(m.rows) * m.cols / (double(tparams_.rows) * tparams_.cols) : 1.0;
  // Every time below stays in range (checked_time), so no sum of two wraps.
  sc_time ready = checked_time(now + cycles_to_time(params_.overhead_cycles));
  sc_time first_load = sc_core::SC_ZERO_TIME, last_load = sc_core::SC_ZERO_TIME;
  for (uint64_t j = 0; j < m.m_passes; ++j) {
    const uint64_t cols = std::min<uint64_t>(m.cols, M - j * m.cols);
    for (uint64_t k = 0; k < m.k_passes; ++k) {
      sc_time load, stream;
      if (bg) {
        // Into the shadow buffer once the previous pass has moved its tile out of it.
        load = std::max(ready, s.shadow_free);
        ready =
            checked_time(load + cycles_to_time(double(ceil_div(cols, tparams_.fast_load_speedup))));
        stream = std::max(ready, s.stream_free);
      } else {
        // Row by row into the drained array.
        load = std::max(ready, s.done);
        stream = checked_time(load + cycles_to_time(double(m.rows)));
      }
      const sc_time end = checked_time(stream + stream_time(stream, m.stream, weight));
      if (j == 0 && k == 0) first_load = load;
      last_load = load;
      s = {stream, end, checked_time(end + drain)};
      if (!bg) ready = s.done;
    }
  }
  // Its SBUF reads and PSUM writes take place between its first load and the end of
  // its last stream: the port time bounds that span.
  if (s.stream_free < first_load + port) {
    const sc_time extra = first_load + port - s.stream_free;
    s.stream_free += extra;
    s.done += extra;
  }
  for (size_t i = first; i < first + count; ++i) slots_[i] = s;
  const sc_time release = bg ? last_load : m.tiled ? first_load : s.done;
  return {release - now, s.done - now};
}

}  // namespace trnsim::models
