"""The Python suites' skip check: when a package or the trnsim binary a suite needs is
missing, exit 77 (ctest's skip code) with the reason, except under CI=true, where the
test command installs every package, so a missing one is a failure (exit 1).

Presence is checked with importlib.util.find_spec, without importing: a package that
is installed but fails to import is an error of the suite, never a skip.
TRNSIM_TEST_HIDE_MODULES (comma-separated module names) makes those modules count as
missing, to test this rule on a machine that has them.
"""
import importlib.util
import os
import sys

SKIP = 77

# Debian's name for a module when it is not python3-<module>.
_DEBIAN = {"yaml": "python3-yaml"}


def in_ci():
    """True when the environment variable CI is "true" (CI services set it)."""
    return os.environ.get("CI") == "true"


def missing_modules(modules):
    hidden = set(filter(None, os.environ.get("TRNSIM_TEST_HIDE_MODULES", "").split(",")))
    return [m for m in modules if m in hidden or importlib.util.find_spec(m) is None]


def package_of(module):
    return _DEBIAN.get(module, f"python3-{module}")


def unavailable(reason):
    """Ends the process: a skip (77), or under CI=true a failure (1) saying why."""
    if in_ci():
        print(f"FAILED: {reason} (CI=true: a missing package is a failure, not a skip)",
              file=sys.stderr)
        sys.exit(1)
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def require(modules=(), binary=None):
    for mod in missing_modules(modules):
        unavailable(f"{package_of(mod)} is not installed (no module '{mod}')")
    if binary is not None and not os.access(binary, os.X_OK):
        unavailable(f"no trnsim binary at {binary}")
