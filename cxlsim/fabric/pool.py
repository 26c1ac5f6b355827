"""Pooled memory: a multi-logical device's LDs and the fabric manager's bindings.

From the CXL specification (3.2, sections 2.4-2.5 and 7.2; the facts in the project's
reference sheet on pooling): a multi-logical device (MLD, Type 3 only) offers at most
16 logical devices a host can bind (plus one the fabric manager keeps); an LD is bound
to one host at a time, and the fabric manager moves it by unbinding it from one host
and binding it to another (Unbind / Bind vPPB). A host sees each LD bound to it as
memory with no CPUs (Linux: a CPU-less NUMA node). An LD is named ``DEVICE.N``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Logical devices a host can bind on one multi-logical device (CXL 3.2, 2.4).
MAX_LDS = 16


class BindError(ValueError):
    """A binding the fabric manager refuses (the message says why)."""


@dataclass(frozen=True)
class LogicalDevice:
    """LD ``index`` of pooled ``device``: ``capacity`` bytes of its memory."""

    device: str
    index: int
    capacity: int

    @property
    def name(self) -> str:
        """``DEVICE.N``, as bindings name it."""
        return f"{self.device}.{self.index}"


class Bindings:
    """Which host each LD is bound to (None: the fabric manager holds it)."""

    def __init__(self, lds: Iterable[LogicalDevice]) -> None:
        self.lds = {ld.name: ld for ld in lds}
        self.host: dict[str, str | None] = dict.fromkeys(self.lds)

    def ld(self, name: str) -> LogicalDevice:
        """The LD called ``name``; BindError names the LDs there are."""
        if name not in self.lds:
            known = ", ".join(self.lds) or "none"
            raise BindError(f"no logical device {name!r} (DEVICE.N); the fabric's: {known}")
        return self.lds[name]

    def bind(self, name: str, host: str) -> None:
        """Bind LD ``name`` to ``host``; an LD already bound is refused (unbind it
        first: it belongs to one host at a time)."""
        self.ld(name)
        if self.host[name] is not None:
            raise BindError(f"{name} is already bound to {self.host[name]}; an LD belongs "
                            f"to one host at a time (unbind it first)")
        self.host[name] = host

    def unbind(self, name: str) -> str:
        """Unbind LD ``name``; returns the host it left."""
        self.ld(name)
        host = self.host[name]
        if host is None:
            raise BindError(f"{name} is not bound to any host")
        self.host[name] = None
        return host

    def of(self, host: str) -> list[LogicalDevice]:
        """The LDs bound to ``host``, in the fabric's order."""
        return [self.lds[n] for n, h in self.host.items() if h == host]
