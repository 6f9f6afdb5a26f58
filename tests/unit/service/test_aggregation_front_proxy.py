"""The front proxy's identity as the API server publishes it."""

from __future__ import annotations

import pytest

from kubevirt.client import CONFIG_MAPS
from kubevirt.service.aggregation.front_proxy import FrontProxyConfigError, read_front_proxy_trust
from kubevirt_testing.fake_kube_api import FakeKubeApi


def test_front_proxy_trust_from_the_config_map() -> None:
    api = FakeKubeApi()
    with pytest.raises(
        FrontProxyConfigError, match="cannot read kube-system/extension-apiserver-authentication"
    ):
        read_front_proxy_trust(api)
    data = {
        "requestheader-client-ca-file": "PEM",
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Other-Group"]',
    }
    meta = {"name": "extension-apiserver-authentication", "namespace": "kube-system"}
    api.add(CONFIG_MAPS, {"metadata": meta, "data": data})
    trust = read_front_proxy_trust(api)
    assert trust.client_ca == "PEM"
    assert [trust.allows(name) for name in ("front-proxy-client", "someone-else", None)] == [
        True,
        False,
        False,
    ]
    assert trust.headers.group == ["X-Remote-Group", "X-Other-Group"]
    api.patch(
        CONFIG_MAPS,
        "kube-system",
        meta["name"],
        {"data": {"requestheader-group-headers": "nope"}},
        patch_type="merge",
    )
    with pytest.raises(FrontProxyConfigError, match=r"data\.requestheader-group-headers: not a JSON list"):
        read_front_proxy_trust(api)
