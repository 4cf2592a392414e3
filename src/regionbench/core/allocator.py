"""Keep large freed memory blocks for reuse (glibc ``mallopt``), or give freed memory back
(``malloc_trim``) where a long run of batches would otherwise grow by its fragments.

By default glibc serves every block above 128 KiB with its own ``mmap`` and returns it to the
system when freed, so each NumPy temporary of an image (a 480x360x3 float array is 4 MB) is
mapped, faulted in page by page and unmapped again for every image: measured on the demo's
photos, the Lab conversion took 10 ms an image that way and 2.5 ms with the blocks kept.
``keep_freed_memory`` raises the mmap threshold to glibc's maximum and the trim threshold
above it, so the heap keeps and reuses such blocks. Results are unchanged, bit for bit; only
where the memory comes from changes. On a C library without ``mallopt`` it does nothing.
"""

from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 128 << 20  # free memory kept on the heap before any is given back


def keep_freed_memory() -> bool:
    """Set the process's malloc to keep blocks up to ``MMAP_THRESHOLD`` on the heap and hold up
    to ``TRIM_THRESHOLD`` of free memory; returns whether the C library took the settings."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def give_back() -> None:
    """Return the memory freed since to the system (glibc's ``malloc_trim``): a run of many
    batches or ranges would otherwise grow by the fragments each leaves (140 MiB over 5,000
    images of instances). On a C library without it, nothing."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
