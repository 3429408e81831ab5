"""How often to scrape a target's heap: at its job's interval, or at the endpoint's fast interval
(`fast_scrape_interval`, 5 s for `memory` by default) while its in-use heap keeps growing or nears the
container's memory limit, so the last heap before an OOM kill is seconds old, not an interval old.

The reading is the sum of `inuse_space` of each scrape (`inuse_bytes`, numpy over the sample values).
A Go heap profile describes the heap as of the last garbage collection, so a leaking program's reading
rises in steps, one per collection, and stays exactly the same in between: an identical reading is no
news. Hence:

- a reading at least `RISE` (1 %) above the last different one is a rise; one lower, or different but
  within 1 % (a collection that found the same heap), ends the growth;
- fast while the last `RISES` (2) different readings were rises (three readings in a row, each larger
  than the one before) and the last rise is at most `HOLD_S` old: Go collects at least every two minutes,
  so a heap that still grows shows it within that time, and one that showed nothing new for longer is
  taken to have stopped;
- or fast while the reading is at least `NEAR_LIMIT` (80 %) of the container's memory limit (known for
  Kubernetes pods from their spec, `oomwatch.py`).

Otherwise the job's interval. Pure: the scrape loop feeds it readings and logs the changes it reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof import Profile

RISE = 0.01
RISES = 2
HOLD_S = 150.0
NEAR_LIMIT = 0.8
INUSE_SPACE = "inuse_space"


def inuse_bytes(profile: Profile) -> int | None:
    """The sum of the profile's `inuse_space` values, or None when it has no such sample type."""
    names = [name for name, _ in profile.sample_type_names()]
    if INUSE_SPACE not in names:
        return None
    return int(np.sum(profile.samples.values[:, names.index(INUSE_SPACE)], dtype=np.int64))


@dataclass
class HeapPace:
    normal_s: float
    fast_s: float
    reason: str = ""  # why the heap is scraped fast now; "" while at the normal interval
    _last: int | None = None  # the last different reading
    _rises: int = 0
    _from: int = 0  # the reading the current run of rises started from
    _last_rise_s: float = 0.0

    @property
    def interval_s(self) -> float:
        return self.fast_s if self.reason else self.normal_s

    def observe(self, now_s: float, inuse: int, limit: int = 0) -> str | None:
        """Take one reading; returns a line saying why the pace changed, or None when it did not."""
        self._read(now_s, inuse)
        before, self.reason = self.reason, self._why_fast(now_s, inuse, limit)
        if bool(before) == bool(self.reason):
            return None
        return self.reason or f"in-use heap stopped growing at {_size(inuse)}"

    def _read(self, now_s: float, inuse: int) -> None:
        last = self._last
        if last is not None and inuse == last:
            return  # no collection since the last reading: nothing new
        if last is not None and inuse >= last * (1 + RISE):
            if not self._rises:
                self._from = last
            self._rises += 1
            self._last_rise_s = now_s
        else:
            self._rises = 0
        self._last = inuse

    def _why_fast(self, now_s: float, inuse: int, limit: int) -> str:
        if limit and inuse >= NEAR_LIMIT * limit:
            return f"in-use heap {_size(inuse)} is {inuse / limit:.0%} of the memory limit {_size(limit)}"
        if self._rises >= RISES and now_s - self._last_rise_s <= HOLD_S:
            return f"in-use heap growing: {_size(self._from)} to {_size(inuse)} over {self._rises} rises"
        return ""


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
