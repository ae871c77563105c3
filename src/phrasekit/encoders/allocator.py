"""Keep freed memory in the process while phrasekit computes on the CPU (glibc only).

glibc hands allocations above a threshold (dynamic, at most 32 MB) straight to the kernel
and gives the top of its heap back whenever more than twice that is free there. A
transformer pass over long texts allocates and frees megabytes of activations per batch, so
batches kept touching fresh pages: MiniLM over 1,000 bbc_news articles (bf16, 256 tokens)
took 3.0 million page faults and 15% of its CPU time in the kernel. With allocations up to
32 MB served from the heap and 256 MB of free heap kept, it took 27 thousand faults and ran
1.29x faster (1.09x in fp32; ``benchmarks/speed/allocator_speed.py``, 2-core AMD EPYC). The cost: a
process keeps up to ``TRIM_THRESHOLD`` bytes of freed memory instead of returning it.

``PHRASEKIT_MALLOC=default`` leaves glibc's own settings alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import platform

logger = logging.getLogger(__name__)

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Allocations up to this size come from the heap (glibc's largest dynamic threshold).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap's top kept for the next batch instead of returned to the kernel.
TRIM_THRESHOLD = 256 << 20


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Set glibc's thresholds once per process (forked workers inherit them); True when set.

    A no-op (False) on other C libraries or with ``PHRASEKIT_MALLOC=default``."""
    if os.environ.get("PHRASEKIT_MALLOC", "").strip().lower() == "default":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        done = (libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    except (OSError, AttributeError):
        return False
    logger.debug("glibc malloc: heap serves up to %d MB, keeps %d MB free (%s)",
                 MMAP_THRESHOLD >> 20, TRIM_THRESHOLD >> 20, "set" if done else "refused")
    return done
