"""Decode-time clean-up of addresses, as KubeVirt's VMI spec, DHCP options and pod network decoders do."""

from __future__ import annotations

import pytest

from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_api.core.v1.sanitizers import sanitize_cidr, sanitize_ip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.8.8.8", "8.8.8.8"),
        ("008.008.008.008", "8.8.8.8"),  # leading zeros read as decimal, not octal
        ("10.0.0.0255", "10.0.0.255"),  # any number of leading zeros
        ("256.1.1.1", None),
        ("1.2.3", None),
        ("FD00:0:0::1", "fd00::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::ffff:1.2.3.4", "1.2.3.4"),  # IPv4-mapped prints as IPv4
        ("::ffff:001.002.003.004", "1.2.3.4"),
        ("fe80::1%eth0", None),
        ("dns.example.com", None),
        ("", None),
    ],
)
def test_sanitize_ip(text: str, expected: str | None) -> None:
    assert sanitize_ip(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.0.2.0/24", "10.0.2.0/24"),
        ("010.000.002.005/024", "10.0.2.5/24"),  # the address is kept, not masked
        ("10.0.2.0/33", None),
        ("10.0.2.0/", None),
        ("10.0.2.0", None),
        ("FD10:0:2::/120", "fd10:0:2::/120"),
        ("fd10::/129", None),
    ],
)
def test_sanitize_cidr(text: str, expected: str | None) -> None:
    assert sanitize_cidr(text) == expected


def test_vmi_decoding_cleans_nameservers_ntp_servers_and_the_pod_cidr() -> None:
    spec = {
        "domain": {
            "devices": {
                "interfaces": [{"name": "a", "dhcpOptions": {"ntpServers": ["010.001.0.1", "pool.ntp.org"]}}]
            }
        },
        "dnsConfig": {"nameservers": ["08.8.8.8", "FD00::0:1", "not-an-ip"], "searches": ["x.local"]},
        "networks": [
            {"name": "a", "pod": {"vmNetworkCIDR": "010.0.2.0/24", "vmIPv6NetworkCIDR": "FD10::/120"}}
        ],
    }
    out = VirtualMachineInstance.from_dict({"spec": spec}).to_dict()["spec"]
    assert out["dnsConfig"] == {"nameservers": ["8.8.8.8", "fd00::1", "not-an-ip"], "searches": ["x.local"]}
    assert out["domain"]["devices"]["interfaces"][0]["dhcpOptions"]["ntpServers"] == [
        "10.1.0.1",
        "pool.ntp.org",
    ]
    # only the IPv4 CIDR is cleaned up
    assert out["networks"][0]["pod"] == {"vmNetworkCIDR": "10.0.2.0/24", "vmIPv6NetworkCIDR": "FD10::/120"}
    vm = VirtualMachine.from_dict({"spec": {"template": {"spec": spec}}})
    assert vm.to_dict()["spec"]["template"]["spec"]["dnsConfig"]["nameservers"][0] == "8.8.8.8"
