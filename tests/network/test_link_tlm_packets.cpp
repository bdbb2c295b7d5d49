// Packets on a TLM link (models/network/link_tlm.h, network.tlm_packet): a transfer
// cut into packets fills the idle gaps other transfers left; without packets it
// waits for a stretch long enough for all of it. The links run at 1 B/ns (1000 B
// per us) or 1 B/ps, so a transfer's duration is its byte count in ns or ps, and
// have no latency: a span's drain is its last byte's. Each test elaborates its own
// SystemC model (ctest runs each in its own process).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "models/network/link_tlm.h"
#include "models/network/network_tlm.h"
#include "tests/network/topology_fixture.h"

namespace {

using namespace trnsim::models::network;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

// A far end that accepts everything.
struct sink : sc_core::sc_module {
  tlm_utils::simple_target_socket<sink> in;
  explicit sink(const sc_core::sc_module_name& n) : sc_module(n), in("in") {
    in.register_b_transport(this, &sink::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_time&) {
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

struct offer {
  sc_time head;
  uint64_t bytes;
};

// Offers its transfers at time 0, in list order, each with its head as the annotated
// delay (loosely timed: heads need not be in order); keeps each one's span.
struct driver : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<driver> out;
  std::vector<offer> offers;
  std::vector<link_span> spans;
  driver(const sc_core::sc_module_name& n, std::vector<offer> o)
      : sc_module(n), out("out"), offers(std::move(o)) {
    sc_core::sc_spawn([this] { run(); }, "run");
  }
  void run() {
    for (const offer& o : offers) {
      tlm::tlm_generic_payload t;
      t.set_command(tlm::TLM_WRITE_COMMAND);
      t.set_data_length(static_cast<unsigned int>(o.bytes));
      t.set_streaming_width(static_cast<unsigned int>(o.bytes));
      t.set_data_ptr(nullptr);
      std::vector<link_span> rec;
      link_transfer_ext ext;
      ext.record = &rec;
      t.set_extension(&ext);
      sc_time d = o.head;
      out->b_transport(t, d);
      t.clear_extension(&ext);
      ASSERT_EQ(rec.size(), 1u);
      spans.push_back(rec[0]);
    }
  }
};

// A link fed by its own driver (the offers) into its own sink, bound at construction.
struct lane {
  link_tlm link;
  driver d;
  sink s;
  lane(const std::string& name, const link_params& p, uint64_t packet, std::vector<offer> w)
      : link(name.c_str(), p, packet),
        d((name + "_d").c_str(), std::move(w)),
        s((name + "_s").c_str()) {
    d.out.bind(link.in);
    link.out.bind(s.in);
  }
};

sc_time us(double v) {
  return sc_time(v * 1000, SC_NS);
}

// 1 B/ns, no latency.
const link_params kSlow{1e9, 0};

TEST(LinkTlmPackets, PacketsFillTheGapsEarlierTransfersLeft) {
  // Reservations [0, 1) us and [2, 3) us (1000 B each at 1000 B/us), then 1500 B
  // (1.5 us) at head 0. Packets of 500 B (0.5 us): two fill the gap [1, 2), the third
  // takes [3, 3.5): start 1 us, drain 3.5 us. Whole: no gap holds 1.5 us, so it
  // starts at 3 us and drains at 3 + 1.5 = 4.5 us.
  const std::vector<offer> w = {{us(0), 1000}, {us(2), 1000}, {us(0), 1500}};
  lane pk("pk", kSlow, 500, w), whole("whole", kSlow, 0, w);
  sc_core::sc_start();
  ASSERT_EQ(pk.d.spans.size(), 3u);
  ASSERT_EQ(whole.d.spans.size(), 3u);
  EXPECT_EQ(pk.d.spans[2].start, us(1));
  EXPECT_EQ(pk.d.spans[2].drain, us(3.5));
  EXPECT_EQ(whole.d.spans[2].start, us(3));
  EXPECT_EQ(whole.d.spans[2].drain, us(4.5));
  // Serializing: 1 + 1 + 1.5 us either way. Queued: the third waited 3.5 - 0 - 1.5
  // = 2 us with packets (the reservations it went around), 4.5 - 0 - 1.5 = 3 us whole.
  EXPECT_EQ(pk.link.stats().busy, us(3.5));
  EXPECT_EQ(whole.link.stats().busy, us(3.5));
  EXPECT_EQ(pk.link.stats().queued, us(2));
  EXPECT_EQ(whole.link.stats().queued, us(3));
  EXPECT_EQ(pk.link.stats().bytes, 3500u);
  EXPECT_EQ(pk.link.stats().transfers, 3u);
  EXPECT_EQ(pk.link.packet_bytes(), 500u);
}

TEST(LinkTlmPackets, AGapShorterThanAPacketIsSkipped) {
  // Reservations [0, 1) us and [1.4, 2.4) us leave a 0.4 us gap (400 B). 1000 B at
  // head 0 with packets of 500 B: no packet fits the gap, so both go after 2.4 us:
  // [2.4, 3.4). With packets of 400 B: one fills [1, 1.4), the other 600 B (a
  // 400 B packet and a 200 B one) take [2.4, 3.0).
  const std::vector<offer> w = {{us(0), 1000}, {us(1.4), 1000}, {us(0), 1000}};
  lane big("big", kSlow, 500, w), small("small", kSlow, 400, w);
  sc_core::sc_start();
  ASSERT_EQ(big.d.spans.size(), 3u);
  ASSERT_EQ(small.d.spans.size(), 3u);
  EXPECT_EQ(big.d.spans[2].start, us(2.4));
  EXPECT_EQ(big.d.spans[2].drain, us(3.4));
  EXPECT_EQ(small.d.spans[2].start, us(1));
  EXPECT_EQ(small.d.spans[2].drain, us(3.0));
}

TEST(LinkTlmPackets, TheShortLastPacketFitsAShortGap) {
  // Reservations [0, 1), [2, 2.3) and [2.6, 3.6) us. 1300 B at head 0, packets of
  // 500 B: two fill [1, 2); the last 300 B packet fits the 0.3 us gap [2.3, 2.6)
  // exactly, so it drains at 2.6 us (and the later stretch is not needed).
  const std::vector<offer> w = {
      {us(0), 1000}, {us(2), 300}, {us(2.6), 1000}, {us(0), 1300}, {us(0), 100}};
  lane ln("l", kSlow, 500, w);
  const driver& d = ln.d;
  sc_core::sc_start();
  ASSERT_EQ(d.spans.size(), 5u);
  EXPECT_EQ(d.spans[3].start, us(1));
  EXPECT_EQ(d.spans[3].drain, us(2.6));
  // [0, 3.6) is now all busy, so a 100 B transfer at head 0 goes to [3.6, 3.7).
  EXPECT_EQ(d.spans[4].start, us(3.6));
  EXPECT_EQ(d.spans[4].drain, us(3.7));
}

TEST(LinkTlmPackets, ZeroBytesAndAPacketLargerThanTheTransfer) {
  // Reservations [0, 1) and [2, 3) us. A zero-byte transfer at head 0.5 us takes no
  // time at the first idle instant, 1 us, and books nothing: 1500 B offered next at
  // head 0 with packets of 4096 B (larger than it: one whole packet) finds no gap
  // of 1.5 us and takes [3, 4.5), as without packets. 400 B at head 0 then fits the
  // untouched gap [1, 2): [1, 1.4).
  const std::vector<offer> w = {
      {us(0), 1000}, {us(2), 1000}, {us(0.5), 0}, {us(0), 1500}, {us(0), 400}};
  lane ln("l", kSlow, 4096, w);
  const link_tlm& l = ln.link;
  const driver& d = ln.d;
  sc_core::sc_start();
  ASSERT_EQ(d.spans.size(), 5u);
  EXPECT_EQ(d.spans[2].start, us(1));
  EXPECT_EQ(d.spans[2].drain, us(1));
  EXPECT_EQ(d.spans[3].start, us(3));
  EXPECT_EQ(d.spans[3].drain, us(4.5));
  EXPECT_EQ(d.spans[4].start, us(1));
  EXPECT_EQ(d.spans[4].drain, us(1.4));
  // 1 + 1 + 0 + 1.5 + 0.4 us serializing; five transfers, 3900 B.
  EXPECT_EQ(l.stats().busy, us(3.9));
  EXPECT_EQ(l.stats().transfers, 5u);
  EXPECT_EQ(l.stats().bytes, 3900u);
}

// The reference: every packet on its own, in order, each in the earliest idle
// stretch at or after the previous one's end (the first: the transfer's head) long
// enough for it. Times in ps at 1 B/ps, so a packet of b bytes lasts b ps.
struct reference_link {
  std::map<uint64_t, uint64_t> busy;  // start -> end, unmerged
  uint64_t pkt;
  std::pair<uint64_t, uint64_t> place(uint64_t head, uint64_t bytes) {
    const uint64_t p = pkt == 0 ? bytes : pkt;
    uint64_t cursor = head, first = head, left = bytes;
    bool started = false;
    do {
      const uint64_t len = std::min(p, left);
      uint64_t s = cursor;
      for (bool moved = true; moved;) {  // until no reservation overlaps [s, s + len)
        moved = false;
        for (const auto& [b, e] : busy)
          if (b < s + std::max<uint64_t>(len, 1) && e > s) {
            s = e;
            moved = true;
          }
      }
      if (!started) first = s;
      started = true;
      if (len > 0) busy[s] = s + len;
      cursor = s + len;
      left -= len;
    } while (left > 0);
    return {first, cursor};
  }
};

TEST(LinkTlmPackets, MatchesPacketByPacketPlacementAndIsDeterministic) {
  // 300 transfers of 0..6000 B at heads in [0, 200000) ps, offered out of time
  // order, from a fixed linear congruential sequence; packets of 1000 B (1 ns at
  // 1 B/ps). The link's gap-by-gap placement must give every transfer the start and
  // drain of the packet-by-packet reference, and two links fed alike equal spans.
  std::vector<offer> w;
  std::vector<uint64_t> heads_ps;
  uint64_t x = 12345;
  const auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  for (int k = 0; k < 300; ++k) {
    const uint64_t head = next() % 200000;
    const uint64_t bytes = next() % 6001;
    heads_ps.push_back(head);
    w.push_back({sc_time(static_cast<double>(head), SC_PS), bytes});
  }
  const link_params fast{1e12, 0};
  lane la("a", fast, 1000, w), lb("b", fast, 1000, w), lw("whole", fast, 0, w);
  const link_tlm &a = la.link, &b = lb.link, &whole = lw.link;
  const driver &da = la.d, &db = lb.d, &dw = lw.d;
  sc_core::sc_start();
  ASSERT_EQ(da.spans.size(), w.size());
  ASSERT_EQ(dw.spans.size(), w.size());
  reference_link ref{{}, 1000}, ref_whole{{}, 0};
  for (size_t k = 0; k < w.size(); ++k) {
    SCOPED_TRACE("transfer " + std::to_string(k));
    const uint64_t head = heads_ps[k];
    const auto [s, e] = ref.place(head, w[k].bytes);
    EXPECT_EQ(da.spans[k].start, sc_time(static_cast<double>(s), SC_PS));
    EXPECT_EQ(da.spans[k].drain, sc_time(static_cast<double>(e), SC_PS));
    const auto [ws, we] = ref_whole.place(head, w[k].bytes);
    EXPECT_EQ(dw.spans[k].start, sc_time(static_cast<double>(ws), SC_PS));
    EXPECT_EQ(dw.spans[k].drain, sc_time(static_cast<double>(we), SC_PS));
    EXPECT_EQ(db.spans[k].start, da.spans[k].start);
    EXPECT_EQ(db.spans[k].drain, da.spans[k].drain);
  }
  EXPECT_EQ(a.stats().busy, b.stats().busy);
  EXPECT_EQ(a.stats().queued, b.stats().queued);
  EXPECT_EQ(a.stats().busy, whole.stats().busy);  // the same bytes either way
}

TEST(LinkTlmPackets, TheNetworkKeySetsEveryLinksPacket) {
  // network.tlm_packet reaches every link of a TLM network, and 0 turns packets off.
  for (const auto& [set, want] : std::vector<std::pair<std::string, uint64_t>>{
           {"network.tlm_packet=2KiB", 2048}, {"network.tlm_packet=0B", 0}}) {
    SCOPED_TRACE(set);
    const topology_params p = trnsim::test::tiny_topology(4, 1, {set});
    EXPECT_EQ(p.net.tlm_packet_bytes, want);
    tlm_network n(("net" + std::to_string(want)).c_str(), p);
    ASSERT_GT(n.size(), 0u);
    for (size_t k = 0; k < n.size(); ++k) EXPECT_EQ(n.link(k).packet_bytes(), want);
  }
}

}  // namespace
