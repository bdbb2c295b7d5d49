// Statistics tree (models/common/stats.*): JSON output checked by Python's json
// module, dotted-path lookup, the text dump, escaping and number formatting.
#include "models/common/stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/python_env.h"

namespace trnsim::stats {
namespace {

// Feeds `json` to python3 running `script` (which sees the parsed document as `d`)
// and returns what it prints; a parse error shows up as a Python traceback.
std::string python_json(const std::string& json, const std::string& script) {
  char path[] = "/tmp/trnsim_stats_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "ERROR: mkstemp failed";
  const ssize_t w = ::write(fd, json.data(), json.size());
  ::close(fd);
  if (w != static_cast<ssize_t>(json.size())) return "ERROR: short write";
  const std::string cmd = "/usr/bin/python3 -c 'import json,sys\nd=json.load(sys.stdin)\n" +
                          script + "' < " + path + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  unlink(path);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) v.push_back(l);
  return v;
}

// A tree shaped like the platform's: counters at the root, nested groups, a getter
// stat, a NaN stat and an empty group.
struct sample_tree {
  uint64_t instructions = 42;
  double sim_ns = 1234.5;
  uint64_t core_bytes = 4096;
  double tenth = 0.1;
  group root{"trnsim"};
  sample_tree() {
    root.add_counter("instructions", "instructions", "instructions executed", &instructions);
    root.add_value("simulated_ns", "ns", "simulated time", &sim_ns);
    group& chip = root.child("chip", "the simulated chip");
    chip.child("core0", "one NeuronCore").add_counter("bytes", "bytes", "bytes moved", &core_bytes);
    group& hbm = chip.child("hbm", "shared memory");
    hbm.add("busy_ns", "ns", "time in use", [] { return 12.5; });
    hbm.add("ratio", "", "a non-integer value", [this] { return tenth; });
    hbm.add("undefined", "x", "no value yet", [] { return std::nan(""); });
    chip.child("empty", "a group without stats");
  }
};

TEST(Stats, JsonParsesWithNestedGroupsAndMeta) {
  TRNSIM_REQUIRE_PYTHON(test::python_has({"json"}));
  sample_tree t;
  const std::string js = t.root.to_json();
  // Canonical re-serialisation: the values tree, the meta map last, NaN as null,
  // 0.1 printed with 17 digits reads back as exactly 0.1.
  EXPECT_EQ(python_json(js, "print(json.dumps(d, sort_keys=True))"),
            "{\"chip\": {\"core0\": {\"bytes\": 4096}, \"empty\": {}, \"hbm\": {\"busy_ns\": 12.5, "
            "\"ratio\": 0.1, \"undefined\": null}}, \"instructions\": 42, \"meta\": "
            "{\"chip.core0.bytes\": {\"desc\": \"bytes moved\", \"unit\": \"bytes\"}, "
            "\"chip.hbm.busy_ns\": {\"desc\": \"time in use\", \"unit\": \"ns\"}, "
            "\"chip.hbm.ratio\": {\"desc\": \"a non-integer value\", \"unit\": \"\"}, "
            "\"chip.hbm.undefined\": {\"desc\": \"no value yet\", \"unit\": \"x\"}, "
            "\"instructions\": {\"desc\": \"instructions executed\", \"unit\": \"instructions\"}, "
            "\"simulated_ns\": {\"desc\": \"simulated time\", \"unit\": \"ns\"}}, "
            "\"simulated_ns\": 1234.5}");
  // Integer counters are JSON integers, values are floats.
  EXPECT_EQ(python_json(js,
                        "print(type(d[\"instructions\"]).__name__, "
                        "type(d[\"chip\"][\"hbm\"][\"busy_ns\"]).__name__)"),
            "int float");
  // The meta map is the last member of the top-level object.
  EXPECT_EQ(python_json(js, "print(list(d)[-1])"), "meta");
}

TEST(Stats, JsonOfEmptyTreesIsValid) {
  TRNSIM_REQUIRE_PYTHON(test::python_has({"json"}));
  group empty("root");
  EXPECT_EQ(python_json(empty.to_json(), "print(json.dumps(d))"), "{\"meta\": {}}");
  group only_children("root");
  only_children.child("a").child("b");
  EXPECT_EQ(python_json(only_children.to_json(), "print(json.dumps(d, sort_keys=True))"),
            "{\"a\": {\"b\": {}}, \"meta\": {}}");
}

TEST(Stats, JsonEscapesNamesUnitsAndDescriptions) {
  TRNSIM_REQUIRE_PYTHON(test::python_has({"json"}));
  group g("root");
  const std::string desc = std::string("say \"hi\" \\ path\nnext\tcol ") + char(1);
  g.child("we\"ird").add("v\\1", "u\"nit", desc, [] { return 1.0; });
  const std::string js = g.to_json();
  // %.17g prints an integral value without a fraction: a JSON integer.
  EXPECT_EQ(python_json(js, "print(d[\"we\\\"ird\"][\"v\\\\1\"])"), "1");
  EXPECT_EQ(python_json(js,
                        "m=d[\"meta\"][\"we\\\"ird.v\\\\1\"]\n"
                        "print(m[\"unit\"] == \"u\\\"nit\", "
                        "m[\"desc\"] == \"say \\\"hi\\\" \\\\ path\\nnext\\tcol \\x01\")"),
            "True True");
}

TEST(Stats, JsonNumberAndEscapeHelpers) {
  EXPECT_EQ(json_number(3.0, true), "3");
  EXPECT_EQ(json_number(1e15, true), "1000000000000000");
  EXPECT_EQ(json_number(0.1, false), "0.10000000000000001");  // %.17g round-trips
  EXPECT_EQ(json_number(-2.5, false), "-2.5");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity(), false), "null");
  EXPECT_EQ(json_number(std::nan(""), true), "null");
  EXPECT_EQ(json_escape("a\"b\\c\n\t"), "a\\\"b\\\\c\\n\\t");
  EXPECT_EQ(json_escape(std::string(1, char(0x1f))), "\\u001f");
  EXPECT_EQ(json_escape("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
}

TEST(Stats, ValueLooksUpDottedPaths) {
  sample_tree t;
  EXPECT_EQ(t.root.value("instructions"), 42.0);
  EXPECT_EQ(t.root.value("simulated_ns"), 1234.5);
  EXPECT_EQ(t.root.value("chip.core0.bytes"), 4096.0);
  EXPECT_EQ(t.root.value("chip.hbm.busy_ns"), 12.5);
  // Relative to a subgroup.
  EXPECT_EQ(t.root.find_child("chip")->value("core0.bytes"), 4096.0);
  // Getters are read at lookup time, not at registration.
  t.core_bytes = 8192;
  EXPECT_EQ(t.root.value("chip.core0.bytes"), 8192.0);
  // Absent paths, groups and empty strings give NaN.
  EXPECT_TRUE(std::isnan(t.root.value("chip.core1.bytes")));
  EXPECT_TRUE(std::isnan(t.root.value("chip.core0")));
  EXPECT_TRUE(std::isnan(t.root.value("chip.core0.bytes.more")));
  EXPECT_TRUE(std::isnan(t.root.value("nothing")));
  EXPECT_TRUE(std::isnan(t.root.value("")));
}

TEST(Stats, ChildCreatesOnceAndFindChildFinds) {
  group g("root");
  group& a = g.child("a", "first");
  group& again = g.child("a", "ignored");
  EXPECT_EQ(&a, &again);
  EXPECT_EQ(g.find_child("a"), &a);
  EXPECT_EQ(g.find_child("b"), nullptr);
  EXPECT_EQ(a.name(), "a");
}

TEST(Stats, TextDumpHasOneAlignedLinePerStat) {
  sample_tree t;
  const auto l = lines(t.root.to_text());
  ASSERT_EQ(l.size(), 6u);
  // "dotted.name" padded to 48, value right-aligned in 16, unit padded to 10, "# desc".
  EXPECT_EQ(l[0], std::string("instructions") + std::string(36, ' ') + " " + std::string(14, ' ') +
                      "42" + " instructions # instructions executed");
  EXPECT_EQ(l[1], std::string("simulated_ns") + std::string(36, ' ') + " " + std::string(10, ' ') +
                      "1234.5" + " ns         # simulated time");
  // Root stats first, then the children depth first in creation order.
  EXPECT_EQ(l[2].substr(0, 17), "chip.core0.bytes ");
  EXPECT_NE(l[2].find(" 4096 bytes      # bytes moved"), std::string::npos) << l[2];
  EXPECT_EQ(l[3].substr(0, 16), "chip.hbm.busy_ns");
  EXPECT_NE(l[3].find(" 12.5 ns         # time in use"), std::string::npos) << l[3];
  EXPECT_NE(l[4].find(" 0.1            # a non-integer value"), std::string::npos) << l[4];
  EXPECT_NE(l[5].find(" nan x          # no value yet"), std::string::npos) << l[5];
  for (const auto& line : l) EXPECT_EQ(line[48], ' ') << line;
}

}  // namespace
}  // namespace trnsim::stats
