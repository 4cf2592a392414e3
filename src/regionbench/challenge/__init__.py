"""A release made a hosted benchmark: its evaluation side's truth hidden.

``public`` writes the public release (the hidden side's images, ids and sizes, nothing derived
from its truth), ``codabench`` the competition bundle whose scoring program (``scorer``) scores a
submission against the private release exactly as ``regionbench evaluate`` does, and
``regionbench.audit.leaks`` checks by content that the public release holds nothing of the
hidden truth. docs/publishing.md walks a maintainer through it.
"""

# Each task's entry in a submission zip: a file or folder at its top.
ENTRIES = {
    "instances": "instances.json",
    "semantic": "semantic",
    "panoptic": "panoptic",
    "segments": "segments",
    "boundaries": "boundaries",
}
MAX_MIB = 500  # a submission's default size limit, unpacked
