"""Failures of a domain-manager command; the command server turns each into ``success=false`` + message."""

from __future__ import annotations


class ManagerError(Exception):
    """A command could not be carried out; the message is what the caller sees."""


class InvalidRequestError(ManagerError):
    """The request itself is unusable (malformed VMI, bad options, a VMI the converter rejects)."""


class DomainNotFoundError(ManagerError):
    def __init__(self, domain_name: str = "") -> None:
        super().__init__("Domain not found." if not domain_name else f"Domain {domain_name} not found.")
        self.domain_name = domain_name


class WrongStateError(ManagerError):
    """The domain is not in a state that allows the command."""


class LibvirtCallError(ManagerError):
    """libvirt refused an operation."""


class StoragePreparationError(ManagerError):
    """A volume's file could not be made ready in the pod; the message names the VMI field at fault."""
