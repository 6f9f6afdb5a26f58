"""KSM handling (KubeVirt's ``pkg/virt-handler/ksm``): label the node ``kubevirt.io/ksm-enabled`` and, on
nodes the cluster's ``ksmConfiguration.nodeLabelSelector`` selects, run KSM under memory pressure.

Every 3 minutes and on every configuration change: a node whose kernel has KSM and whose labels the
selector matches is eligible; there KSM is started when free memory falls below a share of the total and
its scan rate raised or lowered step by step (oVirt MOM's rules, tunable per node by annotations), and
stopped again once memory is free. KSM that virt-handler started is stopped when the node stops being
eligible (the ``kubevirt.io/ksm-handler-managed`` annotation remembers who started it). The host's
sysfs is reached through PID 1's root, as in KubeVirt (sysfs may be read-only in the container).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt.admission.selectors import SelectorError, matches
from kubevirt.client import NODES, KubeApi
from kubevirt.client.errors import ApiError, ConnectionFailedError
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import constants as c

KSM_DIR = Path("/proc/1/root/sys/kernel/mm/ksm")
MEMINFO = Path("/proc/meminfo")
PERIOD_SECONDS = 180.0


@dataclass(frozen=True)
class KsmState:
    running: bool
    sleep_ms: int = 0
    pages: int = 0


@dataclass(frozen=True)
class Tuning:
    pages_boost: int = 300
    pages_decay: int = -50
    pages_min: int = 64
    pages_max: int = 1250
    pages_init: int = 100
    sleep_ms_baseline: int = 100
    free_percent: float = 0.2


def _bounded(value: float, default: float, low: float, high: float) -> float:
    if low <= value <= high:
        return value
    return default if low < default < high else low


def tuning_from_annotations(annotations: Mapping[str, str]) -> Tuning:
    """The defaults, overridden by the node's ``kubevirt.io/ksm-*-override`` annotations within bounds."""
    log = get_logger()

    def read(key: str, default: float, low: float, high: float, kind: type = int) -> Any:
        raw = annotations.get(key)
        if raw is None:
            return default
        try:
            value = kind(raw)
        except ValueError:
            log.error("cannot parse a KSM override, using the default", annotation=key, value=raw)
            return default
        return kind(_bounded(value, default, low, high))

    boost = read(c.KSM_PAGES_BOOST_OVERRIDE, 300, 0, math.inf)
    decay = read(c.KSM_PAGES_DECAY_OVERRIDE, -50, -math.inf, 0)
    low = read(c.KSM_PAGES_MIN_OVERRIDE, 64, 0, math.inf)
    high = read(c.KSM_PAGES_MAX_OVERRIDE, 1250, low, math.inf)
    return Tuning(
        pages_boost=boost,
        pages_decay=decay,
        pages_min=low,
        pages_max=high,
        pages_init=read(c.KSM_PAGES_INIT_OVERRIDE, 100, low, high),
        sleep_ms_baseline=read(c.KSM_SLEEP_MS_BASELINE_OVERRIDE, 100, 1, math.inf),
        free_percent=read(c.KSM_FREE_PERCENT_OVERRIDE, 0.2, 0, 1, float),
    )


