"""Request bodies of the subresources (StartOptions, StopOptions, ...), read as KubeVirt reads them.

A body may be JSON or YAML and may be empty (every option is optional). Fields of the wrong type refuse
the request with 400 and the decoder's reason; unknown fields are ignored, as Go's decoder ignores them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from kubevirt.virt_api.rest.status import StatusError, bad_request

UNMARSHAL_ERROR = "Can not unmarshal Request body to struct, error: {}"

# The Go type of every option a body may carry, for the decoder's wording.
_BOOL, _INT, _STRINGS, _STRING_MAP = "bool", "int64", "[]string", "map[string]string"


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
    "StartOptions": {"paused": _BOOL, "dryRun": _STRINGS},
    "StopOptions": {"gracePeriod": _INT, "dryRun": _STRINGS},
    "RestartOptions": {"gracePeriodSeconds": _INT, "dryRun": _STRINGS},
    "MigrateOptions": {"addedNodeSelector": _STRING_MAP, "dryRun": _STRINGS},
    "PauseOptions": {"dryRun": _STRINGS},
    "UnpauseOptions": {"dryRun": _STRINGS},
}


def decode_options(kind: str, body: bytes) -> Options:
    """The ``kind`` options in ``body``; raises a 400 :class:`StatusError` when they cannot be read."""
    document = _parse(body)
    if document is None:
        return Options()
    if not isinstance(document, dict):
        raise _refuse(f"json: cannot unmarshal {_json_type(document)} into Go value of type v1.{kind}")
    values: dict[str, Any] = {}
    for name, go_type in _FIELDS[kind].items():
        value = document.get(name)
        if value is None:
            continue
        if not _fits(value, go_type):
            found = _json_type(value)
            raise _refuse(
                f"json: cannot unmarshal {found} into Go struct field {kind}.{name} of type {go_type}"
            )
        values[name] = value
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
        if text.startswith("{"):
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise _refuse(str(err).splitlines()[0]) from None


def _fits(value: Any, go_type: str) -> bool:
    if go_type == _BOOL:
        return isinstance(value, bool)
    if go_type == _INT:
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if go_type == _STRINGS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _refuse(reason: str) -> StatusError:
    return bad_request(UNMARSHAL_ERROR.format(reason))
