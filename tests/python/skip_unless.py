"""The Python suites' skip check: exit 77 (ctest's skip code) with the reason when a
package or the trnsim binary a suite needs is missing."""
import importlib.util
import os
import sys


def require(modules=(), binary=None):
    for mod in modules:
        if importlib.util.find_spec(mod) is None:
            print(f"skipped: python3-{mod} is not installed")
            sys.exit(77)
    if binary is not None and not os.access(binary, os.X_OK):
        print(f"skipped: no trnsim binary at {binary}")
        sys.exit(77)
