"""`trnsim plot OUTDIR [--x KEY]... [--y METRIC]...` (also `python3 -m trnsim.plot`):
PNGs of a sweep's results in OUTDIR/plots/ (see trnsim/sweep/plots.py)."""

import argparse
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="trnsim plot", description=__doc__.splitlines()[0])
    ap.add_argument("outdir", help="a sweep's output folder (holds results.jsonl)")
    ap.add_argument("--x", action="append", metavar="KEY",
                    help="swept config key for the x axis (repeatable) [every swept key]")
    ap.add_argument("--y", action="append", metavar="METRIC",
                    help="metric column, e.g. simulated_ns, tflops, hbm.mbu_pct "
                         "(repeatable) [simulated_ns]")
    ap.add_argument("-o", "--output", metavar="DIR", help="where to write [OUTDIR/plots]")
    args = ap.parse_args(argv)
    from trnsim.sweep.plots import plot_all
    try:
        paths = plot_all(args.outdir, args.x, args.y, args.output)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"trnsim plot: {e}\n")
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
