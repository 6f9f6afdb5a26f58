"""Small elements many devices share: aliases, addresses, boot order, models."""

from __future__ import annotations

from typing import Any

from .xmlmodel import XMLElement, attr, element

USER_ALIAS_PREFIX = "ua-"


@element("alias")
class Alias(XMLElement):
    name: str | None = attr()

    @classmethod
    def user_defined(cls, name: str) -> Alias:
        """The alias KubeVirt gives a device named by the user (``ua-<name>``)."""
        return cls(name=USER_ALIAS_PREFIX + name)

    def _go_json(self) -> dict[str, Any]:
        # KubeVirt's Alias marshals itself: the name without the user prefix, and whether it had one.
        name = self.name or ""
        if name.startswith(USER_ALIAS_PREFIX):
            return {"Name": name[len(USER_ALIAS_PREFIX) :], "UserDefined": True}
        return {"Name": name, "UserDefined": False}


@element("address")
class Address(XMLElement):
    type: str | None = attr()
    domain: str | None = attr()
    bus: str | None = attr()
    slot: str | None = attr()
    function: str | None = attr()
    controller: str | None = attr()
    target: str | None = attr()
    unit: str | None = attr()
    uuid: str | None = attr(go="UUID")
    device: str | None = attr()
    cssid: str | None = attr(go="CSSID")
    ssid: str | None = attr(go="SSID")
    devno: str | None = attr(go="DevNo")


@element("boot")
class BootOrder(XMLElement):
    order: int | None = attr(as_type=int)


@element("model")
class Model(XMLElement):
    type: str | None = attr()
