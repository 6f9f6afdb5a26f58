"""Fixtures of the guest-agent tests: agent commands reach the fake domain, and managers of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import libvirt_qemu
import pytest

from kubevirt.virt_launcher.virtwrap.agent import GuestAgent, PollIntervals
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.node import NodeFacts

from .harness import DOMAIN_NAME, FakeConn, FakeDomain


@pytest.fixture(autouse=True)
def route_agent_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    def send(dom: Any, cmd: str, timeout: int, flags: int) -> str:
        result: str = dom.qemuAgentCommand(cmd, timeout, flags)
        return result

    monkeypatch.setattr(libvirt_qemu, "qemuAgentCommand", send)


@pytest.fixture
def make_manager() -> Iterator[Callable[..., tuple[DomainManager, list[str]]]]:
    """A manager of a fake domain; it records each domain change it reports."""
    managers: list[DomainManager] = []

    def make(dom: FakeDomain, **intervals: float) -> tuple[DomainManager, list[str]]:
        changes: list[str] = []
        manager = DomainManager(
            FakeConn(dom),
            lambda *_: "",
            node=NodeFacts(),
            own_domain=DOMAIN_NAME,
            on_domain_change=lambda: changes.append("changed"),
        )
        if intervals:
            manager.agent = GuestAgent(
                manager.the_domain,
                on_change=lambda: changes.append("changed"),
                intervals=PollIntervals(**intervals),
                initial_interval=min(intervals.values()),
            )
        managers.append(manager)
        return manager, changes

    yield make
    for manager in managers:
        manager.close()
