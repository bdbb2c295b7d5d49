// Simulator-level conformance (tests/compiler/onnx_conformance.h): every case of the
// ONNX test data whose ops all lower is compiled at fp32 precision for trn2,
// simulated, and its outputs compared with the packaged ones; cases the front end
// or the lowering refuses must say why. Expected states: conformance_sim.txt.
//
// Each case runs in a forked child: a crash or a hang (the child stops itself after
// kCaseSeconds) fails that case only, and every child elaborates its own SystemC
// platform (SystemC cannot restart in one process; the parent never elaborates).
// Values cross the program boundary as runtime::to_device/from_device convert them
// (integers and bools as fp32 on the device, back in the graph output's type).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

#include "compiler/compile.h"
#include "compiler/lower/lower.h"
#include "platform/config.h"
#include "runtime/device.h"
#include "runtime/fallback.h"
#include "runtime/target_from_config.h"
#include "runtime/tensor.h"
#include "tests/compiler/onnx_conformance.h"

namespace trnsim::conformance {
namespace {

constexpr unsigned kCaseSeconds = 120;

// Compiles `g` (fp32 precision) and runs it on `dev`, created on first use.
interp::TensorMap simulate(const platform::platform_config& cfg,
                           std::unique_ptr<runtime::Device>& dev, const ir::Graph& g,
                           const interp::TensorMap& feed) {
  compiler::CompileOnnxOptions o;
  o.precision = graph_passes::Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  compiler::CompileOnnxResult r = compiler::compile_graph(g.clone(), o);
  const std::map<std::string, std::string> io = lower::io_tensor_names(r.graph);
  runtime::Launch l{&r.program, {}, 0};
  for (const auto& [name, t] : feed) {
    auto it = io.find(name);
    if (it == io.end()) continue;  // an input no output depends on
    l.inputs[it->second] = runtime::to_device(t, *r.program.find_tensor(it->second));
  }
  if (!dev) dev = std::make_unique<runtime::Device>(cfg);
  runtime::RunReport rep = dev->run({l});
  interp::TensorMap out;
  for (const ir::Value* v : r.graph.outputs())
    out[v->name] = runtime::from_device(rep.launches.at(0).outputs.at(io.at(v->name)), v->type);
  return out;
}

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

CaseResult run_in_child(const platform::platform_config& cfg, const fs::path& dir,
                        const std::string& id) {
  CaseResult r;
  r.id = id;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.detail = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.detail = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(kCaseSeconds);
    std::unique_ptr<runtime::Device> dev;
    const Executor sim = [&](const ir::Graph& g, const interp::TensorMap& feed) {
      return simulate(cfg, dev, g, feed);
    };
    CaseResult c = run_case(dir, id, sim);
    const bool ok = write_all(fds[1], std::to_string(static_cast<int>(c.status)) + "\n" + c.detail);
    ::_exit(ok ? 0 : 1);  // no destructors: the SystemC kernel is not torn down
  }
  ::close(fds[1]);
  std::string msg;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) {
    r.detail = WTERMSIG(st) == SIGALRM ? "timed out after " + std::to_string(kCaseSeconds) + " s"
                                       : "crashed with signal " + std::to_string(WTERMSIG(st)) +
                                             " (" + strsignal(WTERMSIG(st)) + ")";
    return r;
  }
  const size_t nl = msg.find('\n');
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || nl == std::string::npos) {
    r.detail = "child exited with status " + std::to_string(WEXITSTATUS(st));
    return r;
  }
  r.status = static_cast<Status>(std::stoi(msg.substr(0, nl)));
  r.detail = msg.substr(nl + 1);
  return r;
}

TEST(ConformanceSim, OnnxTestData) {
  const platform::platform_config cfg = platform::load_config("trn2");
  run_suite("compiled and simulated on trn2, fp32",
            fs::path(TRNSIM_SOURCE_DIR) / "tests/e2e/conformance_sim.txt",
            "TRNSIM_UPDATE_CONFORMANCE=1 ./test_e2e --gtest_filter='ConformanceSim*'",
            [&](const fs::path& dir, const std::string& id) { return run_in_child(cfg, dir, id); });
}

}  // namespace
}  // namespace trnsim::conformance
