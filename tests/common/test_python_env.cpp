// The skip rule of the C++ tests' Python helper scripts (tests/common/python_env.h):
// a missing package skips only outside CI=true; every other failure fails.
#include "tests/common/python_env.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace trnsim::test {
namespace {

// Sets CI for one scope and puts the old value back.
class ScopedCi {
 public:
  explicit ScopedCi(const char* value) {
    if (const char* v = std::getenv("CI")) old_ = v;
    if (value)
      ::setenv("CI", value, 1);
    else
      ::unsetenv("CI");
  }
  ~ScopedCi() {
    if (old_)
      ::setenv("CI", old_->c_str(), 1);
    else
      ::unsetenv("CI");
  }

 private:
  std::optional<std::string> old_;
};

TEST(PythonEnv, VerdictRule) {
  EXPECT_EQ(python_verdict(0, false), PyVerdict::ok);
  EXPECT_EQ(python_verdict(0, true), PyVerdict::ok);
  EXPECT_EQ(python_verdict(kMissingPackageExit, false), PyVerdict::skip);
  EXPECT_EQ(python_verdict(kMissingPackageExit, true), PyVerdict::fail);
  for (int code : {1, 2, 3, 128 + 11})  // an export error, a usage error, a crash
    for (bool ci : {false, true}) EXPECT_EQ(python_verdict(code, ci), PyVerdict::fail) << code;
}

TEST(PythonEnv, CiIsTrueOnlyForTrue) {
  {
    ScopedCi ci("true");
    EXPECT_TRUE(in_ci());
  }
  {
    ScopedCi ci("false");
    EXPECT_FALSE(in_ci());
  }
  {
    ScopedCi ci(nullptr);
    EXPECT_FALSE(in_ci());
  }
}

TEST(PythonEnv, GuardNamesTheMissingPackage) {
  TRNSIM_REQUIRE_PYTHON(python_has({"json"}));
  const PyRun r = python_has({"json", "trnsim_no_such_module"});
  EXPECT_EQ(r.code, kMissingPackageExit) << r.out;
  EXPECT_NE(r.out.find("python3-trnsim_no_such_module"), std::string::npos) << r.out;
}

TEST(PythonEnv, HiddenModuleCountsAsMissing) {
  TRNSIM_REQUIRE_PYTHON(python_has({"json"}));
  ::setenv("TRNSIM_TEST_HIDE_MODULES", "os,json", 1);
  const PyRun r = python_has({"json"});
  ::unsetenv("TRNSIM_TEST_HIDE_MODULES");
  EXPECT_EQ(r.code, kMissingPackageExit) << r.out;
  EXPECT_NE(r.out.find("python3-json"), std::string::npos) << r.out;
}

// A package that is installed but raises on import is a failure of the step, not a
// missing package.
TEST(PythonEnv, BrokenInstalledPackageIsAFailure) {
  TRNSIM_REQUIRE_PYTHON(python_has({"json"}));
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TRNSIM_BINARY_DIR) / "test_tmp" / "python_env_broken";
  fs::remove_all(dir);
  fs::create_directories(dir / "trnsim_broken_pkg");
  std::ofstream(dir / "trnsim_broken_pkg" / "__init__.py")
      << "raise ImportError('half installed')\n";
  const fs::path script = dir / "use.py";
  std::ofstream(script) << "import sys\nsys.path.insert(0, sys.argv[1])\n"
                        << python_require({"trnsim_broken_pkg"}) << "import trnsim_broken_pkg\n";
  const PyRun r = run_python(script.string() + " " + dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("half installed"), std::string::npos) << r.out;
  EXPECT_EQ(python_verdict(r.code, false), PyVerdict::fail);
}

TEST(PythonEnv, MacroFailsOnAFailedStepAndOnAMissingPackageUnderCi) {
  {
    ScopedCi ci(nullptr);
    EXPECT_FATAL_FAILURE(TRNSIM_REQUIRE_PYTHON((PyRun{1, "export.py", "Traceback: boom"})),
                         "export.py failed (exit 1):\nTraceback: boom");
  }
  {
    ScopedCi ci("true");
    EXPECT_FATAL_FAILURE(
        TRNSIM_REQUIRE_PYTHON((PyRun{kMissingPackageExit, "export.py", "no torch"})),
        "CI=true: a missing package is a failure");
    EXPECT_FATAL_FAILURE(TRNSIM_SKIP_MISSING_PACKAGE("no test data"),
                         "CI=true: a missing package is a failure");
  }
}

}  // namespace
}  // namespace trnsim::test
