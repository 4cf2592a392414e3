"""regionbench: build, release and evaluate region-annotated image benchmarks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from regionbench.release.loader import load as load
    from regionbench.scoring.tasks import evaluate_release as evaluate  # noqa: F401  (regionbench.evaluate)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``regionbench.load``, a release from a folder or a git+DVC repository at a revision
    (``regionbench.release.loader.load``), and ``regionbench.evaluate``, predictions scored as a
    task against a release (``regionbench.scoring.tasks.evaluate_release``), imported on first
    use: ``import regionbench`` stays light for the command line."""
    if name == "load":
        from regionbench.release.loader import load

        return load
    if name == "evaluate":
        from regionbench.scoring.tasks import evaluate_release

        return evaluate_release
    raise AttributeError(f"module 'regionbench' has no attribute {name!r}")
