"""CUDA_VISIBLE_DEVICES as genotile reads it: the standard library only, so that a store job may
read it before its imports (scripts/store.py forks an append's GPU worker first thing)."""

import os


def cuda_visible_devices() -> list[str] | None:
    """The devices CUDA_VISIBLE_DEVICES lists ("", -1 and NoDevFiles list none); None where it
    is not set (every device of the host is visible).

    >>> import os; os.environ["CUDA_VISIBLE_DEVICES"] = "0, 2"; cuda_visible_devices()
    ['0', '2']
    >>> os.environ["CUDA_VISIBLE_DEVICES"] = "NoDevFiles"; cuda_visible_devices()
    []
    >>> del os.environ["CUDA_VISIBLE_DEVICES"]; cuda_visible_devices() is None
    True
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return None
    if visible.strip() in ("", "-1", "NoDevFiles"):
        return []
    return [d.strip() for d in visible.split(",") if d.strip()]
