// Profiling output of `trnsim run`: the --stats tree (keys, units, per-run figures),
// its determinism across processes, timing-only runs giving the same stats, the
// --trace Chrome JSON (valid, one track per engine and used DMA queue, one slice
// per instruction) and the --vcd semaphore waveform. JSON is checked with Python's
// json module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "models/isa/assembler.h"
#include "platform/config.h"
#include "runtime/device.h"
#include "tests/runtime/cli_harness.h"

using namespace trnsim;
using namespace trnsim::test;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `script` with the JSON document of `file` parsed as `d`; returns its output
// (a traceback when the file is not valid JSON).
std::string python_on(const std::filesystem::path& file, const std::string& script) {
  const auto py = std::filesystem::path(file).replace_extension(".py");
  write_text(py, "import json, sys\nd = json.load(open(sys.argv[1]))\n" + script);
  return run_cmd("/usr/bin/python3 " + py.string() + " " + file.string()).out;
}

// The stats text without the host times (wall and CPU), the figures that vary
// between runs.
std::string without_host_time(const std::string& json) {
  static const std::regex host("\"host_seconds(_cpu)?\": [-+0-9.eE]+");
  return std::regex_replace(json, host, "\"host_seconds$1\": HOST");
}

std::vector<std::string> e2e_programs() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(source_path("tests/e2e/programs")))
    if (e.path().extension() == ".tasm") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

// `env`: variable assignments for the command ("NAME=value "), or empty.
CmdResult run_stats(const std::string& prog, const std::string& config, const std::string& extra,
                    const std::filesystem::path& stats, const std::string& env = "") {
  return run_cmd(env + trnsim_bin() + " run " + prog + " -c " + config + " " + extra + " --stats " +
                 stats.string());
}

}  // namespace

