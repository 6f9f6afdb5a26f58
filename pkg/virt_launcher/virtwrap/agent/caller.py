"""Guest-agent calls through libvirt, each on a worker thread and bounded in time.

An agent is a program in the guest: it may be slow, hung or gone. Every call goes to a small pool of
worker threads and its caller waits at most a bounded time; a call that does not come back is
abandoned to its worker (libvirt ends it at its timeout), so neither the command server nor the poller
nor the event forwarder ever waits on a guest. Agent commands are sent as KubeVirt sends them, with
``libvirt_qemu.qemuAgentCommand``, but always with an explicit timeout; libvirt's other agent calls
(guest info, freeze, thaw, reboot) take none, and block by default: the launcher sets the domain's agent
response timeout (:data:`AGENT_RESPONSE_TIMEOUT`) when the agent connects. A call made under a ``key``
is refused while the previous one under it is still out, so a hung agent cannot tie up every worker.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import libvirt
import libvirt_qemu

from kubevirt.virt_launcher.virtwrap.agent.errors import (
    AgentCallError,
    AgentError,
    AgentReplyError,
    AgentTimeoutError,
)

T = TypeVar("T")

# Seconds libvirt waits for the agent's answer to one command.
COMMAND_TIMEOUT = 10
# Seconds libvirt waits for the agent in the calls that take no timeout (set on the domain).
AGENT_RESPONSE_TIMEOUT = 30
# How much longer than libvirt's own timeout a caller waits before giving up on the worker.
WAIT_MARGIN = 5.0
# Threads start as calls need them: one per poll task at most, the rest for virt-handler's commands.
WORKERS = 8


class AgentCaller:
    def __init__(self, *, workers: int = WORKERS, wait_margin: float = WAIT_MARGIN) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="guest-agent")
        self._margin = wait_margin
        self._lock = threading.Lock()
        self._out: set[str] = set()  # the keys of calls not returned yet

    def run(self, what: str, call: Callable[[], T], *, wait: float, key: str = "") -> T:
        """``call()`` on a worker; its libvirt error as :class:`AgentCallError`, and
        :class:`AgentTimeoutError` when it has not returned after ``wait`` seconds (or, with a ``key``,
        when the previous call under that key has not returned yet)."""
        with self._lock:
            if key in self._out:
                raise AgentTimeoutError(f"{what}: the previous call is still waiting for the guest agent")
            try:
                future = self._pool.submit(contextvars.copy_context().run, call)
            except RuntimeError:  # the pool was shut down
                raise AgentError(f"{what}: the launcher is shutting down") from None
            if key:
                self._out.add(key)
        if key:
            future.add_done_callback(lambda _: self._returned(key))
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            future.cancel()  # one still queued behind hung calls never runs
            raise AgentTimeoutError(f"{what}: no answer from the guest agent within {wait:g}s") from None
        except libvirt.libvirtError as err:
            raise AgentCallError(err) from err

    def _returned(self, key: str) -> None:
        with self._lock:
            self._out.discard(key)

    def command(
        self,
        dom: libvirt.virDomain,
        execute: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: int = COMMAND_TIMEOUT,
        key: str = "",
    ) -> str:
        """Send one agent command; the agent's reply as libvirt passes it on (for :mod:`.parsers`)."""
        request: dict[str, Any] = {"execute": execute}
        if arguments is not None:
            request["arguments"] = arguments
        text = json.dumps(request)
        seconds = max(1, int(timeout))
        reply = self.run(
            execute,
            lambda: libvirt_qemu.qemuAgentCommand(dom, text, seconds, 0),
            wait=seconds + self._margin,
            key=key,
        )
        if not isinstance(reply, str):
            raise AgentReplyError(f"{execute}: libvirt passed on no reply from the guest agent")
        return reply

    def close(self) -> None:
        """Stop taking calls; hung workers are left to libvirt's timeouts."""
        self._pool.shutdown(wait=False, cancel_futures=True)
