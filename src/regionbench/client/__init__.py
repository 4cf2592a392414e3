"""The read side: what a researcher with a release folder uses (the client install).

Loading and verifying a release (``loader``), spatial questions over it (``query``), the pure
measures (``metrics``, ``instances``, ``segments``, ``semantic``), the scoring tasks and their
one door (``tasks``: a registry of one module per task), what a run scores (``scope``), the one
door out (``exports``), and the previous release by tag (``history``). Nothing here needs the
build's dependencies but reading PNG and ``.mat`` predictions and ``view``'s thumbnails.
"""
