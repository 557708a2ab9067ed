"""Benchmarks of kbot on peers' suites: `kbot bench kernelbench` runs the optimizer over a
user's KernelBench checkout, problem by problem, and reports KernelBench's metrics."""
