"""What a researcher holding a release uses beyond loading (``regionbench.release.loader``) and
scoring (``regionbench.scoring``): the one door out (``exports``), the previous release by tag
(``history``) and a release or a scored run as a static site (``view``; its thumbnails need
Pillow, the build install).
"""
