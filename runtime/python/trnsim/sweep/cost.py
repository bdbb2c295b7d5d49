"""The cost proxy: a second axis for Pareto plots, not a price.

    cost = pe * (PEs per chip / 1000) + sram_mib * (SBUF + PSUM MiB per chip)
           + hbm_tbps * (HBM TB/s) + dma_engine * (DMA engines per chip)

PEs = cores x tensor rows x cols; SRAM = cores x partitions x partition size (SBUF
and PSUM). The default weights put trn2 near 300 units, split between compute,
SRAM and HBM bandwidth. Replace them in the spec with `cost: {pe: .., sram_mib: ..,
hbm_tbps: .., dma_engine: ..}`, or the whole formula with
`cost: {function: "module:callable"}` (called with the resolved config: key -> SI
value; must return a number).
"""

import importlib

DEFAULT_WEIGHTS = {"pe": 1.0, "sram_mib": 0.5, "hbm_tbps": 20.0, "dma_engine": 0.0}
MIB = 1 << 20


def proxy_inputs(cfg):
    cores = cfg["chip.cores"]
    pes = cores * cfg["core.tensor.rows"] * cfg["core.tensor.cols"]
    sram = cores * (cfg["core.sbuf.partitions"] * cfg["core.sbuf.partition_size"]
                    + cfg["core.psum.partitions"] * cfg["core.psum.partition_size"]) / MIB
    return {"pe": pes / 1000.0, "sram_mib": sram, "hbm_tbps": cfg["hbm.bandwidth"] / 1e12,
            "dma_engine": cores * cfg["core.dma.engines"]}


class CostModel:
    def __init__(self, spec_cost=None):
        spec_cost = dict(spec_cost or {})
        self.fn = None
        if "function" in spec_cost:
            target = spec_cost.pop("function")
            if spec_cost:
                raise ValueError(f"cost: 'function' cannot be combined with weights "
                                 f"({', '.join(spec_cost)})")
            mod, _, attr = str(target).partition(":")
            try:
                self.fn = getattr(importlib.import_module(mod), attr)
            except (ImportError, AttributeError) as e:
                raise ValueError(f"cost: function '{target}' not found: {e}") from e
        self.weights = dict(DEFAULT_WEIGHTS)
        for k, v in spec_cost.items():
            if k not in DEFAULT_WEIGHTS:
                raise ValueError(f"cost: unknown weight '{k}' (known: "
                                 f"{', '.join(DEFAULT_WEIGHTS)}, function)")
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise ValueError(f"cost: weight '{k}' must be a number")
            self.weights[k] = float(v)

    def __call__(self, cfg):
        if self.fn is not None:
            return float(self.fn(dict(cfg)))
        x = proxy_inputs(cfg)
        return round(sum(self.weights[k] * x[k] for k in self.weights), 6)
