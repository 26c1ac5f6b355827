"""The bias table of a Type 2 device: one bit per 4 KB page of its memory (CXL 2.0 spec §2.2.1)."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

PAGE_BYTES = 4096


class Bias(IntEnum):
    """Who resolves coherence for a page: the host (host bias) or the device (device bias)."""

    HOST = 0
    DEVICE = 1


class BiasTable:
    """The bias of every 4 KB page of the device memory range ``[base, base + size)``.

    ``device[p]`` is True when page ``p`` is in device bias.
    """

    def __init__(self, size: int, base: int = 0, bias: Bias = Bias.HOST) -> None:
        if size <= 0 or size % PAGE_BYTES or base % PAGE_BYTES:
            raise ValueError(f"a bias table covers whole {PAGE_BYTES} B pages; found base "
                             f"{base}, size {size}")
        self.base, self.size = base, size
        self.device = np.full(size // PAGE_BYTES, bias is Bias.DEVICE)

    @property
    def pages(self) -> int:
        """Pages covered."""
        return len(self.device)

    def pages_of(self, addr: int, size: int) -> slice:
        """The pages that bytes ``[addr, addr + size)`` touch."""
        if size <= 0 or addr < self.base or addr + size > self.base + self.size:
            raise ValueError(f"[{addr}, {addr + size}) is not inside the table's range "
                             f"[{self.base}, {self.base + self.size})")
        return slice((addr - self.base) // PAGE_BYTES,
                     (addr + size - 1 - self.base) // PAGE_BYTES + 1)

    def bias_of(self, addr: int) -> Bias:
        """The bias of the page holding ``addr``."""
        return Bias(int(self.device[self.pages_of(addr, 1).start]))

    def set_range(self, addr: int, size: int, bias: Bias) -> None:
        """Put every page touched by ``[addr, addr + size)`` in ``bias``."""
        self.device[self.pages_of(addr, size)] = bias is Bias.DEVICE

    def count(self, bias: Bias) -> int:
        """Pages in ``bias``."""
        n = int(np.count_nonzero(self.device))
        return n if bias is Bias.DEVICE else self.pages - n
