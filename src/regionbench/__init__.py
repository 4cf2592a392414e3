"""regionbench: build, release and evaluate region-annotated image benchmarks."""

__version__ = "0.1.0"
