"""The read side: what a researcher with a release folder uses (the client install).

Loading and verifying a release (``loader``), spatial questions over it (``query``), the
measures (``metrics``), scoring predictions (``evaluation``), and the previous release by tag
(``history``). Nothing here needs the build's dependencies.
"""
