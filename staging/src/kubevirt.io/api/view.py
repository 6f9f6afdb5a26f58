"""Light, typed readings of decoded API objects: the cheap processes' alternative to the pydantic models.

A :class:`View` wraps one JSON object (as ``json.loads`` returns it) with its field path. Each accessor
checks the one value it reads and names it in the error (``spec.volumes[1].name: must be a string``), so
a reader never indexes raw JSON and never needs the full model: building the typed VMI costs tens of
milliseconds and megabytes that the long-lived launcher and virt-handler do without. Absent and ``null``
read as the zero value (Go's omitted field); a present value of the wrong type is an error. The error type
is the caller's (each component reports bad input in its own terms), and children inherit it.

:class:`VMIView` adds the VMI's well-known fields; build it once per request and hand it on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["JSON", "FieldError", "VMIView", "View"]

JSON = dict[str, Any]  # a decoded JSON object, as json.loads returns it


class FieldError(ValueError):
    """A value of the object is not what the API allows; the message starts with its field path."""

    @property
    def path(self) -> str:
        return str(self).partition(": ")[0]

    @property
    def reason(self) -> str:
        return str(self).partition(": ")[2]


ErrorType = Callable[[str], Exception]
_EMPTY: Final[Mapping[str, Any]] = {}


class View:
    """One JSON object and where it sits in its document."""

    __slots__ = ("_error", "data", "path")

    def __init__(self, data: Mapping[str, Any], path: str = "", *, error: ErrorType = FieldError) -> None:
        self.data = data
        self.path = path
        self._error = error

    @classmethod
    def of(cls, value: Any, path: str = "", *, error: ErrorType = FieldError) -> View:
        """A view of ``value``, which must be an object (``None`` reads as an empty one)."""
        if value is None:
            return cls(_EMPTY, path, error=error)
        if not isinstance(value, Mapping):
            raise error(f"{path or 'value'}: must be an object")
        return cls(value, path, error=error)

    def reporting(self, error: ErrorType) -> View:
        """The same object, its errors raised as ``error``."""
        return type(self)(self.data, self.path, error=error)

    # -- paths and failures ----------------------------------------------------------------------

    def at(self, key: str) -> str:
        """The field path of ``key`` in this object."""
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, reason: str) -> Exception:
        """The caller's error for the field ``key`` (to raise)."""
        return self._error(f"{self.at(key)}: {reason}")

    # -- plain access ----------------------------------------------------------------------------

    def __bool__(self) -> bool:
        return bool(self.data)

    def __contains__(self, key: str) -> bool:
        return self.data.get(key) is not None

    def has(self, key: str) -> bool:
        """Whether ``key`` is set: present and not null, like a non-nil Go pointer."""
        return self.data.get(key) is not None

    def get(self, key: str) -> Any:
        """The raw value at ``key`` (for values of more than one type)."""
        return self.data.get(key)

    # -- typed access ----------------------------------------------------------------------------

    def object(self, key: str) -> View:
        """The object at ``key``; an empty one when absent."""
        value = self.data.get(key)
        if value is None:
            return View(_EMPTY, self.at(key), error=self._error)
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be an object")
        return View(value, self.at(key), error=self._error)

    def optional_object(self, key: str) -> View | None:
        """The object at ``key``, or None when absent (a nil pointer)."""
        return self.object(key) if self.has(key) else None

    def items(self, key: str) -> list[View]:
        """The objects of the list at ``key`` (none when absent), each with its ``key[i]`` path."""
        value = self._list(key)
        field = self.at(key)
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self._error(f"{field}[{index}]: must be an object")
            out.append(View(item, f"{field}[{index}]", error=self._error))
        return out

    def string(self, key: str, *, required: bool = False, default: str = "") -> str:
        value = self.data.get(key)
        if value is None or value == "":
            if required:
                raise self.fail(key, "required")
            return default
        if not isinstance(value, str):
            raise self.fail(key, "must be a string")
        return value

    def optional_string(self, key: str) -> str | None:
        return self.string(key) if self.has(key) else None

    def strings(self, key: str) -> list[str]:
        """The list of strings at ``key`` (none when absent)."""
        value = self._list(key)
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self._error(f"{self.at(key)}[{index}]: must be a string")
        return list(value)

    def string_map(self, key: str) -> dict[str, str]:
        """The string-to-string object at ``key`` (labels, annotations, node selectors)."""
        mapping = self.object(key)
        for name, value in mapping.data.items():
            if not isinstance(value, str):
                raise mapping.fail(name, "must be a string")
        return dict(mapping.data)

    def integer(
        self, key: str, *, default: int = 0, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON has one number type: 2.0 is the integer Go reads
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"must be an integer, got {str(value)[:80]!r}")
        if minimum is not None and value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.fail(key, f"must be at most {maximum}, got {value}")
        return value

    def boolean(self, key: str, *, default: bool = False) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def optional_boolean(self, key: str) -> bool | None:
        return self.boolean(key) if self.has(key) else None

    def _list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return value


class VMIView(View):
    """A VirtualMachineInstance's JSON, with its well-known fields by name."""

    __slots__ = ()

    @classmethod
    def of(cls, value: Any, path: str = "", *, error: ErrorType = FieldError) -> VMIView:
        view = View.of(value, path, error=error)
        return cls(view.data, view.path, error=error)

    @property
    def metadata(self) -> View:
        return self.object("metadata")

    @property
    def spec(self) -> View:
        return self.object("spec")

    @property
    def status(self) -> View:
        return self.object("status")

    @property
    def name(self) -> str:
        return self.metadata.string("name", required=True)

    @property
    def namespace(self) -> str:
        return self.metadata.string("namespace", default="default")

    @property
    def uid(self) -> str:
        return self.metadata.string("uid")

    @property
    def annotations(self) -> dict[str, str]:
        return self.metadata.string_map("annotations")

    @property
    def phase(self) -> str:
        return self.status.string("phase")

    @property
    def devices(self) -> View:
        return self.spec.object("domain").object("devices")

    def disks(self) -> list[View]:
        return self.devices.items("disks")

    def interfaces(self) -> list[View]:
        return self.devices.items("interfaces")

    def networks(self) -> list[View]:
        return self.spec.items("networks")

    def volumes(self) -> list[View]:
        return self.spec.items("volumes")

    def volume_sources(self, kind: str) -> Iterator[tuple[int, View, View]]:
        """Each volume with a ``kind`` source (``containerDisk``, ``persistentVolumeClaim``…): its index in
        ``spec.volumes``, the volume and the source."""
        for index, volume in enumerate(self.volumes()):
            if volume.has(kind):
                yield index, volume, volume.object(kind)

    def volume_statuses(self) -> list[View]:
        return self.status.items("volumeStatus")
