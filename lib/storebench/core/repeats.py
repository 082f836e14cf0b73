"""How often a cell is measured, and how much work one repeat covers (stated once, used by every experiment).

A *cell* is one configuration of one system. It is measured in *repeats*, after an unrecorded warm-up:

- **Work per repeat.** A repeat covers at least ``min_repeat_s`` of timed work: a pass or epoch shorter
  than that is run ``passes`` times inside the repeat, and the repeat's figure is the mean pass. A pass
  that must start cold (caches evicted, server restarted) is never looped: its repeat is one pass.
- **Adaptive repeats.** At least ``min_repeats``, then more until the 95% CI half-width of the mean is
  within ``target_ci`` of the mean, or the cell has spent ``cell_cap_s`` of measured time, or it has
  ``max_repeats``. Each row records its cell's ``repeats`` and ``ci_target_met``.
- **Rounds.** Where an experiment measures several cells, repeats run in rounds over the cells still
  open (repeat-major), so drift on a busy machine hits every cell alike.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from storebench.core.stats import mean_ci

CELL_COLUMNS = ["repeats", "ci_target_met", "passes"]  # what every result row records of its cell
MAX_PASSES = 10_000


@dataclass(frozen=True)
class RepeatPolicy:
    min_repeats: int = 5
    max_repeats: int = 30
    target_ci: float = 0.05  # the 95% CI half-width, as a fraction of the mean
    cell_cap_s: float = 30.0  # measured time after which a cell takes no more repeats (beyond min_repeats)
    min_repeat_s: float = 1.0  # timed work per repeat: shorter passes are looped

    def passes_for(self, pass_seconds: float, loopable: bool = True) -> int:
        """Passes per repeat for a pass of ``pass_seconds`` (from the warm-up): 1 when it cannot be looped."""
        if not loopable:
            return 1
        if not pass_seconds > 0:
            return MAX_PASSES
        return max(1, min(MAX_PASSES, math.ceil(self.min_repeat_s / pass_seconds)))

    def done(self, cell: "Cell") -> bool:
        if cell.repeats < self.min_repeats:
            return False
        return cell.repeats >= self.max_repeats or cell.spent_s >= self.cell_cap_s or self.met(cell.values)

    def met(self, values: Sequence[float]) -> bool:
        mean, half, n = mean_ci(values)
        return n >= 2 and mean != 0 and math.isfinite(half) and half <= self.target_ci * abs(mean)

    @classmethod
    def exactly(cls, repeats: int, passes_s: float = 0.0) -> "RepeatPolicy":
        """A fixed number of repeats (no adaptive extension), each ``passes_s`` of timed work (0: one pass)."""
        return cls(min_repeats=repeats, max_repeats=repeats, min_repeat_s=passes_s)

    def once(self) -> "RepeatPolicy":
        """One repeat (a caller that runs the rounds itself)."""
        return replace(self, min_repeats=1, max_repeats=1)

    def describe(self) -> str:
        return (f"at least {self.min_repeats} repeats of at least {self.min_repeat_s:g} s of timed work each "
                f"(shorter passes looped), more until the 95% CI half-width is within {self.target_ci:.0%} of the "
                f"mean or the cell has spent {self.cell_cap_s:g} s (at most {self.max_repeats} repeats)")


@dataclass
class Cell:
    """One configuration's repeats: their figures (seconds per pass), the time they took, the rows they made."""
    passes: int = 1
    values: list[float] = field(default_factory=list)
    spent_s: float = 0.0
    rows: list[dict] = field(default_factory=list)

    @property
    def repeats(self) -> int:
        return len(self.values)

    def add(self, value: float, spent_s: float, rows: list[dict] | dict | None = None) -> None:
        self.values.append(float(value))
        self.spent_s += spent_s
        if rows:
            self.rows.extend([rows] if isinstance(rows, dict) else rows)

    def fields(self, policy: RepeatPolicy) -> dict:
        return {"repeats": self.repeats, "ci_target_met": policy.met(self.values), "passes": self.passes}

    def annotated_rows(self, policy: RepeatPolicy) -> list[dict]:
        fields = self.fields(policy)
        return [{**row, **fields} for row in self.rows]


Measure = Callable[[object, int, Cell], "tuple[float, list[dict] | dict | None]"]


def rounds(points: Sequence, policy: RepeatPolicy, measure: Measure, cells: Sequence[Cell] | None = None,
           on_repeat: Callable[[], None] | None = None) -> list[Cell]:
    """Measure every point until ``policy`` is done with it, in rounds over the points still open.

    ``measure(point, repeat, cell)`` runs one repeat (``cell.passes`` passes) and returns its figure
    (seconds per pass) and the rows it made; ``cells`` carry each point's passes (from its warm-up).
    Returns the cells, in the order of ``points``: their rows are annotated with ``annotated_rows``.
    """
    cells = list(cells) if cells is not None else [Cell() for _ in points]
    repeat = 0
    while open_ := [i for i, cell in enumerate(cells) if not policy.done(cell)]:
        for i in open_:
            start = time.perf_counter()
            value, rows = measure(points[i], repeat, cells[i])
            cells[i].add(value, time.perf_counter() - start, rows)
            if on_repeat:
                on_repeat()
        repeat += 1
    return cells


def repeat_cell(policy: RepeatPolicy, measure: Callable[[int], "tuple[float, list[dict] | dict | None]"],
                passes: int = 1) -> Cell:
    """One cell on its own: ``measure(repeat)`` until the policy is done with it."""
    return rounds([None], policy, lambda _point, repeat, _cell: measure(repeat), [Cell(passes)])[0]


def timed_passes(run_pass: Callable[[], object], passes: int) -> tuple[float, list]:
    """Run ``run_pass`` ``passes`` times back to back; (seconds per pass, what each returned)."""
    start = time.perf_counter()
    results = [run_pass() for _ in range(passes)]
    return (time.perf_counter() - start) / passes, results
