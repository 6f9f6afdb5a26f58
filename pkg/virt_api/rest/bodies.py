"""Request bodies of the subresources (StartOptions, StopOptions, ...), read as KubeVirt reads them.

A body may be JSON or YAML and may be empty (every option is optional). Fields of the wrong type refuse
the request with 400 and the decoder's reason; unknown fields are ignored, as Go's decoder ignores them.

Bodies are bounded before they are parsed: at most :data:`MAX_BODY_BYTES`, nested at most
:data:`~kubevirt.input_limits.MAX_NESTING_DEPTH` levels. JSON goes to the json module; only other
bodies reach the YAML parser (libyaml's when installed). Whatever a body holds, the answer is options or a
400, never a parser's exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from kubevirt.input_limits import MAX_NESTING_DEPTH, load_json
from kubevirt.virt_api.rest.status import StatusError, bad_request

UNMARSHAL_ERROR = "Can not unmarshal Request body to struct, error: {}"
# The largest options KubeVirt takes in a body is AddVolumeOptions (a disk and a volume source, a few
# hundred bytes); MigrateOptions' addedNodeSelector holds node labels (at most 317 + 63 bytes a pair).
# 64 KiB holds a hundred full-length labels with room to spare, and parses in milliseconds.
MAX_BODY_BYTES: Final = 64 * 1024

# The Go type of every option a body may carry, for the decoder's wording.
BOOL, INT, STRINGS, STRING_MAP = "bool", "int64", "[]string", "map[string]string"
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENING_EVENTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSING_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


@dataclass(frozen=True)
class Options:
    """The options one request carried; absent fields are None."""

    dry_run: list[str] = field(default_factory=list)
    paused: bool = False
    grace_period: int | None = None
    added_node_selector: dict[str, str] | None = None

    @property
    def is_dry_run(self) -> bool:
        return bool(self.dry_run)


_FIELDS: dict[str, dict[str, str]] = {
    "StartOptions": {"paused": BOOL, "dryRun": STRINGS},
    "StopOptions": {"gracePeriod": INT, "dryRun": STRINGS},
    "RestartOptions": {"gracePeriodSeconds": INT, "dryRun": STRINGS},
    "MigrateOptions": {"addedNodeSelector": STRING_MAP, "dryRun": STRINGS},
    "PauseOptions": {"dryRun": STRINGS},
    "UnpauseOptions": {"dryRun": STRINGS},
}


def too_large() -> StatusError:
    """The refusal of a body above :data:`MAX_BODY_BYTES`."""
    return refuse(f"request body is larger than {MAX_BODY_BYTES} bytes")


def parse_body(body: bytes) -> Any:
    """The document a bounded body holds (None when it is empty); a 400 when it cannot be read."""
    if len(body) > MAX_BODY_BYTES:
        raise too_large()
    return _parse(body)


def decode_options(kind: str, body: bytes) -> Options:
    """The ``kind`` options in ``body``; raises a 400 :class:`StatusError` when they cannot be read."""
    document = parse_body(body)
    if document is None:
        return Options()
    if not isinstance(document, dict):
        raise not_an_object(kind, document)
    values: dict[str, Any] = {}
    for name, go_type in _FIELDS[kind].items():
        value = document.get(name)
        if value is None:
            continue
        if not fits(value, go_type):
            raise type_mismatch(kind, name, value, go_type)
        values[name] = value
    # YAML aliases can repeat one string many times; what is kept must stay as small as a body.
    if kept_size(values) > MAX_BODY_BYTES:
        raise expanded_too_far()
    grace = values.get("gracePeriod", values.get("gracePeriodSeconds"))
    return Options(
        dry_run=list(values.get("dryRun") or []),
        paused=bool(values.get("paused", False)),
        grace_period=int(grace) if grace is not None else None,
        added_node_selector=values.get("addedNodeSelector"),
    )


def _parse(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        if text.startswith("{"):  # as Go's YAMLOrJSONDecoder tells JSON from YAML
            return load_json(text, "request body")
        _check_yaml_nesting(text)
        return yaml.load(text, Loader=_YAML_LOADER)
    except (ValueError, yaml.YAMLError) as err:  # ValueError: the JSON reason or a limit
        raise refuse(_first_line(err)) from None
    except RecursionError:  # the pure-Python YAML parser, should libyaml be missing
        raise refuse(f"request body is nested deeper than {MAX_NESTING_DEPTH} levels") from None


def _first_line(err: Exception) -> str:
    lines = str(err).splitlines()
    return lines[0] if lines else type(err).__name__


def _check_yaml_nesting(text: str) -> None:
    """Refuses YAML nested deeper than the limit, from the parser's events (no document is built)."""
    depth = 0
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, _OPENING_EVENTS):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise ValueError(f"request body is nested deeper than {MAX_NESTING_DEPTH} levels")
        elif isinstance(event, _CLOSING_EVENTS):
            depth -= 1


def type_mismatch(kind: str, field_name: str, value: Any, go_type: str) -> StatusError:
    """Go's decoder on a field of the wrong JSON type."""
    found, where = json_type(value), f"{kind}.{field_name}"
    return refuse(f"json: cannot unmarshal {found} into Go struct field {where} of type {go_type}")


def not_an_object(kind: str, document: Any) -> StatusError:
    """Go's decoder on a body that is not a JSON object."""
    return refuse(f"json: cannot unmarshal {json_type(document)} into Go value of type v1.{kind}")


def expanded_too_far() -> StatusError:
    """YAML aliases made what a body holds larger than the body may be."""
    return refuse(f"options expand beyond {MAX_BODY_BYTES} bytes")


def kept_size(values: dict[str, Any]) -> int:
    size = 0
    for value in values.values():
        if isinstance(value, list):
            size += sum(len(item) for item in value)
        elif isinstance(value, dict):
            size += sum(len(str(key)) + len(item) for key, item in value.items())
    return size


def fits(value: Any, go_type: str) -> bool:
    if go_type == BOOL:
        return isinstance(value, bool)
    if go_type == INT:
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if go_type == STRINGS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def refuse(reason: str) -> StatusError:
    """A body that cannot be read into its options, worded as KubeVirt words it."""
    return bad_request(UNMARSHAL_ERROR.format(reason))