def next_state(tuning: Tuning, *, running: bool, total_kb: int, available_kb: int, pages: int) -> KsmState:
    """KSM's next run/sleep/pages (oVirt MOM's ksm.rules, as KubeVirt applies them)."""
    used = max(1, total_kb - available_kb)
    sleep = max(tuning.sleep_ms_baseline * 16 * 1024 * 1024 // used, tuning.sleep_ms_baseline // 10)
    if available_kb > total_kb * tuning.free_percent:  # no pressure: slow down, then stop
        if not running:
            return KsmState(running=False)
        pages += tuning.pages_decay
        if pages < tuning.pages_min:
            return KsmState(running=False, sleep_ms=sleep, pages=tuning.pages_min)
        return KsmState(running=True, sleep_ms=sleep, pages=pages)
    if running:
        return KsmState(running=True, sleep_ms=sleep, pages=min(pages + tuning.pages_boost, tuning.pages_max))
    return KsmState(running=True, sleep_ms=sleep, pages=tuning.pages_init)


def read_meminfo(path: Path = MEMINFO) -> tuple[int, int]:
    """``MemTotal`` and ``MemAvailable`` in KiB."""
    values: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            values[key] = int(rest.split()[0])
    if len(values) != 2:
        raise ValueError(f"{path}: no MemTotal and MemAvailable")
    return values["MemTotal"], values["MemAvailable"]


class KsmHandler:
    def __init__(
        self,
        *,
        api: KubeApi,
        node: str,
        config: Callable[[], ClusterConfig],
        ksm_dir: Path = KSM_DIR,
        meminfo: Path = MEMINFO,
    ) -> None:
        self._api = api
        self._node = node
        self._config = config
        self._dir = ksm_dir
        self._meminfo = meminfo
        self._changed = threading.Event()
        self._log = get_logger()

    def _ksm_run(self) -> bool | None:
        """Whether KSM runs; None when this kernel has no KSM."""
        try:
            return (self._dir / "run").read_text().strip() == "1"
        except OSError:
            return None

    def _eligible(self, labels: Mapping[str, str]) -> bool:
        try:
            selector = self._config().ksm_node_label_selector
            return matches(dict(selector) if selector is not None else None, labels)
        except SelectorError as err:
            self._log.error("the KSM node selector is invalid", reason=str(err))
            return False

    def spin(self) -> bool:
        """One round; returns whether the node is eligible for KSM handling."""
        running = self._ksm_run()
        node = self._api.get(NODES, None, self._node)
        metadata = node.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        eligible = running is not None and self._eligible(metadata.get("labels") or {})
        started_by_us = False
        if running and not eligible and annotations.get(c.KSM_HANDLER_MANAGED_ANNOTATION) == "true":
            self._write({"run": "0"})
        if eligible:
            started_by_us = self._tune(bool(running), annotations)
        patch = {
            "metadata": {
                "labels": {c.KSM_ENABLED_LABEL: str(eligible).lower()},
                "annotations": {c.KSM_HANDLER_MANAGED_ANNOTATION: str(started_by_us).lower()},
            }
        }
        self._api.patch(NODES, None, self._node, patch, patch_type="merge")
        return eligible

    def _tune(self, running: bool, annotations: Mapping[str, str]) -> bool:
        try:
            total, available = read_meminfo(self._meminfo)
            pages = int((self._dir / "pages_to_scan").read_text().strip())
        except (OSError, ValueError) as err:
            self._log.error("cannot read the memory or KSM state", reason=str(err))
            return False
        state = next_state(
            tuning_from_annotations(annotations),
            running=running,
            total_kb=total,
            available_kb=available,
            pages=pages,
        )
        values = {"run": "1" if state.running else "0"}
        if state.running:
            values = {"sleep_millisecs": str(state.sleep_ms), "pages_to_scan": str(state.pages), **values}
        return self._write(values) and state.running

    def _write(self, values: Mapping[str, str]) -> bool:
        try:
            for name, value in values.items():  # run last: KSM starts with the new rate
                (self._dir / name).write_text(value)
        except OSError as err:
            self._log.error("cannot write the KSM settings", reason=str(err))
            return False
        return True

    def config_changed(self) -> None:
        self._changed.set()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._changed.clear()
            try:
                self.spin()
            except (ApiError, ConnectionFailedError) as err:
                self._log.error("cannot update the node's KSM label", reason=str(err))
            deadline = time.monotonic() + PERIOD_SECONDS
            while not (stop.is_set() or self._changed.is_set()) and time.monotonic() < deadline:
                self._changed.wait(1.0)
