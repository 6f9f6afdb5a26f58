"""``<qemu:commandline>``: extra QEMU arguments and environment."""

from __future__ import annotations

from .xmlmodel import QEMU_NS, XMLElement, attr, children, element


@element("qemu:env")
class QEMUEnv(XMLElement):
    name: str | None = attr()
    value: str | None = attr()


@element("qemu:arg")
class QEMUArg(XMLElement):
    value: str | None = attr()


@element("qemu:commandline", namespace=QEMU_NS)
class Commandline(XMLElement):
    env: list[QEMUEnv] = children(QEMUEnv, go="QEMUEnv")
    args: list[QEMUArg] = children(QEMUArg, go="QEMUArg")
