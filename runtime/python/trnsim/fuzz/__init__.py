"""Differential fuzzing of the trnsim compiler (`trnsim fuzz`): random ONNX graphs
(gen), compiled and simulated by `trnsim validate` against the reference interpreter
(runner), failing cases shrunk to small regression models (shrink)."""
