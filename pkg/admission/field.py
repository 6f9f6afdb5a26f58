"""Field paths printed like Kubernetes' ``field.Path``: ``spec.domain.devices.disks[0].name``.

KubeVirt builds some paths oddly (``spec.domain.devices.disks.domain.devices.disks[0].io``); callers
reproduce those by composing paths the same odd way, so this class stays a faithful printer.
"""

from __future__ import annotations


class Path:
    """An immutable field path; :meth:`child` and :meth:`index` return new paths."""

    __slots__ = ("_text",)

    def __init__(self, *names: str) -> None:
        self._text = ".".join(names)

    @classmethod
    def _of(cls, text: str) -> Path:
        path = cls()
        path._text = text
        return path

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path._of(text)

    def index(self, i: int) -> Path:
        return Path._of(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path._of(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)
