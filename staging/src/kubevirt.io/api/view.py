"""Light, typed readings of decoded API objects: the cheap processes' alternative to the pydantic models.

A :class:`View` wraps one JSON object (as ``json.loads`` returns it) with its field path. Each accessor
checks the one value it reads and names it in the error (``spec.volumes[1].name: must be a string``), so
a reader never indexes raw JSON and never needs the full model: building the typed VMI costs tens of
milliseconds and megabytes that the long-lived launcher and virt-handler do without. Absent and ``null``
read as the zero value (Go's omitted field); a present value of the wrong type is an error. The error type
is the caller's (each component reports bad input in its own terms), and children inherit it. What counts
as a value of each JSON type, as Go decodes it (an integral float is an integer, a bool is no number), is
decided once, by the ``as_*`` functions, which admission's zero-value readers share.

:class:`VMIView` adds the VMI's well-known fields; build it once per request and hand it on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "JSON",
    "FieldError",
    "VMIView",
    "View",
    "as_boolean",
    "as_integer",
    "as_list",
    "as_object",
    "as_string",
]

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
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})  # an absent object: never to be filled in


def as_object(value: Any) -> Mapping[str, Any] | None:
    """``value`` as a JSON object, or None when it is not one."""
    return value if isinstance(value, Mapping) else None


def as_list(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def as_string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def as_integer(value: Any) -> int | None:
    """``value`` as the integer Go reads (JSON has one number type: 2.0 is 2), or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class View:
    """One JSON object and where it sits in its document."""

    # The path is worked out only when asked for (an error, a caller naming a field): most reads never
    # need it.
    __slots__ = ("_error", "_parent", "_step", "data")

    def __init__(self, data: Mapping[str, Any], path: str = "", *, error: ErrorType = FieldError) -> None:
        self.data = data
        self._parent: View | None = None
        self._step: str | tuple[str, int] = path
        self._error = error

    @classmethod
    def of(cls, value: Any, path: str = "", *, error: ErrorType = FieldError) -> View:
        """A view of ``value``, which must be an object (``None`` reads as an empty one)."""
        if value is None:
            return cls(_EMPTY, path, error=error)
        found = as_object(value)
        if found is None:
            raise error(f"{path or 'value'}: must be an object")
        return cls(found, path, error=error)

    def reporting(self, error: ErrorType) -> View:
        """The same object, its errors raised as ``error``."""
        return type(self)(self.data, self.path, error=error)

    @property
    def path(self) -> str:
        """Where this object sits in its document (``spec.volumes[1]``; empty for the document)."""
        step = self._step
        if self._parent is None:
            return step if isinstance(step, str) else ""
        if isinstance(step, tuple):
            return f"{self._parent.at(step[0])}[{step[1]}]"
        return self._parent.at(step)

    # -- paths and failures ----------------------------------------------------------------------

    def at(self, key: str) -> str:
        """The field path of ``key`` in this object."""
        path = self.path
        return f"{path}.{key}" if path else key

    def fail(self, key: str, reason: str) -> Exception:
        """The caller's error for the field ``key`` (to raise)."""
        return self._error(f"{self.at(key)}: {reason}")

    def _child(self, data: Mapping[str, Any], step: str | tuple[str, int]) -> View:
        child = View.__new__(View)
        child.data = data
        child._parent = self
        child._step = step
        child._error = self._error
        return child

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

    # -- typed access: absent or null reads as the zero value, a wrong type raises ----------------

    def object(self, key: str) -> View:
        """The object at ``key``; an empty one when absent."""
        found = self.optional_object(key)
        return found if found is not None else self._child(_EMPTY, key)

    def optional_object(self, key: str) -> View | None:
        """The object at ``key``, or None when absent (a nil pointer)."""
        value = self.data.get(key)
        if value is None:
            return None
        found = as_object(value)
        if found is None:
            raise self.fail(key, "must be an object")
        return self._child(found, key)

    def items(self, key: str) -> list[View]:
        """The objects of the list at ``key`` (none when absent), each with its ``key[i]`` path."""
        out = []
        for index, item in enumerate(self._list(key)):
            found = as_object(item)
            if found is None:
                raise self._error(f"{self.at(key)}[{index}]: must be an object")
            out.append(self._child(found, (key, index)))
        return out

    def string(self, key: str, *, required: bool = False, default: str = "") -> str:
        found = self.optional_string(key)
        if found:
            return found
        if required:
            raise self.fail(key, "required")
        return default

    def optional_string(self, key: str) -> str | None:
        """The string at ``key`` (possibly empty), or None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        found = as_string(value)
        if found is None:
            raise self.fail(key, "must be a string")
        return found

    def strings(self, key: str) -> list[str]:
        """The list of strings at ``key`` (none when absent)."""
        out = []
        for index, item in enumerate(self._list(key)):
            found = as_string(item)
            if found is None:
                raise self._error(f"{self.at(key)}[{index}]: must be a string")
            out.append(found)
        return out

    def string_map(self, key: str) -> dict[str, str]:
        """The string-to-string object at ``key`` (labels, annotations, node selectors)."""
        mapping = self.object(key)
        for name, value in mapping.data.items():
            if as_string(value) is None:
                raise mapping.fail(name, "must be a string")
        return dict(mapping.data)

    def integer(
        self, key: str, *, default: int = 0, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        found = as_integer(value)
        if found is None:
            raise self.fail(key, f"must be an integer, got {str(value)[:80]!r}")
        if minimum is not None and found < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {found}")
        if maximum is not None and found > maximum:
            raise self.fail(key, f"must be at most {maximum}, got {found}")
        return found

    def boolean(self, key: str, *, default: bool = False) -> bool:
        found = self.optional_boolean(key)
        return default if found is None else found

    def optional_boolean(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None:
            return None
        found = as_boolean(value)
        if found is None:
            raise self.fail(key, "must be true or false")
        return found

    def _list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        found = as_list(value)
        if found is None:
            raise self.fail(key, "must be a list")
        return found


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
