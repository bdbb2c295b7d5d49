"""The skip rule of the Python suites (skip_unless.py) and of the scripts sharing it: a
missing package skips (exit 77, ctest's skip code) unless CI=true, where it fails
(exit 1) naming the package. A missing package is simulated with
TRNSIM_TEST_HIDE_MODULES, so these run on a machine that has every package.
Needs nothing beyond the standard library.
"""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = sys.executable


def run(args, ci=None, hide=None):
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TRNSIM_TEST_HIDE_MODULES")}
    if ci is not None:
        env["CI"] = ci
    if hide is not None:
        env["TRNSIM_TEST_HIDE_MODULES"] = hide
    return subprocess.run([PYTHON] + args, capture_output=True, text=True, env=env, cwd=HERE,
                          timeout=300)


def require(modules, **kw):
    return run(["-c", f"import skip_unless; skip_unless.require({modules!r}); print('ran')"],
               **kw)


class Rule(unittest.TestCase):
    def test_missing_package_skips_outside_ci(self):
        for ci in (None, "false", "1"):
            r = require(("json", "trnsim_no_such_module"), ci=ci)
            self.assertEqual(r.returncode, 77, (ci, r.stdout, r.stderr))
            self.assertIn("skipped: python3-trnsim_no_such_module is not installed", r.stdout)
            self.assertNotIn("ran", r.stdout)

    def test_missing_package_fails_under_ci(self):
        r = require(("trnsim_no_such_module",), ci="true")
        self.assertEqual(r.returncode, 1, (r.stdout, r.stderr))
        self.assertIn("python3-trnsim_no_such_module is not installed", r.stderr)
        self.assertIn("CI=true", r.stderr)

    def test_present_packages_run(self):
        for ci in (None, "true"):
            r = require(("json", "os"), ci=ci)
            self.assertEqual(r.returncode, 0, (ci, r.stdout, r.stderr))
            self.assertEqual(r.stdout.strip(), "ran")

    def test_hidden_module_counts_as_missing(self):
        self.assertEqual(require(("json",), hide="os,json").returncode, 77)
        r = require(("yaml",), ci="true", hide="yaml")
        self.assertEqual(r.returncode, 1)
        self.assertIn("python3-yaml is not installed", r.stderr)

    def test_missing_binary(self):
        code = "import skip_unless; skip_unless.require((), '/nonexistent/trnsim')"
        self.assertEqual(run(["-c", code]).returncode, 77)
        r = run(["-c", code], ci="true")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no trnsim binary at /nonexistent/trnsim", r.stderr)


class Suites(unittest.TestCase):
    """The suites and scripts that used to exit 77 on their own follow the rule: each
    stops before running anything when a package it needs is hidden."""

    CASES = (
        ([os.path.join(HERE, "test_torch_frontend.py"), "Mlp"], "torch", "python3-torch"),
        ([os.path.join(HERE, "test_torch_frontend.py"), "ReportTree"], "onnx", "python3-onnx"),
        ([os.path.join(HERE, "test_torch_models.py"), "Models.test_gelu_erf"], "torchvision",
         "python3-torchvision"),
        ([os.path.join(ROOT, "scripts", "sync_mutation.py"), "--samples", "1", "mlp"], "torch",
         "python3-torch"),
        ([os.path.join(ROOT, "scripts", "sync_mutation.py"), "--samples", "1", "resnet18"],
         "torchvision", "python3-torchvision"),
    )

    def test_skip_outside_ci_fail_under_ci(self):
        for args, hidden, package in self.CASES:
            with self.subTest(script=os.path.basename(args[0]), hidden=hidden):
                r = run(args, hide=hidden)
                self.assertEqual(r.returncode, 77, (r.stdout, r.stderr))
                self.assertIn(f"{package} is not installed", r.stdout)
                r = run(args, ci="true", hide=hidden)
                self.assertEqual(r.returncode, 1, (r.stdout, r.stderr))
                self.assertIn(f"{package} is not installed", r.stderr)
                self.assertIn("CI=true", r.stderr)


if __name__ == "__main__":
    unittest.main()
