"""Design-space sweeps: many configs x workloads on the simulator, resumable and cached.

Modules: spec (YAML spec and point expansion), config (schema, units, resolution
through `trnsim info`), identity (point ids, compile-cache keys), workloads, procs
(limited child processes), point (one point's run and folder), executors (local
processes, Dask), runner (plan, resume decisions, progress), results (CSV/JSONL),
cost (the cost proxy), plots. Entry points: `trnsim sweep` / `python3 -m trnsim.sweep`
and `trnsim plot` / `python3 -m trnsim.plot`.
"""
