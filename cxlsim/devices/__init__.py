"""Devices at transaction level: memory back-ends, DMA engines, accelerator compute
engines and Poisson requesters."""

from cxlsim.devices.memory import MemoryBackend, MemoryBackendParams

__all__ = ["MemoryBackend", "MemoryBackendParams"]
