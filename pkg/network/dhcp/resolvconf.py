"""The DNS servers and search domains of the pod, from its ``resolv.conf``, to hand to the VM."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

MAX_SEARCH_DOMAINS = 6
# A DNS name: anything else (a comma, a space) would change the meaning of the DHCP server's options.
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$"
)  # what a resolver reads; more would only bloat the DHCP answer


@dataclass(frozen=True)
class DNSSettings:
    nameservers: tuple[str, ...]
    search: tuple[str, ...]


def parse_resolv_conf(text: str) -> DNSSettings:
    nameservers: list[str] = []
    search: list[str] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split(";", 1)[0].split()
        if not words:
            continue
        if words[0] == "nameserver" and len(words) > 1:
            try:
                address = ipaddress.ip_address(words[1])
            except ValueError:
                continue  # a malformed entry: the resolver itself would skip it
            if isinstance(address, ipaddress.IPv4Address):
                nameservers.append(str(address))  # DHCPv4 carries IPv4 servers only
        elif words[0] in ("search", "domain"):
            search = [d.rstrip(".") for d in words[1:] if _DOMAIN.match(d.rstrip("."))]  # the last line wins
    return DNSSettings(
        nameservers=tuple(dict.fromkeys(nameservers)), search=tuple(search[:MAX_SEARCH_DOMAINS])
    )
