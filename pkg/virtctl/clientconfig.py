"""kubectl's client flags for virtctl: ``--kubeconfig``, ``--context`` and ``-n/--namespace``.

They are accepted before the subcommand (``virtctl -n ns start vm``) and after it
(``virtctl start vm -n ns``); the later one wins. The namespace defaults to the context's, else ``default``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import click
from kubernetes import config as k8s_config

from kubevirt.client import KubeClient, KubeConfigError

F = TypeVar("F", bound=Callable[..., Any])
USER_AGENT = "virtctl"


@dataclass(frozen=True)
class ClientFlags:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None

    def over(self, base: ClientFlags) -> ClientFlags:
        """These flags where given, ``base`` where not."""
        return replace(
            base,
            **{key: value for key, value in vars(self).items() if value is not None},
        )


def client_flags(command: F) -> F:
    """Adds the client flags to a command; they reach it as ``flags: ClientFlags``."""
    options = [
        click.option("--kubeconfig", default=None, help="Path to the kubeconfig file to use."),
        click.option(
            "--context", "kube_context", default=None, help="The name of the kubeconfig context to use."
        ),
        click.option("-n", "--namespace", default=None, help="The namespace scope for this request."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def flags_from(
    ctx: click.Context, kubeconfig: str | None, kube_context: str | None, namespace: str | None
) -> ClientFlags:
    given = ClientFlags(kubeconfig, kube_context, namespace)
    base = ctx.find_object(ClientFlags) or ClientFlags()
    return given.over(base)


def connect(flags: ClientFlags) -> tuple[KubeClient, str]:
    """The client and the namespace the command works in."""
    try:
        client = KubeClient.from_kubeconfig(flags.kubeconfig, user_agent=USER_AGENT, context=flags.context)
    except KubeConfigError as err:
        raise click.ClickException(str(err)) from None
    return client, flags.namespace or _context_namespace(flags)


def _context_namespace(flags: ClientFlags) -> str:
    try:
        contexts, current = k8s_config.list_kube_config_contexts(config_file=flags.kubeconfig)  # type: ignore[no-untyped-call]
    except (k8s_config.ConfigException, OSError):
        return "default"
    chosen = (
        next((c for c in contexts if c.get("name") == flags.context), current) if flags.context else current
    )
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")
