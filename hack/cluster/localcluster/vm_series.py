"""A running VM's CPU, memory and network series from Prometheus, as a terminal table of sparklines.

Each row is one series over the window: its last, lowest and highest value and a sparkline of the
window. The figures are KubeVirt's per-VMI metrics (virt-handler's) and recording rules, so the same
queries work against a Prometheus scraping KubeVirt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .prometheus import Prometheus, Series

BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Panel:
    title: str
    expr: str  # {selector} is the VMI's label matcher
    unit: str
    series_label: str = ""  # the label telling this panel's series apart (an interface, a vCPU)


PANELS = (
    Panel(
        "CPU (cores)", "sum by (name) (rate(kubevirt_vmi_cpu_usage_seconds_total{{{selector}}}[1m]))", "cores"
    ),
    Panel(
        "vCPU time (cores)",
        "sum by (id) (rate(kubevirt_vmi_vcpu_seconds_total{{{selector}}}[1m]))",
        "cores",
        "id",
    ),
    Panel("memory: resident (QEMU)", "kubevirt_vmi_memory_resident_bytes{{{selector}}}", "bytes"),
    Panel("memory: used by the guest", "kubevirt_vmi_memory_used_bytes{{{selector}}}", "bytes"),
    Panel("memory: available to the guest", "kubevirt_vmi_memory_available_bytes{{{selector}}}", "bytes"),
    Panel(
        "network: received",
        "rate(kubevirt_vmi_network_receive_bytes_total{{{selector}}}[1m])",
        "bytes/s",
        "interface",
    ),
    Panel(
        "network: sent",
        "rate(kubevirt_vmi_network_transmit_bytes_total{{{selector}}}[1m])",
        "bytes/s",
        "interface",
    ),
)


def selector(namespace: str, name: str) -> str:
    return f'namespace="{_quoted(namespace)}",name="{_quoted(name)}"'


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(BARS[0 if span == 0 else round((v - low) / span * (len(BARS) - 1))] for v in values)


def human(value: float, unit: str) -> str:
    if unit.startswith("bytes"):
        suffix = unit[len("bytes") :]
        for prefix in ("B", "KiB", "MiB", "GiB"):
            if abs(value) < 1024 or prefix == "GiB":
                return f"{value:.1f} {prefix}{suffix}"
            value /= 1024
    return f"{value:.3f} {unit}"


@dataclass(frozen=True)
class Row:
    title: str
    last: float
    low: float
    high: float
    line: str
    unit: str


def rows(prometheus: Prometheus, namespace: str, name: str, minutes: float, width: int = 40) -> list[Row]:
    """One row per series of each panel over the last ``minutes``, ``width`` points each."""
    end = time.time()
    start = end - minutes * 60
    step = max((end - start) / width, 1.0)
    found = []
    for panel in PANELS:
        series: list[Series] = prometheus.query_range(
            panel.expr.format(selector=selector(namespace, name)), start, end, step
        )
        for one in sorted(series, key=lambda s: s.labels.get(panel.series_label, "")):
            values = [v for _, v in one.points]
            if not values:
                continue
            which = one.labels.get(panel.series_label, "") if panel.series_label else ""
            title = f"{panel.title} [{panel.series_label} {which}]" if which else panel.title
            found.append(Row(title, values[-1], min(values), max(values), sparkline(values), panel.unit))
    return found


def render(rows_: list[Row], namespace: str, name: str, minutes: float) -> str:
    if not rows_:
        return f"no series for VMI {namespace}/{name} in the last {minutes:g} min (is it running?)"
    title_width = max(len(r.title) for r in rows_)
    lines = [f"VMI {namespace}/{name}, last {minutes:g} min"]
    lines.append(f"{'series':<{title_width}}  {'last':>14}  {'min':>14}  {'max':>14}  trend")
    for r in rows_:
        lines.append(
            f"{r.title:<{title_width}}  {human(r.last, r.unit):>14}  {human(r.low, r.unit):>14}  "
            f"{human(r.high, r.unit):>14}  {r.line}"
        )
    return "\n".join(lines)
