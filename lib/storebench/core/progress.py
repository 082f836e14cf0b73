"""Progress bars for long work that reach the terminal running a notebook but never the notebook's
output (a rendered report is for a reviewer, not a log).

``python -m storebench.pipeline.notebooks`` sets ``STOREBENCH_PROGRESS_TO`` to a file it relays to its own
stderr while papermill runs the notebook; the bars of the kernel go there. In JupyterLab (variable
unset) they go to the notebook's stderr as usual, where a user exploring wants them.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from tqdm import tqdm as _tqdm

ENV = "STOREBENCH_PROGRESS_TO"


@lru_cache(maxsize=None)
def _open(target: str):
    return open(target, "a", buffering=1, encoding="utf-8")


def stream():
    target = os.environ.get(ENV)
    return _open(target) if target else sys.stderr


def tqdm(*args, **kwargs):
    """tqdm, drawn on the progress stream (see module doc)."""
    kwargs.setdefault("file", stream())
    if os.environ.get(ENV):
        kwargs.setdefault("mininterval", 2.0)  # a relayed file, not a terminal: fewer redraws
    return _tqdm(*args, **kwargs)


@contextmanager
def relayed_to(destination, spool: Path):
    """While inside: ``STOREBENCH_PROGRESS_TO`` names ``spool``, and what is written there is copied
    to ``destination`` (None: discarded) as it arrives. Child processes started inside inherit it."""
    spool.write_text("")
    previous = os.environ.get(ENV)
    os.environ[ENV] = str(spool)
    done = threading.Event()

    def relay():
        with open(spool, encoding="utf-8", errors="replace") as source:
            while True:
                chunk = source.read()
                if chunk and destination is not None:
                    destination.write(chunk)
                    destination.flush()
                if not chunk:
                    if done.is_set():
                        return
                    time.sleep(0.5)

    thread = threading.Thread(target=relay, name="progress-relay", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous
        spool.unlink(missing_ok=True)