// Every key the profile promises, each with a unit and a description, and the
// figures agreeing with each other on a one-core run.
TEST(Profile, StatsTreeHasTheRunFigures) {
  auto dir = temp_dir("profile_keys");
  auto r = run_stats(source_path("tests/e2e/programs/matmul_gelu.tasm"), "tiny", "--random-inputs",
                     dir / "s.json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string out = python_on(dir / "s.json", R"(
keys = ["simulated_ns", "instructions", "flops", "tflops", "mfu_pct", "host_seconds",
        "hbm.read_bytes", "hbm.write_bytes", "hbm.mbu_pct", "sbuf.touched_bytes",
        "sbuf.high_water_bytes", "psum.touched_bytes", "psum.high_water_bytes",
        "dma.bytes", "dma.copies", "dma.shares", "dma.avg_share_bytes"]
for e in ["tensor", "vector", "scalar", "gpsimd", "sync"]:
    for k in ["instructions", "active_pct", "busy_ns", "semaphore_wait_ns", "port_stall_ns"]:
        keys.append("engines.%s.%s" % (e, k))
keys.append("engines.tensor.opcodes.matmul")
def get(path):
    v = d
    for p in path.split("."):
        v = v[p]
    return v
for k in keys:
    v = get(k)
    assert isinstance(v, (int, float)), k
    m = d["meta"][k]
    assert m["unit"] and m["desc"], k
# Every value in the tree has its meta entry.
def walk(node, prefix):
    for k, v in node.items():
        if isinstance(v, dict):
            walk(v, prefix + k + ".")
        else:
            assert prefix + k in d["meta"], prefix + k
walk({k: v for k, v in d.items() if k != "meta"}, "")
# A one-core run: the run figures are core 0's.
for e in ["tensor", "scalar"]:
    for k in ["instructions", "busy_ns", "semaphore_wait_ns", "port_stall_ns"]:
        assert d["engines"][e][k] == d["chip"]["core0"]["engines"][e][k], (e, k)
assert "core1" not in d["chip"], "an unused core is listed"
# matmul_gelu: C[256,640] = A[256,384] @ W[384,640]: 2 x 256 x 384 x 640 FLOP.
assert d["flops"] == 2 * 256 * 384 * 640, d["flops"]
assert d["flops_by_dtype"]["bf16"] == d["flops"]
t = d["simulated_ns"] * 1e-9
assert abs(d["tflops"] - d["flops"] / t / 1e12) < 1e-9
# tiny's tensor engine: 128 x 128 PEs x 2 FLOP x 1 GHz = 32.768 TFLOP/s bf16 peak.
assert abs(d["mfu_pct"] - 100 * d["tflops"] / 32.768) < 1e-9, d["mfu_pct"]
assert "bf16" in d["meta"]["mfu_pct"]["desc"]
assert abs(d["engines"]["tensor"]["active_pct"] - 100 * d["engines"]["tensor"]["busy_ns"] / d["simulated_ns"]) < 1e-9
# 14 DMA queues, one per engine: only they are listed, and they add up.
qs = [q for c in d["dma"]["queues"].values() for e in c.values() for q in e.values()]
assert len(qs) == 14, len(qs)
assert sum(q["bytes"] for q in qs) == d["dma"]["bytes"]
assert sum(q["copies"] for q in qs) == d["dma"]["copies"] == 20
for q in qs:
    assert q["avg_copy_bytes"] == q["bytes"] / q["copies"]
# No dma_copy of this program is spread: one share per copy.
assert d["dma"]["shares"] == d["dma"]["copies"]
eng0 = d["chip"]["core0"]["dma"]["engine0"]
assert "q0" in eng0 and "q1" not in eng0, "unused queues are listed"
hbm = d["hbm"]["read_bytes"] + d["hbm"]["write_bytes"]
assert abs(d["hbm"]["mbu_pct"] - 100 * hbm / t / 100e9) < 1e-9  # tiny: 100 GB/s
for mem in ("sbuf", "psum"):
    m = d[mem]
    assert 0 < m["touched_bytes"] <= m["high_water_bytes"], (mem, m)
print("ok MFU %.1f%%" % d["mfu_pct"])
)");
  ASSERT_EQ(out.rfind("ok MFU ", 0), 0u) << out;
  // The summary table shows the same figures: the MFU the stats define (checked above).
  EXPECT_NE(r.out.find(out.substr(3, out.size() - 4)), std::string::npos) << out << r.out;
  EXPECT_NE(r.out.find("14 used, 20 copies"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("port stall"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("high water"), std::string::npos) << r.out;
}

// Two processes, same program and config: byte-identical stats but for host time.
TEST(Profile, StatsAreDeterministicAcrossRuns) {
  auto dir = temp_dir("profile_determinism");
  for (const std::string config : {"tiny", "trn2"}) {
    for (const auto& prog : e2e_programs()) {
      SCOPED_TRACE(prog + " on " + config);
      auto a = run_stats(prog, config, "--random-inputs=5", dir / "a.json");
      auto b = run_stats(prog, config, "--random-inputs=5", dir / "b.json");
      ASSERT_EQ(a.code, 0) << a.out;
      ASSERT_EQ(b.code, 0) << b.out;
      const std::string ja = read_file(dir / "a.json"), jb = read_file(dir / "b.json");
      ASSERT_NE(ja.find("\"host_seconds\""), std::string::npos);
      EXPECT_EQ(without_host_time(ja), without_host_time(jb));
    }
  }
}

// Timing-only runs skip the arithmetic and give exactly the functional run's
// stats (every time, count and byte) and trace.
TEST(Profile, TimingOnlyGivesTheFunctionalStats) {
  auto dir = temp_dir("profile_timing_only");
  for (const std::string config : {"tiny", "trn2"}) {
    for (const auto& prog : e2e_programs()) {
      SCOPED_TRACE(prog + " on " + config);
      auto f = run_stats(prog, config, "--random-inputs --trace " + (dir / "f.trace").string(),
                         dir / "f.json");
      auto t = run_stats(prog, config, "--no-functional --trace " + (dir / "t.trace").string(),
                         dir / "t.json");
      ASSERT_EQ(f.code, 0) << f.out;
      ASSERT_EQ(t.code, 0) << t.out;
      EXPECT_EQ(without_host_time(read_file(dir / "f.json")),
                without_host_time(read_file(dir / "t.json")));
      EXPECT_EQ(read_file(dir / "f.trace"), read_file(dir / "t.trace"));
    }
  }
}

// The chip's own scheduler and SystemC threads run the same sequencer steps: on
// trn2 the example programs give the same stats and trace either way. On tiny some
// start several engines on one port or channel at the same instant, where the tie
// order differs (scheduler: start order; SystemC: its kernel's), which moves time
// between engines' stats but not the end of the run.
TEST(Profile, SchedulerGivesTheSystemcThreadsResults) {
  auto dir = temp_dir("profile_scheduler");
  for (const std::string config : {"tiny", "trn2"}) {
    for (const auto& prog : e2e_programs()) {
      SCOPED_TRACE(prog + " on " + config);
      auto s = run_stats(prog, config, "--random-inputs=5 --trace " + (dir / "s.trace").string(),
                         dir / "s.json", "TRNSIM_SCHEDULER=systemc ");
      auto t = run_stats(prog, config, "--random-inputs=5 --trace " + (dir / "t.trace").string(),
                         dir / "t.json");
      ASSERT_EQ(s.code, 0) << s.out;
      ASSERT_EQ(t.code, 0) << t.out;
      if (config == "trn2") {
        EXPECT_EQ(without_host_time(read_file(dir / "s.json")),
                  without_host_time(read_file(dir / "t.json")));
        EXPECT_EQ(read_file(dir / "s.trace"), read_file(dir / "t.trace"));
      }
      const std::string end = "print(d['simulated_ns'])";
      EXPECT_EQ(python_on(dir / "s.json", end), python_on(dir / "t.json", end));
    }
  }
}

TEST(Profile, UnknownSchedulerIsAnError) {
  const std::string prog = source_path("tests/e2e/programs/softmax.tasm");
  auto r = run_cmd("TRNSIM_SCHEDULER=fast " + trnsim_bin() + " run " + prog + " -c tiny");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("TRNSIM_SCHEDULER=fast: expected 'chip' (the default) or 'systemc'"),
            std::string::npos)
      << r.out;
}

// The trace opens as JSON; it names one track per compute engine and per DMA
// queue the program uses, and has one slice per instruction, named by opcode.
TEST(Profile, TraceIsChromeJsonWithOneTrackPerEngineAndQueue) {
  auto dir = temp_dir("profile_trace");
  const std::string prog = source_path("tests/e2e/programs/layernorm.tasm");
  const isa::Program p = isa::assemble_file(prog);
  size_t dma_queues = 0;
  for (const auto& q : p.queues) dma_queues += q.engine == isa::Engine::dma && !q.instrs.empty();
  auto r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --random-inputs --core 1 --trace " +
                   (dir / "t.json").string() + " --stats " + (dir / "s.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string out = python_on(dir / "t.json", R"(
ev = d["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
slices = [e for e in ev if e["ph"] == "X"]
assert list(procs.values()) == ["chip.core1"], procs
names = sorted(tracks.values())
engines = [n for n in names if not n.startswith("dma")]
assert engines == ["gpsimd", "scalar", "sync", "tensor", "vector"], engines
ops = {"dma_copy", "tensor_tensor", "tensor_scalar", "tensor_reduce", "activation", "bn_stats",
       "bn_aggr", "partition_broadcast", "partition_reduce", "tensor_copy", "memset", "nop",
       "matmul", "transpose", "iota", "affine_select", "select"}
for s in slices:
    assert (s["pid"], s["tid"]) in tracks, s
    assert s["name"] in ops, s["name"]
    assert s["args"]["operands"].startswith(s["name"]), s
    assert isinstance(s["ts"], float) and isinstance(s["dur"], float) and s["dur"] >= 0
    assert s["args"]["semaphore_wait_ns"] >= 0
    track = tracks[(s["pid"], s["tid"])]
    assert (s["name"] == "dma_copy") == track.startswith("dma"), (track, s["name"])
# Waits show up as args on the instructions that have them.
assert any(s["args"]["waits"] for s in slices)
print(len([n for n in names if n.startswith("dma")]), len(slices))
)");
  EXPECT_EQ(out, std::to_string(dma_queues) + " " + std::to_string(p.instruction_count()) + "\n");
}

// The VCD declares the semaphores that changed and ends at their final values.
TEST(Profile, VcdHasTheSemaphoreValues) {
  auto dir = temp_dir("profile_vcd");
  const std::string prog = source_path("tests/e2e/programs/softmax.tasm");
  auto r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --no-functional --vcd " +
                   (dir / "s.vcd").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string vcd = read_file(dir / "s.vcd");
  EXPECT_NE(vcd.find("$timescale 1ps $end"), std::string::npos);
  EXPECT_NE(vcd.find("$scope module core0 $end"), std::string::npos);
  EXPECT_NE(vcd.find("$enddefinitions $end"), std::string::npos);
  // softmax: s0 is incremented by both X half loads (-> 2); s1..s5 once each.
  std::map<std::string, std::string> id_of;  // "s0" -> VCD identifier
  std::istringstream is(vcd);
  std::map<std::string, std::string> last;  // identifier -> last binary value
  long long prev_t = -1;
  for (std::string line; std::getline(is, line);) {
    std::istringstream ls(line);
    std::string a, b, c, d, e;
    ls >> a;
    if (a == "$var") {
      ls >> b >> c >> d >> e;  // integer 32 <id> <name>
      id_of[e] = d;
    } else if (!a.empty() && a[0] == '#') {
      const long long t = std::stoll(a.substr(1));
      EXPECT_GT(t, prev_t) << "time must increase";
      prev_t = t;
    } else if (!a.empty() && a[0] == 'b') {
      ls >> b;
      last[b] = a.substr(1);
    }
  }
  ASSERT_EQ(id_of.size(), 6u) << vcd.substr(0, 600);
  EXPECT_EQ(last[id_of["s0"]], "10");  // 2
  for (const char* s : {"s1", "s2", "s3", "s4", "s5"}) EXPECT_EQ(last[id_of[s]], "1") << s;
}

// A Device reports each run's own figures: a second run of the same program gives
// the same stats as the first, not twice as much.
TEST(Profile, StatsArePerRun) {
  const platform::platform_config cfg = platform::load_config("tiny");
  const isa::Program p = isa::assemble_file(source_path("tests/e2e/programs/dma16.tasm"));
  runtime::Device dev(cfg, runtime::DeviceOptions(false));
  runtime::Launch l{&p, {}, 0};
  const runtime::RunReport a = dev.run({l});
  const runtime::RunReport b = dev.run({l});
  EXPECT_EQ(a.instructions, 32u);
  EXPECT_EQ(b.instructions, 32u);
  EXPECT_EQ(a.dma_queues.size(), 16u);
  EXPECT_EQ(without_host_time(a.stats_json), without_host_time(b.stats_json));
  // 16 queues x 2 transfers of 128 rows x 256 fp32 (128 KiB) each.
  EXPECT_EQ(a.hbm_read_bytes, 16u * 128 * 256 * 4);
  EXPECT_EQ(b.hbm_write_bytes, 16u * 128 * 256 * 4);
}
