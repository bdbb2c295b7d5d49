#include "models/cosim/protocol_checker.h"

namespace trnsim::cosim {

void protocol_checker::report(uint64_t cycle, const std::string& what) {
  ++count_;
  if (violations_.size() < 64)
    violations_.push_back("cycle " + std::to_string(cycle) + ": " + what);
}

void protocol_checker::held(uint64_t cycle, const char* stream, beat& prev, bool valid, bool ready,
                            bool last, const std::vector<uint32_t>& data) {
  if (prev.stalled) {
    const std::string s = stream;
    if (!valid)
      report(cycle, s + " valid dropped before ready");
    else if (data != prev.data)
      report(cycle, s + " data changed while stalled");
    else if (last != prev.last)
      report(cycle, s + " last changed while stalled");
  }
  prev.stalled = valid && !ready;
  if (prev.stalled) {
    prev.data = data;
    prev.last = last;
  }
}

void protocol_checker::observe(uint64_t cycle, const pins_in& in, const pins_out& out) {
  if (!in.rst_n) {
    if (in.st_valid || in.mv_valid) report(cycle, "input valid during reset");
    if (out.res_valid) report(cycle, "res_valid during reset");
    if (out.st_ready || out.mv_ready) report(cycle, "ready during reset");
    // Reset ends every frame and every stall.
    st_ = mv_ = res_ = beat{};
    st_count_ = mv_count_ = mv_total_ = res_count_ = 0;
    frames_.clear();
    err_seen_ = false;
    return;
  }
  held(cycle, "st", st_, in.st_valid, out.st_ready, in.st_last, in.st_data);
  held(cycle, "mv", mv_, in.mv_valid, out.mv_ready, in.mv_last, in.mv_data);
  held(cycle, "res", res_, out.res_valid, in.res_ready, out.res_last, out.res_data);

  if (in.st_valid && out.st_ready) {
    ++st_count_;
    if (in.st_last != (st_count_ == st_beats_))
      report(cycle, "st frame: last on beat " + std::to_string(st_count_) + " of " +
                        std::to_string(st_beats_) + (in.st_last ? "" : " missing"));
    if (in.st_last || st_count_ >= st_beats_) st_count_ = 0;
  }
  if (in.mv_valid && out.mv_ready) {
    ++mv_count_;
    ++mv_total_;
    if (in.mv_last) {
      frames_.push_back(mv_count_);
      mv_count_ = 0;
    }
  }
  if (out.res_valid && in.res_ready) {
    ++res_count_;
    if (mv_total_ == 0)
      report(cycle, "result beat without a moving beat to answer");
    else
      --mv_total_;
    if (!frames_.empty()) {
      const uint64_t want = frames_.front();
      if (out.res_last != (res_count_ == want))
        report(cycle, "res frame: last on beat " + std::to_string(res_count_) +
                          " of a moving frame of " + std::to_string(want) +
                          (out.res_last ? "" : " missing"));
      if (out.res_last || res_count_ >= want) {
        frames_.pop_front();
        res_count_ = 0;
      }
    } else if (out.res_last) {
      report(cycle, "res last before the moving frame ended");
      res_count_ = 0;
    }
  }
  if (out.err && !err_seen_) report(cycle, "block raised err");
  err_seen_ = out.err;
}

}  // namespace trnsim::cosim
