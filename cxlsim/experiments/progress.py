"""Progress bars of long runs: tqdm on stderr, drawn only when asked.

Python asks with ``progress=True``; the CLI asks when stderr is a terminal (or with
``--progress``). A sweep advances per point, ``cxlsim validate`` per check, and a single
run at its own natural steps (a trace run's epochs, a size's simulated bytes, a point of
a curve), never per simulated event; a bar redraws at most :data:`REDRAW` times a second.
A bar not asked for is tqdm's disabled one, whose updates do nothing -- except in a
sweep's points while the sweep shows progress: there they add to a counter the sweep
shares with its workers (:func:`count_into`), which its bar shows beside the points.
The bar is tqdm's text bar everywhere, a notebook included (whose widget bar would need
ipywidgets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm.std import tqdm

#: Redraws of a bar per second, at most.
REDRAW = 2

#: The shared integer a sweep's points count their steps into, in this process.
_counter: Any = None

T = TypeVar("T")


def progress_bar(show: bool, total: float, desc: str, unit: str, **options: Any) -> tqdm:
    """A bar on stderr of ``total`` ``unit``s called ``desc`` (``options``: tqdm's, e.g.
    ``initial``, ``unit_scale``); a silent one unless ``show``."""
    if not show and _counter is not None:
        return _Counted(total=total, desc=desc, unit=unit, disable=True, **options)
    return tqdm(total=total, desc=desc, unit=unit, disable=not show,
                mininterval=1 / REDRAW, **options)


def count_into(counter: Any) -> None:
    """Count this process's undrawn bars' steps into ``counter`` (a shared
    ``multiprocessing.Value``; None: stop)."""
    global _counter
    _counter = counter


class _Counted(tqdm):
    """A bar not drawn whose steps add to the shared counter (:func:`count_into`)."""

    def update(self, n: float = 1) -> None:
        with _counter.get_lock():
            _counter.value += int(n)


def steps(bar: tqdm, items: Iterable[T], weight: Callable[[T], float] = lambda _: 1
          ) -> Iterator[T]:
    """``items``, advancing ``bar`` by ``weight(item)`` once the loop is done with each."""
    for item in items:
        yield item
        bar.update(weight(item))
