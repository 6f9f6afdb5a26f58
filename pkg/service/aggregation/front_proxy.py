"""The aggregator's front-proxy identity, as the API server publishes it in
``kube-system/extension-apiserver-authentication``: the CA that signs its client certificate, the
names that certificate may carry, and the headers naming the user.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from kubevirt.client import CONFIG_MAPS, ApiError, KubeApi, KubeClient
from kubevirt.log import get_logger
from kubevirt.service.aggregation.identity import RequestHeaderNames

AUTHENTICATION_CONFIG_MAP = ("kube-system", "extension-apiserver-authentication")
CLIENT_CA_KEY = "requestheader-client-ca-file"


class FrontProxyConfigError(ValueError):
    """The ConfigMap is missing, unreadable or lacks the front-proxy CA."""


@dataclass(frozen=True)
class FrontProxyTrust:
    client_ca: str
    allowed_names: list[str] = field(default_factory=list)
    headers: RequestHeaderNames = field(default_factory=RequestHeaderNames)

    def allows(self, common_name: str | None) -> bool:
        """An empty list allows any name the CA signed, as the API server's own check does."""
        return not self.allowed_names or common_name in self.allowed_names


def read_front_proxy_trust(api: KubeApi) -> FrontProxyTrust:
    namespace, name = AUTHENTICATION_CONFIG_MAP
    try:
        config_map = api.get(CONFIG_MAPS, namespace, name)
    except ApiError as err:
        raise FrontProxyConfigError(f"cannot read {namespace}/{name}: {err}") from None
    data = config_map.get("data") or {}
    if CLIENT_CA_KEY not in data:
        raise FrontProxyConfigError(f"{CLIENT_CA_KEY} not found in {name} ConfigMap")
    defaults = RequestHeaderNames()
    headers = RequestHeaderNames(
        user=defaults.user + _strings(data, "requestheader-username-headers"),
        group=defaults.group + _strings(data, "requestheader-group-headers"),
        extra_prefixes=defaults.extra_prefixes + _strings(data, "requestheader-extra-headers-prefix"),
    )
    return FrontProxyTrust(
        client_ca=str(data[CLIENT_CA_KEY]),
        allowed_names=_strings(data, "requestheader-allowed-names"),
        headers=headers,
    )


def _strings(data: dict[str, str], key: str) -> list[str]:
    text = data.get(key) or ""
    if not text:
        return []
    try:
        values = json.loads(text)
    except ValueError:
        raise FrontProxyConfigError(f"data.{key}: not a JSON list of strings") from None
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise FrontProxyConfigError(f"data.{key}: not a JSON list of strings")
    return values


@dataclass
class FrontProxyFollower:
    """Re-reads the front-proxy trust; the TLS listener is told each new CA."""

    client: KubeClient
    trust_client_ca: Callable[[str], None]
    current: FrontProxyTrust | None = field(default=None)

    def refresh(self) -> None:
        try:
            trust = read_front_proxy_trust(self.client)
        except FrontProxyConfigError as err:
            get_logger().warning(
                "front-proxy trust unavailable, subresources refuse requests", reason=str(err)
            )
            return
        self.trust_client_ca(trust.client_ca)
        self.current = trust

    async def follow(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await asyncio.to_thread(self.refresh)
