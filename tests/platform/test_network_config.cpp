// The `network:` section: the presets' figures (docs/hardware.md, Scale-out) and
// the errors for a network that cannot exist, each naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/config.h"
#include "tests/platform/config_test_util.h"

using namespace trnsim::platform;
using namespace trnsim::platform::test;

namespace {

std::string load_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return config_error([&] { parse_config(yaml, "net.yaml", sets); });
}

}  // namespace

TEST(ConfigNetwork, PresetsMatchHardwareMd) {
  const platform_config trn2 = load_config("trn2");
  EXPECT_EQ(trn2.network.chips, 16u);  // trn2.48xlarge: 16 chips, 4 x 4 torus
  EXPECT_EQ(trn2.network.torus_x, 4u);
  EXPECT_EQ(trn2.network.torus_y, 4u);
  EXPECT_EQ(trn2.network.links_per_chip, 4u);
  // 1.28 TB/s per chip over 4 links.
  EXPECT_DOUBLE_EQ(trn2.network.link_bandwidth_bps * trn2.network.links_per_chip, 1.28e12);
  EXPECT_DOUBLE_EQ(trn2.network.node_bandwidth_bps * 8, 3.2e12);  // 3.2 Tbps EFA
  EXPECT_DOUBLE_EQ(trn2.network.chip_local_bandwidth_bps, 3.5e12);
  const platform_config trn1 = load_config("trn1");
  EXPECT_DOUBLE_EQ(trn1.network.link_bandwidth_bps * trn1.network.links_per_chip, 384e9);
  EXPECT_DOUBLE_EQ(trn1.network.node_bandwidth_bps * 8, 800e9);  // 800 Gbps EFA
  EXPECT_DOUBLE_EQ(trn1.network.chip_local_bandwidth_bps, 1e12);
  const platform_config trn3 = load_config("trn3");
  EXPECT_DOUBLE_EQ(trn3.network.link_bandwidth_bps * trn3.network.links_per_chip, 2.56e12);
  const platform_config tiny = load_config("tiny");
  EXPECT_EQ(tiny.network.chips, 4u);
  EXPECT_EQ(tiny.network.torus_y, 1u);  // a ring
  EXPECT_EQ(tiny.network.links_per_chip, 2u);
}

TEST(ConfigNetwork, DescribeAndSchemaListTheKeys) {
  const std::string d = describe(load_config("trn2"));
  EXPECT_TRUE(has(d, "network.link_bandwidth")) << d;
  EXPECT_TRUE(has(d, "network.torus_x")) << d;
  const std::string t = schema_table();
  EXPECT_TRUE(has(t, "network.node_latency")) << t;
  EXPECT_TRUE(has(t, "chips per node")) << t;
}

TEST(ConfigNetwork, TorusThatDoesNotHoldTheChipsNamesTheKey) {
  const std::string e = load_error("base: trn2\nnetwork:\n  torus_x: 3\n");
  EXPECT_TRUE(has(e,
                  "net.yaml:3: network.torus_x: torus_x x torus_y = 3 x 4 = 12 must equal "
                  "network.chips (16)"))
      << e;
  // A ring of 16 still needs 2 links per chip, not the torus's 4.
  const std::string l = load_error("base: trn2\n", {"network.torus_x=16", "network.torus_y=1"});
  EXPECT_TRUE(has(l, "network.links_per_chip: 4 does not fit a 16 x 1 torus: each chip needs 2"))
      << l;
  EXPECT_EQ(load_error("base: trn2\n",
                       {"network.torus_x=16", "network.torus_y=1", "network.links_per_chip=2"}),
            "<no error>");
}

TEST(ConfigNetwork, ZeroBandwidthAndCountsNameTheKey) {
  const std::string b = load_error("base: trn2\nnetwork:\n  link_bandwidth: 0GB/s\n");
  EXPECT_TRUE(has(b, "net.yaml:3: network.link_bandwidth: must be >= 1kB/s (got '0GB/s')")) << b;
  const std::string n = load_error("base: trn2\n", {"network.node_bandwidth=0B/s"});
  EXPECT_TRUE(has(n, "network.node_bandwidth")) << n;
  EXPECT_TRUE(has(n, "must be >= 1kB/s")) << n;
  const std::string c = load_error("base: trn2\n", {"network.chips=0"});
  EXPECT_TRUE(has(c, "network.chips")) << c;
  const std::string u = load_error("base: trn2\nnetwork:\n  link_latency: 5\n");
  EXPECT_TRUE(has(u, "network.link_latency")) << u;
}

TEST(ConfigNetwork, TlmPacketParsesSizesAndNamesTheKeyWhenBad) {
  // 4 KiB by default; sizes parse as other size keys do (with a unit); 0B turns
  // packets off.
  EXPECT_EQ(load_config("trn2").network.tlm_packet_bytes, 4096u);
  EXPECT_EQ(parse_config("base: trn2\n", "net.yaml", {"network.tlm_packet=64KiB"})
                .network.tlm_packet_bytes,
            65536u);  // 64 x 1024
  EXPECT_EQ(
      parse_config("base: trn2\nnetwork:\n  tlm_packet: 0B\n", "net.yaml").network.tlm_packet_bytes,
      0u);
  for (const std::string bad : {"-1", "abc", "2GiB", "4KiB/s"}) {
    SCOPED_TRACE(bad);
    const std::string e = load_error("base: trn2\n", {"network.tlm_packet=" + bad});
    EXPECT_TRUE(has(e, "network.tlm_packet")) << e;
  }
  const std::string y = load_error("base: trn2\nnetwork:\n  tlm_packet: 1.5\n");
  EXPECT_TRUE(has(y, "net.yaml:3: network.tlm_packet")) << y;
}
