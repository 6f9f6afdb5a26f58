"""hack/monitoring: a real Prometheus for the local cluster, and what it has on a VM."""

from __future__ import annotations

import sys

import click

from . import prometheus, vm_series
from .handle import Cluster
from .layout import Layout


def _cluster() -> Cluster:
    return Cluster(Layout.from_environment())


def _fail(error: Exception) -> None:
    raise click.ClickException(str(error))


@click.group()
def main() -> None:
    """A real Prometheus scraping KubeVirt on the local cluster (hack/up first)."""


@main.command()
def up() -> None:
    """Install the monitoring CRDs and account (virt-operator then installs KubeVirt's ServiceMonitor,
    PrometheusRule and RBAC) and start Prometheus with them (again: re-read them)."""
    cluster = _cluster()
    try:
        prometheus.install_monitoring_stack(cluster)
        server = prometheus.start(cluster)
    except (prometheus.MonitoringError, AssertionError, RuntimeError) as error:
        _fail(error)
    click.echo(f"Prometheus {server.url} (its UI: /query, targets: /targets, alerts: /alerts)")
    click.echo("hack/monitoring vm NAME [-n NAMESPACE] prints a VM's series; hack/monitoring down stops it")


@main.command()
def down() -> None:
    """Stop Prometheus and remove the monitoring CRDs and namespace (and so KubeVirt's monitoring objects)."""
    cluster = _cluster()
    stopped = prometheus.stop(cluster)
    prometheus.remove_monitoring_stack(cluster)
    click.echo("Prometheus stopped" if stopped else "Prometheus was not running")


@main.command()
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--minutes", type=click.FloatRange(min=1), default=10, show_default=True, help="The window.")
def vm(name: str, namespace: str, minutes: float) -> None:
    """A running VM's CPU, memory and network series over the last minutes."""
    server = prometheus.Prometheus(prometheus.URL)
    try:
        found = vm_series.rows(server, namespace, name, minutes)
    except prometheus.MonitoringError as error:
        _fail(error)
    click.echo(vm_series.render(found, namespace, name, minutes))
    if not found:
        sys.exit(1)


@main.command()
@click.argument("expr")
def query(expr: str) -> None:
    """An instant PromQL query, one series per line."""
    try:
        series = prometheus.Prometheus(prometheus.URL).query(expr)
    except prometheus.MonitoringError as error:
        _fail(error)
    for one in series:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(one.labels.items()))
        click.echo(f"{{{labels}}} {one.points[-1][1]:g}")


if __name__ == "__main__":
    main()
