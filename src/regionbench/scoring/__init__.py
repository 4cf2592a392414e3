"""Scoring a method's output against a release (docs/scoring.md), in layers, each importing only
those below it:

- ``measures``: the pure measures, free of files and settings, each module named for what it
  computes (docs/measures.md); they import ``core`` only;
- ``results``: every reader of a method's output (COCO results, label maps, BSDS ``.mat``,
  panoptic runs, ImageCLEF runs, prediction tables), each format's checks in one place;
- ``errors``: ``TaskError``, raised by the readers and the tasks alike;
- ``runner``: one streaming of a measure over batches of images on forked workers, with what is
  spilled to disk; ``scattering``: the same run as jobs of a Snakemake executor;
- ``protocols`` (each label-map benchmark's own rules) and ``scope`` (what a run scores);
- ``tasks``: one module a task behind one ``evaluate`` door (``regionbench.evaluate``).
"""
