"""libvirt's memory units, read as libvirt reads them."""

from __future__ import annotations

from kubevirt.libvirt_units import unit_bytes


def test_units_are_read_whatever_their_case_and_kib_without_one() -> None:
    assert unit_bytes("KiB") == unit_bytes("kib") == unit_bytes(None) == unit_bytes("") == 1024
    assert unit_bytes("b") == unit_bytes("bytes") == 1
    assert unit_bytes("MB") == 1000**2
    assert unit_bytes("M") == unit_bytes("MiB") == 1024**2
    assert unit_bytes("TiB") == 1024**4


def test_a_unit_libvirt_lacks_is_none() -> None:
    assert unit_bytes("PiB") is None
    assert unit_bytes("furlongs") is None
