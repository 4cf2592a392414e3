"""The core: what every side of regionbench shares and no file format defines.

Tables and their schemas, masks as polygons and RLE, the label hierarchy, the region features
and spatial relations, the compiled kernels behind them, the error path, and the small helpers
(strict numbers, YAML, forked workers, the allocator). Nothing here imports another package of
regionbench.
"""
