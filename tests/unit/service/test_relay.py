"""The header handling both proxies share."""

from __future__ import annotations

from kubevirt.service.relay import end_to_end, forwarded_for


def test_hop_by_hop_headers_are_dropped_case_insensitively() -> None:
    headers = {"connection": "Upgrade, x-a", "X-A": "1", "upgrade": "h2c", "TE": "trailers", "X-B": "2"}
    assert dict(end_to_end(headers)) == {"X-B": "2"}


def test_the_clients_address_is_appended_to_x_forwarded_for() -> None:
    assert forwarded_for(["10.0.0.1"], "10.0.0.2") == "10.0.0.1, 10.0.0.2"
    assert forwarded_for([], "10.0.0.2") == "10.0.0.2"
    assert forwarded_for(["10.0.0.1"], None) is None
