"""Failures of guest-agent calls, worded as KubeVirt's launcher words them.

KubeVirt reports a libvirt error two ways: most commands answer ``FormatLibvirtError``'s
``LibvirtError(...)`` (:func:`format_libvirt_error`), while Exec and GuestPing answer the Go error's own
text, ``virError(...)`` (:attr:`AgentCallError.go_message`).
"""

from __future__ import annotations

import libvirt

from kubevirt.virt_launcher.virtwrap.errors import ManagerError


def format_libvirt_error(err: libvirt.libvirtError) -> str:
    """KubeVirt's ``FormatLibvirtError``."""
    return (
        f"LibvirtError(Code={err.get_error_code() or 0}, Domain={err.get_error_domain() or 0}, "
        f"Message='{err.get_error_message()}')"
    )


def go_libvirt_error(err: libvirt.libvirtError) -> str:
    """What the Go binding's ``libvirt.Error`` prints."""
    return (
        f"virError(Code={err.get_error_code() or 0}, Domain={err.get_error_domain() or 0}, "
        f"Message='{err.get_error_message()}')"
    )


class AgentError(ManagerError):
    """A guest-agent call failed; the message is what the caller sees."""

    @property
    def go_message(self) -> str:
        """The text KubeVirt's Exec and GuestPing answer for this failure."""
        return str(self)


class AgentCallError(AgentError):
    """libvirt refused the call (no agent connected, the agent answered an error, no such domain...)."""

    def __init__(self, err: libvirt.libvirtError) -> None:
        super().__init__(format_libvirt_error(err))
        self.libvirt_error = err
        self.code = err.get_error_code()

    @property
    def go_message(self) -> str:
        return go_libvirt_error(self.libvirt_error)


class AgentTimeoutError(AgentError):
    """The call did not come back in time (it is abandoned to its worker thread)."""


class AgentReplyError(AgentError):
    """The agent (or libvirt on its behalf) answered something that is not the expected reply."""


class ExecExitError(AgentError):
    """A command run by guest-exec exited non-zero; KubeVirt reports this as a successful call."""

    def __init__(self, exit_code: int, stdout: str) -> None:
        super().__init__(f"exited with error code:{exit_code}")
        self.exit_code = exit_code
        self.stdout = stdout
