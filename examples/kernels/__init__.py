"""Example kernels written in trnsim.kernels (the Python tile language).

    from examples.kernels import attention, layernorm, matmul, softmax
    y = softmax.softmax.simulate(x)                      # numpy on the host
    y, report = softmax.softmax.benchmark(x, config="trn1")

matmul.py holds the four steps of optimising a matmul (tiled, hoisted loads,
blocked free dims, fully blocked); bench_matmul.py simulates them at a large shape.
softmax.py and layernorm.py are row-wise fused kernels; attention.py a single-head
(causal) attention built from tensor-engine transposes, matmuls and a masked softmax.
tests/python/test_kernels.py checks every one against numpy.
"""
