"""Making a folder's entries durable: a rename into it, or a file made in it, survives a
power loss only once the folder itself is flushed."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Flush the entries of `folder` to disk; raises OSError."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
