"""The build pipeline: the stages the workflow runs, in data order, and how its jobs run.

Configuration (``config``), ingest of one shard of any layout (``ingest``, ``shard_measures``),
the vocabulary, the consensus and agreement of several annotators, subsets A-H, the reference
classifiers, the collection's figures and plots; ``jobs``, ``progress`` and ``provenance`` are
the scripts' error path, the build's account on screen and the code fingerprint; ``reproduce``
rebuilds a tag and compares it.
"""
