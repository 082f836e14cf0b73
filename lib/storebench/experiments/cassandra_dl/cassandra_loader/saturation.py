"""Where adding loader processes stops raising the MB/s a server delivers (seed 004's Table 2 under
saturation): the rule the measurement's sweep stops by and the analysis reads its percentiles at, stated once."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

SATURATION_GAIN = 0.10  # runs recorded before saturation_gain was a setting: the margin they are read with


@dataclass(frozen=True)
class Saturation:
    """Where adding loader processes stopped raising the MB/s the server delivers: ``saturated`` is the
    first count whose mean aggregate MB/s gained less than ``gain`` over the count before it (more
    loaders, no more MB/s: the server is saturated there), ``knee`` that count before it (the fewest
    loaders reaching the plateau); both None while the MB/s kept rising (or one count only)."""
    mb_per_s: pd.Series  # mean aggregate MB/s per loader count, ascending
    gain: float
    knee: int | None = None
    saturated: int | None = None

    def text(self) -> str:
        counts = ", ".join(f"{n} loader{'s' if n > 1 else ''} {mb:,.0f}" for n, mb in self.mb_per_s.items())
        if self.saturated is None:
            return (f"MB/s {counts}: still rising by at least {self.gain:.0%} at {int(self.mb_per_s.index[-1])} "
                    f"loader(s), no saturation reached")
        step = self.mb_per_s[self.saturated] / self.mb_per_s[self.knee] - 1
        where = ("one loader already saturates this machine" if self.knee == 1
                 else f"saturation at {self.knee} loaders")
        return (f"MB/s {counts}: {self.knee} -> {self.saturated} loaders changed it by {step:+.0%} (less than the "
                f"stated {self.gain:.0%}): {where}")


def saturation(latency: pd.DataFrame, gain: float) -> Saturation:
    """The saturation point of one encoding's latency runs (see ``Saturation``); the measurement stops its
    sweep there, and the analysis reads the percentiles there."""
    means = latency.groupby("loaders").mb_per_s.mean().sort_index() if len(latency) else pd.Series(dtype=float)
    for before, after in zip(means.index, means.index[1:]):
        if means[after] < (1 + gain) * means[before]:
            return Saturation(means, gain, int(before), int(after))
    return Saturation(means, gain)
