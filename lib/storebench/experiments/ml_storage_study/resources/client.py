"""One store's loader in a fresh process of its own, so that what is sampled is this store's client alone
(seed 001 Sec 5.11), never what earlier stores left in a long-lived process (its heap, its libraries'
threads and caches: in one process the client's RSS climbed with the run order):

    python -m storebench.experiments.ml_storage_study.resources.client SPEC.pickle

SPEC: the source (a picklable row source: its store is opened again here), the modality, the rows'
fingerprints, the loader point, the workers' start method, and how many epochs / seconds to read. The
process imports what a training client imports, notes its memory, opens a loader whose workers persist,
reads one verified warm-up epoch, prints ``ready <json>`` and waits for a line on stdin (the parent starts
sampling this process tree from outside, then sends it); reads epochs (every row verified) until both
minimums are met, prints one JSON line (epochs and their seconds) and waits for a last line before it
ends its workers and exits, so the sampler sees the client as it was while reading.
"""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path


def _memory() -> dict:
    import psutil

    info = psutil.Process().memory_info()
    return {"rss_bytes": int(info.rss), "vms_bytes": int(info.vms)}


def main(argv=None) -> None:
    import numpy  # noqa: F401  what every client holds before it reads a row
    import torch  # noqa: F401

    from storebench.experiments.ml_storage_study.dataloaders.measure import loader_dataset
    from storebench.loaders import rows as rowloaders

    imported = _memory()
    spec = pickle.loads(Path((argv or sys.argv[1:])[0]).read_bytes())
    point = spec["point"]
    dataset, batches = loader_dataset(spec["source"], spec["modality"], spec["fingerprints"], point)
    loader = rowloaders.row_loader(dataset, point.workers, spec["start_method"], batches, persistent=True)
    try:
        warm = rowloaders.run_epoch(loader)  # workers start, every row verified
        print("ready " + json.dumps({"imported": imported, "warm": _memory(), "warmup_seconds": warm.seconds}),
              flush=True)
        sys.stdin.readline()
        epochs = []
        while len(epochs) < spec["min_epochs"] or sum(e.seconds for e in epochs) < spec["min_seconds"]:
            epochs.append(rowloaders.run_epoch(loader))
        print(json.dumps({"seconds": [e.seconds for e in epochs], "rows": epochs[0].rows,
                          "cpu_seconds": [e.cpu_seconds for e in epochs]}), flush=True)
        sys.stdin.readline()
    finally:
        rowloaders.close_loader(loader)
        spec["source"].close()


class ClientProcess:
    """The parent's side: start the client on ``spec_path``, wait until it is ready (``ready``: its JSON),
    ``go()`` for the epochs' JSON, ``finish()`` (also on leaving the ``with`` block) to let it exit."""

    def __init__(self, spec_path: Path, label: str):
        self.spec_path, self.label = Path(spec_path), label
        self.proc = None
        self.log = self.spec_path.with_suffix(".stderr.log")

    def __enter__(self) -> "ClientProcess":
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", __name__, str(self.spec_path)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True)
        line = self._line()
        if not line.startswith("ready "):
            self._fail(f"said {line!r} instead of ready")
        self.ready = json.loads(line.removeprefix("ready "))
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def go(self) -> dict:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def finish(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.stdin.write("exit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

    def __exit__(self, *exc) -> None:
        self.finish()

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self._fail(f"exited ({self.proc.returncode}) before answering")
        return line.strip()

    def _fail(self, what: str):
        tail = self.log.read_text()[-3000:] if self.log.exists() else ""
        raise RuntimeError(f"resources: the client process of {self.label} {what}; its stderr ({self.log}):\n{tail}")


if __name__ == "__main__":
    main()
