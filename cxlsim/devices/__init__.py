"""Devices at transaction level: memory back-ends, Type 3 expanders, DMA engines."""

from cxlsim.devices.memory import MemoryBackend, MemoryBackendParams

__all__ = ["MemoryBackend", "MemoryBackendParams"]
