// Runs the trnsim binary in a child process and captures its exit code and output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/python_env.h"

namespace trnsim::test {

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

inline CmdResult run_cmd(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Runs `cmd`, expects exit `code` and `want` in its output; returns the result.
inline CmdResult expect_exit(const std::string& cmd, int code, const std::string& want) {
  CmdResult r = run_cmd(cmd);
  EXPECT_EQ(r.code, code) << cmd << "\n" << r.out;
  EXPECT_NE(r.out.find(want), std::string::npos) << cmd << "\n" << r.out;
  return r;
}

// A valid program: y = 2 * x over [128, 64] fp32, one DMA queue in, vector, one out.
// Small, so its trace, VCD and stats stay in a stream's buffer until the file closes.
inline constexpr const char* kScale = R"(.program scale2
.semaphores 2
.tensor x [128,64] fp32 input @0
.tensor y [128,64] fp32 output @32768
.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp32, [1,64]] src=hbm[128x64, @x, fp32, [1,64]] signal=s0+1
dma_copy dst=hbm[128x64, @y, fp32, [1,64]] src=sbuf[0:128, 256, fp32, [1,64]] wait=s1>=1
.queue vector
tensor_scalar dst=sbuf[0:128, 256, fp32, [1,64]] src=sbuf[0:128, 0, fp32, [1,64]] op0=mul arg0=2 wait=s0>=1 signal=s1+1
)";

inline std::string trnsim_bin() {
  return std::string(TRNSIM_BINARY_DIR) + "/runtime/trnsim";
}

inline std::string source_path(const std::string& rel) {
  return std::string(TRNSIM_SOURCE_DIR) + "/" + rel;
}

// A fresh directory under the build tree for one test's files.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::path(TRNSIM_BINARY_DIR) / "test_tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

// Runs the Python `body` with /usr/bin/python3 (`d` is `dir`; numpy as np, onnx,
// helper, TensorProto and numpy_helper as nh imported) to write models and data
// into `dir`. For TRNSIM_REQUIRE_PYTHON (tests/common/python_env.h): a missing numpy
// or onnx is kMissingPackageExit, any other failure fails the test.
inline PyRun run_python(const std::filesystem::path& dir, const std::string& name,
                        const std::string& body) {
  const std::string py = write_text(dir / (name + ".py"), python_require({"numpy", "onnx"}) +
                                                              R"(import sys
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper as nh
d = sys.argv[1]
)" + body);
  return run_python(py + " " + dir.string());
}

}  // namespace trnsim::test
