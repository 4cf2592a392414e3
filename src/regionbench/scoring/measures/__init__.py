"""The measures, pure: arrays and plain records in, figures out; no file, no release, no setting
(docs/measures.md). Each module is named for what it computes and imports ``regionbench.core``
only (tests/test_architecture.py)."""
