"""``models.heap.release_free_heap`` gives a thread's freed malloc memory back to the system.

The oracle is the kernel's own count of this process's anonymous resident pages
(``RssAnon`` in ``/proc/self/status``), read in a fresh interpreter so nothing else of the
test session moves it.
"""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = r"""
import ctypes, ctypes.util, json, threading
from hybrid_engine.models.heap import release_free_heap

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

def anon_mib():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024

figures = {}

def work():
    # 2,000 blocks of 64 KiB (below glibc's mmap threshold, so they come from this thread's
    # arena), touched, then freed; the last block stays, so the arena's top is in use and
    # free() alone cannot shrink it.
    blocks = [libc.malloc(64 << 10) for _ in range(2000)]
    for block in blocks:
        libc.memset(block, 1, 64 << 10)
    figures["held"] = anon_mib()
    for block in blocks[:-1]:
        libc.free(block)
    figures["freed"] = anon_mib()
    figures["released"] = release_free_heap()
    figures["trimmed"] = anon_mib()
    libc.free(blocks[-1])

thread = threading.Thread(target=work)
thread.start()
thread.join()
print(json.dumps(figures))
"""


def test_freed_arena_memory_goes_back_to_the_system() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, timeout=120
    )
    figures = json.loads(out.stdout)
    # free() kept the ~125 MiB resident in the thread's arena; the trim returned it.
    assert figures["freed"] > figures["held"] - 10
    assert figures["released"] is True
    assert figures["trimmed"] < figures["freed"] - 100
