"""Devices at transaction level: memory back-ends (controllers), DMA engines, accelerator
compute engines, Poisson requesters and cores' miss slots."""

from cxlsim.devices.memory import MemoryBackend, MemoryBackendParams

__all__ = ["MemoryBackend", "MemoryBackendParams"]
