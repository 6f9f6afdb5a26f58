"""virt-api's application object: what runs once the flags are parsed.

It serves the admission webhooks (and ``/healthz``) over HTTPS on ``--port``; the certificate and key
are read from files and re-read when they change.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from kubevirt.admission import defaulting
from kubevirt.admission.schema import prepare, schema_check
from kubevirt.admission.state import ClusterState, ClusterStateError, NoClusterState
from kubevirt.client import KubeClient, KubeConfigError, install_namespace, own_namespace
from kubevirt.log import get_logger
from kubevirt.monitoring import virt_api as monitoring
from kubevirt.service.aggregation.front_proxy import FrontProxyFollower
from kubevirt.service.health import ApiServerHealth
from kubevirt.service.metrics_endpoint import metrics_handler
from kubevirt.service.startup import tls_files_present
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_api.cluster import KubernetesClusterState
from kubevirt.virt_api.presets import PresetCache
from kubevirt.virt_api.rest.discovery import VERSIONS, version_path
from kubevirt.virt_api.rest.handler import CONSOLE_SERVER_PORT
from kubevirt.virt_api.rest.wiring import HandlerTLS, middleware_for, subresource_extension
from kubevirt.virt_api.webhooks.requests import WebhookContext
from kubevirt.virt_api.webhooks.routes import webhook_handlers
from kubevirt.virt_api.webhooks.server import ServerLimits, WebhookServer
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower, KubeVirtLister

EVERYDAY_KINDS = ("VirtualMachineInstance", "VirtualMachine", "VirtualMachineInstanceMigration")


class ClusterConfigError(ValueError):
    """The given kubeconfig cannot be used."""


@dataclass(frozen=True)
class Options:
    listen: str
    port: int
    tls_cert_file: Path
    tls_key_file: Path
    config: ClusterConfig
    limits: ServerLimits
    cert_reload_interval: float = 2.0
    kubeconfig: str | None = None
    config_refresh_interval: float = 5.0
    console_server_port: int = CONSOLE_SERVER_PORT
    handler_tls: HandlerTLS | None = None
    # Where virt-handler pods run; virt-api's own namespace when None.
    handler_namespace: str | None = None
    # Where the KubeVirt CR is followed; virt-api's own namespace when None (all outside a pod).
    namespace: str | None = None


def follow_config(ctx: WebhookContext, lister: KubeVirtLister, namespace: str | None) -> ConfigFollower:
    """The configuration follower, reading the CR through ``lister`` (virt-api runs no KubeVirt
    informer) and publishing into the webhooks' context."""
    follower = ConfigFollower(namespace, initial=ctx.config, lister=lister, read_errors=(ClusterStateError,))

    def publish() -> None:
        ctx.config = follower.current()

    follower.on_change(publish)
    return follower


def build_context(config: ClusterConfig, state: ClusterState | None = None) -> WebhookContext:
    return WebhookContext(
        config=config,
        vmi_defaulter=defaulting.vmi_defaults,
        vm_defaulter=defaulting.vm_defaults,
        schema=schema_check,
        state=state or NoClusterState(),
    )


async def serve(options: Options, stop: asyncio.Event) -> None:
    kube = _kube_client(options)
    if kube is None:
        await _serve(options, stop, kube, None)
        return
    # Started first, so that the first reviews already find the presets cached; stopped however
    # serving ends.
    presets = PresetCache(kube)
    presets.start()
    try:
        await _serve(options, stop, kube, presets)
    finally:
        await asyncio.to_thread(presets.stop)


async def _serve(
    options: Options, stop: asyncio.Event, kube: KubeClient | None, presets: PresetCache | None
) -> None:
    log = get_logger()
    kubernetes = KubernetesClusterState(kube, presets) if kube is not None else None
    patch_vmi = kubernetes.patch_vmi if kubernetes else None
    ctx = build_context(options.config, kubernetes)
    # The listener follows the cluster's tlsConfiguration, which the follower below keeps in ctx.config.
    certificate = ReloadingCertificate(
        options.tls_cert_file,
        options.tls_key_file,
        interval=options.cert_reload_interval,
        tls_config=lambda: ctx.config.tls,
    )
    handlers = webhook_handlers(ctx, patch_vmi=patch_vmi)
    # Before serving (the readiness probe waits): the kinds every VM start and migration is reviewed as.
    prepare(EVERYDAY_KINDS)
    follower_task: asyncio.Task[None] | None = None
    health: ApiServerHealth | None = None
    if kubernetes is not None:
        follower = follow_config(ctx, kubernetes, options.namespace or own_namespace())
        follower_task = asyncio.get_running_loop().create_task(
            follower.follow(options.config_refresh_interval)
        )
        health = ApiServerHealth(kubernetes.server_version, follower.resource_version)
    extensions, middlewares, trust = _subresources(
        options, kube, certificate, list(handlers), lambda: ctx.config
    )
    monitoring.register()
    server = WebhookServer(
        handlers,
        limits=options.limits,
        health=health,
        # As KubeVirt's, /metrics is served beside the API, without its authorization.
        extensions=[*extensions, _serve_metrics],
        middlewares=middlewares,
        health_paths=["/healthz", *(f"{version_path(version)}/healthz" for version in VERSIONS)],
    )
    listening = await server.listen(options.listen, options.port, certificate.server_context)
    certificate.start()
    trust_task = None
    if trust is not None:
        trust_task = asyncio.get_running_loop().create_task(trust.follow(options.config_refresh_interval))
    log.info(
        "virt-api serving admission webhooks",
        address=options.listen,
        port=options.port,
        feature_gates=sorted(options.config.feature_gates),
        rollout_strategy=options.config.rollout_strategy,
        cluster=type(ctx.state).__name__,
    )
    try:
        await stop.wait()
    finally:
        log.info("virt-api shutting down")
        if follower_task is not None:
            follower_task.cancel()
        if trust_task is not None:
            trust_task.cancel()
        await certificate.stop()
        await listening.close()


def _serve_metrics(app: web.Application) -> None:
    app.router.add_get("/metrics", metrics_handler())


def _kube_client(options: Options) -> KubeClient | None:
    """virt-api's API client; none without a cluster to ask (no kubeconfig and not in a pod)."""
    if options.kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    try:
        return KubeClient.from_kubeconfig(options.kubeconfig, user_agent="virt-api")
    except KubeConfigError as err:
        raise ClusterConfigError(str(err)) from None


def _subresources(
    options: Options,
    client: KubeClient | None,
    certificate: ReloadingCertificate,
    webhook_paths: list[str],
    config: Callable[[], ClusterConfig],
) -> tuple[list[Any], list[Any], FrontProxyFollower | None]:
    """The subresource API's routes and authorising middleware; none without a cluster to ask."""
    if client is None:
        return [], [], None
    namespace = install_namespace(options.handler_namespace)
    follower = FrontProxyFollower(client, certificate.trust_client_ca)
    follower.refresh()
    extension = subresource_extension(
        client, namespace, options.handler_tls, options.console_server_port, config
    )
    return [extension], [middleware_for(client, follower, webhook_paths)], follower


def run(options: Options) -> int:
    """Serve until SIGTERM or SIGINT. Returns the process exit code."""
    log = get_logger()
    if not tls_files_present(options.tls_cert_file, options.tls_key_file):
        return 2

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(options, stop)

    try:
        asyncio.run(main())
    except ClusterConfigError as err:
        log.error("virt-api cannot reach the cluster", reason=str(err))
        return 2
    except OSError as err:
        log.error("virt-api cannot serve", reason=str(err))
        return 1
    return 0
