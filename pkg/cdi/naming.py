"""CDI's names for what it makes per claim: ``<base>-<suffix>``, shortened with an FNV-32a hash when longer
than a DNS subdomain allows."""

from __future__ import annotations

MAX_NAME_LENGTH = 253


def fnv32a(text: str) -> str:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


def resource_name(base: str, suffix: str, max_length: int = MAX_NAME_LENGTH) -> str:
    name = f"{base}-{suffix}"
    if len(name) <= max_length:
        return name
    base_length = max_length - 10 - len(suffix)
    if base_length < 0:
        short = f"{base[: max(0, max_length - 9)]}-{fnv32a(name)}"
        return short[:max_length]
    return f"{base[:base_length]}-{fnv32a(base)}-{suffix}"
