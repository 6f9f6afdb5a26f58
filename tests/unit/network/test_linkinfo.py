"""The launcher's pyroute2-free link reader agrees with pyroute2 on the links of this namespace."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pyroute2 import IPRoute

from kubevirt.network import linkinfo, podnet
from kubevirt.network.errors import PodNetworkError


def test_links_and_address_families_match_pyroute2() -> None:
    with IPRoute() as ipr:
        names = [str(message.get_attr("IFLA_IFNAME")) for message in ipr.get_links()]
        assert "lo" in names
        for name in names:
            expected = podnet.link_attrs(ipr, name)
            pod = podnet.discover(ipr, name)
            assert linkinfo.link(name) == linkinfo.Link(
                index=expected["index"], mac=str(expected["mac"]), mtu=int(expected["mtu"])
            ), name
            assert linkinfo.global_address_families(name) == linkinfo.Families(
                ipv4=bool(pod.ipv4), ipv6=bool(pod.ipv6)
            ), name


def test_a_missing_link_is_named() -> None:
    assert linkinfo.link_index("no-such-link0") is None
    with pytest.raises(PodNetworkError, match=r"link \(no-such-link0\) is missing"):
        linkinfo.link("no-such-link0")
    with pytest.raises(PodNetworkError, match=r"pod link \(no-such-link0\) is missing"):
        linkinfo.global_address_families("no-such-link0")


def test_the_launchers_phase_two_does_not_load_pyroute2() -> None:
    # pyroute2's import alone is ~0.2 CPU-seconds, seconds of wall time under a launcher pod's CPU limit.
    code = (
        "import sys; import kubevirt.network.launcher; "
        "sys.exit(sorted(m for m in sys.modules if m.startswith('pyroute2')) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
