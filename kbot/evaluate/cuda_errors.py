"""The one list of CUDA errors that leave a process's context unusable (every later call fails
too): the process that hit one is retired, never reused."""

from __future__ import annotations

STICKY_MARKERS = (
    "illegal memory access",
    "device-side assert",
    "misaligned address",
    "illegal instruction",
    "unspecified launch failure",
    "cudaerror",
    "cuda error",
)


def is_sticky(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in STICKY_MARKERS)
