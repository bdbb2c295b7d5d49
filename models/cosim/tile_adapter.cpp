#include "models/cosim/tile_adapter.h"

#include <chrono>
#include <stdexcept>

namespace trnsim::cosim {

tile_adapter::tile_adapter(std::unique_ptr<rtl_block> block, const options& o)
    : o_(o), block_(std::move(block)), checker_(o.rows), engine_(*block_, &checker_) {
  if (o.rows < 2 || o.cols < 2)
    throw std::invalid_argument("tile_adapter: the tile needs rows, cols >= 2");
  if (block_->st_bits() != 32 * bus_words(16 * o.cols) ||
      block_->mv_bits() != 32 * bus_words(16 * o.rows) ||
      block_->res_bits() != 32 * bus_words(32 * o.cols))
    throw std::invalid_argument(
        "tile_adapter: block " + block_->name() + " has buses of " +
        std::to_string(block_->st_bits()) + "/" + std::to_string(block_->mv_bits()) + "/" +
        std::to_string(block_->res_bits()) + " bits (st/mv/res), not those of a " +
        std::to_string(o.rows) + " x " + std::to_string(o.cols) + " tile");
  if (!o.fst_path.empty()) {
    if (!block_->open_trace(o.fst_path, o.fst_depth))
      throw std::invalid_argument("tile_adapter: block " + block_->name() + " cannot write " +
                                  o.fst_path +
                                  " (built without TRACE, or the file cannot be opened)");
    engine_.set_trace_window(o.fst_from, o.fst_to);
  }
  engine_.set_back_pressure(o.stall_rate, o.seed);
}

tile_run tile_adapter::run_tile(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                                uint32_t vectors) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t R = o_.rows, C = o_.cols;
  tile_run t;
  if (w.size() != size_t{R} * C || x.size() != size_t{vectors} * R || vectors == 0) {
    t.error = "run_tile: need " + std::to_string(R * C) + " weights and S x " + std::to_string(R) +
              " moving values with S >= 1";
    return t;
  }
  // Two bf16 per bus word, element 0 in the low half.
  rtl_job job;
  job.st_beats = R;
  job.mv_beats = vectors;
  const size_t stw = bus_words(16 * C), mvw = bus_words(16 * R);
  job.st_words.assign(R * stw, 0);
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t c = 0; c < C; ++c)
      job.st_words[r * stw + c / 2] |= uint32_t{w[size_t{r} * C + c]} << (16 * (c % 2));
  job.mv_words.assign(vectors * mvw, 0);
  for (uint32_t j = 0; j < vectors; ++j)
    for (uint32_t r = 0; r < R; ++r)
      job.mv_words[j * mvw + r / 2] |= uint32_t{x[size_t{j} * R + r]} << (16 * (r % 2));

  if (!reset_done_) {  // here, not in the constructor: a timed block needs a thread
    engine_.reset(o_.reset_cycles);
    reset_done_ = true;
  }
  engine_limits lim;
  lim.watchdog_cycles = o_.watchdog_cycles ? o_.watchdog_cycles : 2ull * (R + C) + 16;
  // Back-pressure at rate p stretches a job by about 1 / (1 - p); far beyond is a hang.
  lim.max_cycles = 64 * fold_cycles(vectors) + 4096;
  rtl_job_result r = engine_.run(job, lim);
  t.ok = r.ok;
  t.error = std::move(r.error);
  t.cycles = r.cycles;
  t.stall_cycles = r.stall_cycles;
  t.start_cycle = r.start_cycle;
  t.res_cycle = std::move(r.res_cycle);
  t.out = std::move(r.res_words);  // C fp32 words per beat: already out[j * C + c]
  host_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

}  // namespace trnsim::cosim
