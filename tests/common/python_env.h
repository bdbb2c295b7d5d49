// Python helper scripts of the C++ tests (model exports, numpy cross-checks) and the
// one rule for when such a test may skip: only when a package it needs is missing,
// and never under CI=true, where the test command installs every package (so a
// missing one is a broken setup). A script that fails for any other reason fails the
// test with its output.
//
//   const std::string py = python_require({"torch"}) + "...";   // the script's guard
//   TRNSIM_REQUIRE_PYTHON(run_python(script + " " + args));      // skip / fail / go on
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace trnsim::test {

inline constexpr const char* kPython = "/usr/bin/python3";

// Exit status of python_require's guard: a package the script needs is not installed.
// Any other non-zero status is a failure of the script's step.
inline constexpr int kMissingPackageExit = 77;

// True when the environment variable CI is "true" (CI services set it).
inline bool in_ci() {
  const char* v = std::getenv("CI");
  return v != nullptr && std::string(v) == "true";
}

// The first lines of a helper script: exits kMissingPackageExit naming the first of
// `modules` that is not installed. Presence is checked without importing (find_spec):
// a package that is installed but fails to import fails the script's later import,
// an error rather than a skip. TRNSIM_TEST_HIDE_MODULES (comma-separated) makes
// modules count as missing, as in tests/python/skip_unless.py, to try the rule.
inline std::string python_require(std::initializer_list<const char*> modules) {
  std::string mods;
  for (const char* m : modules) mods += std::string("'") + m + "', ";
  return "import importlib.util as _iu, os as _os, sys as _sys\n"
         "_hidden = _os.environ.get('TRNSIM_TEST_HIDE_MODULES', '').split(',')\n"
         "for _m in (" +
         mods +
         "):\n"
         "    if _m in _hidden or _iu.find_spec(_m) is None:\n"
         "        print('missing Python package: python3-' + _m + ' (no module ' + _m + ')',\n"
         "              file=_sys.stderr)\n"
         "        _sys.exit(" +
         std::to_string(kMissingPackageExit) + ")\n";
}

struct PyRun {
  int code = -1;    // exit status (128 + signal when killed)
  std::string cmd;  // what ran
  std::string out;  // stdout and stderr together
};

// Runs `kPython ARGS` (a script path and its arguments, shell-quoted by the caller).
// No interpreter at all counts as a missing package.
inline PyRun run_python(const std::string& args) {
  PyRun r;
  r.cmd = std::string(kPython) + " " + args;
  if (::access(kPython, X_OK) != 0) {
    r.code = kMissingPackageExit;
    r.out = std::string("missing package: no ") + kPython + " (python3 is not installed)";
    return r;
  }
  FILE* p = ::popen((r.cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    r.out = "popen failed";
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Checks that `modules` are installed (the guard alone, run with python3 -c).
inline PyRun python_has(std::initializer_list<const char*> modules) {
  PyRun r = run_python("-c \"" + python_require(modules) + "\"");
  r.cmd = std::string(kPython) + " <check for installed packages>";
  return r;
}

enum class PyVerdict { ok, skip, fail };

// The rule: success goes on; a missing package skips unless `ci`; anything else fails.
inline PyVerdict python_verdict(int code, bool ci) {
  if (code == 0) return PyVerdict::ok;
  if (code == kMissingPackageExit && !ci) return PyVerdict::skip;
  return PyVerdict::fail;
}

inline std::string python_failure(const PyRun& r) {
  if (r.code == kMissingPackageExit)
    return r.cmd + ": " + r.out + "\nCI=true: a missing package is a failure, not a skip";
  return r.cmd + " failed (exit " + std::to_string(r.code) + "):\n" + r.out;
}

}  // namespace trnsim::test

// In a test body (or a fixture's SetUp): skips the test when the run found a missing
// package outside CI, fails it with the script's output on any other failure.
#define TRNSIM_REQUIRE_PYTHON(run_expr)                                                     \
  do {                                                                                      \
    const ::trnsim::test::PyRun trnsim_py_run_ = (run_expr);                                \
    switch (::trnsim::test::python_verdict(trnsim_py_run_.code, ::trnsim::test::in_ci())) { \
      case ::trnsim::test::PyVerdict::ok:                                                   \
        break;                                                                              \
      case ::trnsim::test::PyVerdict::skip:                                                 \
        GTEST_SKIP() << trnsim_py_run_.out;                                                 \
      case ::trnsim::test::PyVerdict::fail:                                                 \
        FAIL() << ::trnsim::test::python_failure(trnsim_py_run_);                           \
    }                                                                                       \
  } while (0)

// A missing package found without a script (data files of a Debian package): skips
// outside CI, fails under CI=true.
#define TRNSIM_SKIP_MISSING_PACKAGE(why)                                      \
  do {                                                                        \
    if (!::trnsim::test::in_ci()) GTEST_SKIP() << why;                        \
    FAIL() << why << "\nCI=true: a missing package is a failure, not a skip"; \
  } while (0)
