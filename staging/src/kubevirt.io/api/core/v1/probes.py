"""Liveness and readiness probes of a VMI."""

from __future__ import annotations

from pydantic import Field

from kubevirt_api.base import ApiModel, Int32
from kubevirt_api.k8s import core_v1

__all__ = [
    "GuestAgentPing",
    "Handler",
    "Probe",
]


class GuestAgentPing(ApiModel):
    pass


class Handler(ApiModel):
    exec: core_v1.ExecAction | None = None
    guest_agent_ping: GuestAgentPing | None = Field(default=None, alias="guestAgentPing")
    http_get: core_v1.HTTPGetAction | None = Field(default=None, alias="httpGet")
    tcp_socket: core_v1.TCPSocketAction | None = Field(default=None, alias="tcpSocket")


class Probe(Handler):
    initial_delay_seconds: Int32 | None = Field(default=None, alias="initialDelaySeconds")
    timeout_seconds: Int32 | None = Field(default=None, alias="timeoutSeconds")
    period_seconds: Int32 | None = Field(default=None, alias="periodSeconds")
    success_threshold: Int32 | None = Field(default=None, alias="successThreshold")
    failure_threshold: Int32 | None = Field(default=None, alias="failureThreshold")
