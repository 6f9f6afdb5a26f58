"""The QEMU guest agent, reached through libvirt: polled while connected, asked on virt-handler's behalf.

:class:`GuestAgent` is what the domain manager holds: its poller fills an :class:`AgentStore` whose
changes to the OS info, interfaces or freeze status become domain updates, and it runs the agent
commands (ping, exec, freeze and thaw) on worker threads with bounded waits.
"""

from kubevirt.virt_launcher.virtwrap.agent.errors import (
    AgentCallError,
    AgentError,
    AgentReplyError,
    AgentTimeoutError,
    ExecExitError,
    format_libvirt_error,
)
from kubevirt.virt_launcher.virtwrap.agent.guest_agent import (
    GUEST_AGENT_CHANNEL,
    GuestAgent,
    channel_connected,
)
from kubevirt.virt_launcher.virtwrap.agent.poller import PollIntervals
from kubevirt.virt_launcher.virtwrap.agent.store import AgentStore

__all__ = [
    "GUEST_AGENT_CHANNEL",
    "AgentCallError",
    "AgentError",
    "AgentReplyError",
    "AgentStore",
    "AgentTimeoutError",
    "ExecExitError",
    "GuestAgent",
    "PollIntervals",
    "channel_connected",
    "format_libvirt_error",
]
