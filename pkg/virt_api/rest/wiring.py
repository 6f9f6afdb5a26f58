"""Builds the subresource API for a running virt-api: the handlers on the runtime client, the
authorizer posting SubjectAccessReviews, and the front-proxy trust kept current from its ConfigMap.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from kubevirt.client import KubeClient
from kubevirt.service.aggregation.authorizer import review_poster
from kubevirt.service.aggregation.front_proxy import FrontProxyFollower
from kubevirt.service.tls import ReloadingClientContext, handler_server_identity, read_ca_bundle
from kubevirt.virt_api.rest.authorizer import Authorizer
from kubevirt.virt_api.rest.expand import VMExpander
from kubevirt.virt_api.rest.handler import HandlerLocator, TLSHandlerTransport
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.portforward import PortForwarder
from kubevirt.virt_api.rest.server import SubresourceAPI, subresource_middleware
from kubevirt.virt_api.rest.streams import StreamRelay
from kubevirt.virt_api.rest.vmi_operations import VMIOperations
from kubevirt.virt_api.rest.volumes import VolumeHotplug
from kubevirt.virt_config import ClusterConfig


@dataclass(frozen=True)
class HandlerTLS:
    """virt-api's client certificate towards virt-handler and the CA that signed virt-handler's.

    The CA signs every KubeVirt component's certificate; only virt-handler's serving identity is
    accepted (any name when ``externally_managed``, as KubeVirt's ``--externally-managed``)."""

    cert_file: Path
    key_file: Path
    ca_file: Path | None = None
    externally_managed: bool = False

    def contexts(self, ca_bundle: Callable[[], str | None]) -> ReloadingClientContext:
        """The client contexts over time; ``ca_bundle`` (PEM) is trusted when no CA file is given."""
        ca_file = self.ca_file
        trusted = (lambda: ca_file.read_text()) if ca_file else ca_bundle
        peer = handler_server_identity(externally_managed=self.externally_managed)
        return ReloadingClientContext(self.cert_file, self.key_file, trusted, peer=peer)


def _always(context: ssl.SSLContext) -> Callable[[], ssl.SSLContext]:
    return lambda: context


def subresource_extension(
    client: KubeClient,
    namespace: str,
    handler_tls: HandlerTLS | None,
    console_server_port: int,
    config: Callable[[], ClusterConfig],
) -> Callable[[web.Application], None]:
    locator = HandlerLocator(client, namespace, console_server_port)
    if handler_tls is None:
        contexts = _always(ssl.create_default_context())
    else:
        contexts = handler_tls.contexts(lambda: read_ca_bundle(client, namespace)).current
    vmis = VMIOperations(client, locator, TLSHandlerTransport(contexts))
    streams = StreamRelay(client, locator, contexts)
    api = SubresourceAPI(
        VMLifecycle(client),
        vmis,
        config,
        streams,
        VMExpander(client, config),
        PortForwarder(client),
        VolumeHotplug(client, config),
    )
    return api.install


def authorizer_for(client: KubeClient) -> Authorizer:
    return Authorizer(review_poster(client))


def middleware_for(client: KubeClient, follower: FrontProxyFollower, exempt: list[str]) -> Any:
    return subresource_middleware(authorizer_for(client), lambda: follower.current, exempt)
