"""Items produced on a helper thread ahead of their consumer.

Reading a trace chunk, hashing its pages or generating the next chunk depends on the
input alone; done on a helper thread it overlaps the consumer's work, which releases
the GIL (compiled kernels, file writes), instead of following it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def prefetched(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items`` in order, each produced on a helper thread up to ``depth`` ahead (a
    trace run's epochs: reading, page ids, grouping while the previous epoch is in the
    hierarchy kernel; a generator's next chunk while this one is written). An exception
    in the producer is raised here, in order; a consumer that stops early stops the
    producer."""
    ready: queue.Queue = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        ready.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put((end, None))
        except BaseException as exc:  # handed to the consumer, raised there
            ready.put((end, exc))

    worker = threading.Thread(target=produce, name="cxlsim-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = ready.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                ready.get_nowait()
            except queue.Empty:
                worker.join(0.05)
