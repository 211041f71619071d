"""Where `annotate merge` keeps its copies of the other files, and that they go away.

A merge reads each other file through a snapshot, a full copy (392 MB for a large project).
The copies live in a folder beside the target, ``.<target>.merge-<pid>`` (in the temp
folder when the target's folder is not writable), so that they use the project's disk
rather than a small /tmp and can be found again. The folder is removed
when the merge ends in any way Python sees: success, an error, Ctrl-C, or SIGTERM (turned
into an exception, so that ``finally`` runs and the open transaction rolls back). What a
``kill -9`` leaves is removed by the next merge into the same target: a folder whose
process is gone.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from annotate.errors import AnnotateError
from annotate.store.lock import process_running


class MergeStopped(AnnotateError):
    """SIGTERM during a merge: the file being merged rolled back, the copies removed."""


def _prefix(target: Path) -> str:
    return f".{target.name}.merge-"


def _places(target: Path) -> list[Path]:
    return [target.parent, Path(tempfile.gettempdir())]


def remove_stale(target: Path) -> list[Path]:
    """Remove the copy folders of merges into ``target`` whose process is gone."""
    removed = []
    for folder in (f for place in _places(target) for f in place.glob(_prefix(target) + "*")):
        pid = folder.name.removeprefix(_prefix(target))
        if folder.is_dir() and pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _stop(signum: int, frame: Any) -> None:
    raise MergeStopped(
        "merge stopped (SIGTERM): the file being merged was rolled back, its copy removed"
    )


def _make(target: Path) -> Path:
    error: OSError | None = None
    for place in _places(target):
        folder = place / f"{_prefix(target)}{os.getpid()}"
        shutil.rmtree(folder, ignore_errors=True)
        try:
            folder.mkdir()
        except OSError as exc:
            error = exc
            continue
        return folder
    raise AnnotateError(f"merge: no folder for the copies of the other files ({error})")


@contextmanager
def scratch_folder(target: Path) -> Iterator[Path]:
    """A folder for the snapshots of one merge into ``target``, removed on every exit."""
    target = target.resolve()
    remove_stale(target)
    folder = _make(target)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if in_main else None
    try:
        yield folder
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(folder, ignore_errors=True)
