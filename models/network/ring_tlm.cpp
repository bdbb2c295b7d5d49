#include "models/network/ring_tlm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/common/sim_time.h"

namespace trnsim::models::network {

tlm_ring_params tlm_ring_of(const topology_params& p) {
  if (p.per_chip != 1 || p.ranks > p.net.chips)
    throw std::invalid_argument(
        "the TLM ring models one rank per chip on one node (ranks <= network.chips = " +
        std::to_string(p.net.chips) + ", 1 per chip); got " + std::to_string(p.ranks) +
        " ranks at " + std::to_string(p.per_chip) + " per chip");
  tlm_ring_params r;
  r.ranks = p.ranks;
  r.link = {p.net.link_bandwidth_bps, p.net.link_latency_s};
  r.dma = {p.dma_bps, 0};
  return r;
}

ring_rank::ring_rank(const sc_core::sc_module_name& name, tlm_ring& ring, uint32_t index)
    : sc_module(name), out("out"), in("in"), ring_(ring), index_(index) {
  in.register_b_transport(this, &ring_rank::b_transport);
}

// A transfer from the previous rank: its data is applied now (the sender's block
// no longer changes, and this rank reads it only after the arrival), and it counts
// as received at its last byte's arrival.
void ring_rank::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  sc_core::sc_time arrival = now + delay;
  link_transfer_ext* ext = nullptr;
  t.get_extension(ext);
  if (ext && ext->tail > arrival) arrival = ext->tail;
  const tlm_ring_job* job = ring_.job_;
  if (!job || t.get_command() != tlm::TLM_WRITE_COMMAND) {
    t.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  if (job->data && t.get_data_ptr()) {
    const uint64_t esize = isa::dtype_size(job->dt);
    const uint64_t first = t.get_address() / esize, n = t.get_data_length() / esize;
    std::vector<float>& mine = (*job->data)[index_];
    if (first + n > mine.size()) {
      t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    const auto* src = reinterpret_cast<const float*>(t.get_data_ptr());
    const bool reduce = ext && ext->reduce;
    for (uint64_t e = 0; e < n; ++e)
      mine[first + e] = reduce ? isa::round_to(job->dt, mine[first + e] + src[e]) : src[e];
  }
  arrivals_.push_back(arrival);
  if (arrival > last_) last_ = arrival;
  received_.notify(sc_core::SC_ZERO_TIME);
  delay = arrival - now;
  t.set_response_status(tlm::TLM_OK_RESPONSE);
}

tlm_ring::tlm_ring(const sc_core::sc_module_name& name, const tlm_ring_params& p,
                   const std::vector<uint32_t>& external)
    : sc_module(name), p_(p) {
  if (p_.ranks < 1) throw std::invalid_argument("the TLM ring needs at least 1 rank");
  for (uint32_t k : external)
    if (k >= p_.ranks)
      throw std::invalid_argument("external hop " + std::to_string(k) + " beyond " +
                                  std::to_string(p_.ranks) + " ranks");
  for (uint32_t i = 0; i < p_.ranks; ++i) {
    const std::string s = std::to_string(i);
    ranks_.push_back(std::make_unique<ring_rank>(("rank" + s).c_str(), *this, i));
    dma_.push_back(std::make_unique<link_tlm>(("rank" + s + "_dma").c_str(), p_.dma));
    const bool ext = std::find(external.begin(), external.end(), i) != external.end();
    links_.push_back(ext ? nullptr : std::make_unique<link_tlm>(("link" + s).c_str(), p_.link));
  }
  for (uint32_t i = 0; i < p_.ranks; ++i) {
    ranks_[i]->out.bind(dma_[i]->in);
    if (links_[i]) {
      dma_[i]->out.bind(links_[i]->in);
      links_[i]->out.bind(hop_sink(i));
    }
  }
  for (uint32_t i = 0; i < p_.ranks; ++i) {
    sc_core::sc_spawn_options opts;
    sc_core::sc_spawn([this, i] { rank_main(i); }, ("rank" + std::to_string(i) + "_run").c_str(),
                      &opts);
  }
}

void tlm_ring::wait_receive(uint32_t i, size_t k) {
  ring_rank& r = *ranks_[i];
  while (r.arrivals_.size() <= k) sc_core::wait(r.received_);
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (r.arrivals_[k] > now) sc_core::wait(r.arrivals_[k] - now);
}

void tlm_ring::send(uint32_t i, uint32_t block, bool reduce) {
  const uint64_t esize = isa::dtype_size(job_->dt);
  const uint64_t lo = block_begin_[block], len = block_begin_[block + 1] - lo;
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  tlm::tlm_generic_payload t;
  link_transfer_ext ext;
  ext.tail = now;
  ext.reduce = reduce;
  t.set_command(tlm::TLM_WRITE_COMMAND);
  t.set_address(lo * esize);
  t.set_data_length(len * esize);
  t.set_streaming_width(len * esize);
  t.set_byte_enable_ptr(nullptr);
  t.set_data_ptr(job_->data ? reinterpret_cast<unsigned char*>((*job_->data)[i].data() + lo)
                            : nullptr);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  t.set_extension(&ext);
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  ranks_[i]->out->b_transport(t, d);
  t.clear_extension(&ext);
  if (!t.is_response_ok()) {
    if (error_.empty())
      error_ = "rank " + std::to_string(i) + ": hop " + std::to_string(i) +
               " answered a transfer with " + t.get_response_string();
    return;
  }
  ring_rank& r = *ranks_[i];
  if (now + d > r.last_) r.last_ = now + d;
}

void tlm_ring::rank_main(uint32_t i) {
  uint64_t seen = 0;
  const uint32_t n = p_.ranks;
  ring_rank& me = *ranks_[i];
  ring_rank& next = *ranks_[(i + 1) % n];
  for (;;) {
    while (generation_ == seen) sc_core::wait(start_);
    seen = generation_;
    // Reduce phase?, in order. No heap here: a thread a failed run leaves waiting
    // never unwinds.
    bool phases[2] = {false, false};
    size_t nphases = 0;
    if (job_->c != Collective::all_gather) phases[nphases++] = true;
    if (job_->c != Collective::reduce_scatter) phases[nphases++] = false;
    size_t received = 0;
    for (size_t ph = 0; ph < nphases && n > 1; ++ph) {
      if (ph > 0) {
        // Both ends of this rank's hop have finished the previous phase.
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (me.last_ > now) sc_core::wait(me.last_ - now);
        me.phases_done_ = static_cast<uint32_t>(ph);
        me.phase_done_.notify(sc_core::SC_ZERO_TIME);
        while (next.phases_done_ < ph) sc_core::wait(next.phase_done_);
      }
      for (uint32_t s = 0; s + 1 < n; ++s) {
        if (s > 0) wait_receive(i, received++);
        const uint32_t step = phases[ph] ? s + 1 : s;
        send(i, (i + n - step % n) % n, phases[ph]);
      }
      wait_receive(i, received++);
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (me.last_ > now) sc_core::wait(me.last_ - now);
    ++finished_;
  }
}

double tlm_ring::run(const tlm_ring_job& job) {
  if (job.dt != isa::DType::fp32 && job.dt != isa::DType::bf16)
    throw std::invalid_argument("the TLM ring supports fp32 and bf16");
  const uint32_t n = p_.ranks;
  if (job.data) {
    if (job.data->size() != n) throw std::invalid_argument("one buffer per rank expected");
    for (const auto& b : *job.data)
      if (b.size() != job.count) throw std::invalid_argument("every buffer must hold count values");
  }
  block_begin_.clear();
  for (uint64_t b = 0; b <= n; ++b)
    block_begin_.push_back(b * (job.count / n) + std::min<uint64_t>(b, job.count % n));
  job_ = &job;
  finished_ = 0;
  error_.clear();
  started_ = sc_core::sc_time_stamp();
  for (auto& r : ranks_) {
    r->arrivals_.clear();
    r->phases_done_ = 0;
    r->last_ = started_;
  }
  ++generation_;
  start_.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  job_ = nullptr;
  if (!error_.empty()) throw std::runtime_error("TLM ring: " + error_);
  if (finished_ != n)
    throw std::runtime_error("TLM ring: " + std::to_string(n - finished_) +
                             " ranks did not finish (a hop never completed?)");
  sc_core::sc_time end = started_;
  for (const auto& r : ranks_) end = std::max(end, r->last_);
  return (end - started_).to_seconds();
}

}  // namespace trnsim::models::network
