"""An UploadTokenRequest body decoded as CDI's server decodes it (Go's ``encoding/json`` into the typed
struct), and the answer: the same object, re-encoded, with ``status.token`` filled in.

Go's decoder matches field names case-insensitively, lets later keys win, takes ``null`` as "leave it
unset", drops unknown fields, and refuses a value of the wrong JSON type with a message naming the Go
field. The messages below follow Go's wording for the cases a client can send; syntax errors are worded
like Go's for the common cases (empty or cut-off bodies, a stray character).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt_api.base import ApiParseError
from kubevirt_api.gojson import to_go_json
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.view import JSON

_GO_TYPE = "v1beta1.UploadTokenRequest"
_KINDS = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


class DecodeError(ValueError):
    """The body is not an UploadTokenRequest; the message is the 400's body."""


@dataclass(frozen=True)
class UploadTokenRequest:
    """The fields Go's struct keeps; ``metadata`` as Go would write it back."""

    kind: str = ""
    api_version: str = ""
    metadata: JSON = field(default_factory=lambda: {"creationTimestamp": None})
    pvc_name: str = ""
    token: str = ""

    def to_json(self) -> JSON:
        document: JSON = {}
        # TypeMeta's fields are omitempty; metadata, spec and status (a struct) are always written.
        if self.kind:
            document["kind"] = self.kind
        if self.api_version:
            document["apiVersion"] = self.api_version
        document["metadata"] = self.metadata
        document["spec"] = {"pvcName": self.pvc_name}
        document["status"] = {"token": self.token} if self.token else {}
        return document


def decode(body: bytes) -> UploadTokenRequest:
    """Raises :class:`DecodeError` with Go's message where Go's decoder fails."""
    document = _parse(body)
    if document is None:
        return UploadTokenRequest()
    if not isinstance(document, dict):
        raise DecodeError(f"json: cannot unmarshal {_kind(document)} into Go value of type {_GO_TYPE}")
    fields = _fold(document, ("kind", "apiVersion", "metadata", "spec", "status"))
    spec = _struct(fields.get("spec"), "spec", "UploadTokenRequestSpec")
    status = _struct(fields.get("status"), "status", "UploadTokenRequestStatus")
    return UploadTokenRequest(
        kind=_string(fields.get("kind"), "kind"),
        api_version=_string(fields.get("apiVersion"), "apiVersion"),
        metadata=_metadata(fields.get("metadata")),
        pvc_name=_string(_fold(spec, ("pvcName",)).get("pvcName"), "spec.pvcName"),
        token=_string(_fold(status, ("token",)).get("token"), "status.token"),
    )


def answer(
    request: UploadTokenRequest,
    namespace: str,
    signing_key: rsa.RSAPrivateKey,
    *,
    now: Callable[[], float] | None = None,
) -> JSON:
    """The request with a token for uploading to its claim in ``namespace`` (the path's namespace, not
    the body's): five minutes long, issued by ``cdi-apiserver``."""
    minted = token.generate(
        token.upload_payload(namespace, request.pvc_name), signing_key, now=None if now is None else now()
    )
    return UploadTokenRequest(
        kind=request.kind,
        api_version=request.api_version,
        metadata=request.metadata,
        pvc_name=request.pvc_name,
        token=minted,
    ).to_json()


def _reject_constant(name: str) -> Any:
    raise DecodeError(f"invalid character '{name[0]}' looking for beginning of value")


def _parse(body: bytes) -> Any:
    # Go reads invalid UTF-8 inside strings as U+FFFD rather than failing.
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise DecodeError(_syntax_message(text, err)) from None


def _syntax_message(text: str, err: json.JSONDecodeError) -> str:
    if not text[err.pos :].strip() or err.msg.startswith("Unterminated string"):
        return "unexpected end of JSON input"
    reason = next((r for r in _SYNTAX_CONTEXTS if err.msg.startswith(r)), "Expecting value")
    # Python points at an escape's backslash, Go at the character after it.
    at = err.pos + 1 if reason.startswith("Invalid \\escape") and err.pos + 1 < len(text) else err.pos
    return f"invalid character {_quoted(text[at])} {_SYNTAX_CONTEXTS[reason]}"


# Python's reason for a syntax error -> the context Go's scanner names.
_SYNTAX_CONTEXTS = {
    "Extra data": "after top-level value",
    "Expecting value": "looking for beginning of value",
    "Expecting ':' delimiter": "after object key",
    "Expecting ',' delimiter": "after object key:value pair",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Invalid control character": "in string literal",
    "Invalid \\escape": "in string escape code",
}


def _quoted(character: str) -> str:
    # Go's quoteChar: a single quote escaped, anything else as strconv.Quote writes it.
    if character == "'":
        return "'\\''"
    if character == '"':
        return "'\"'"
    return f"'{json.dumps(character, ensure_ascii=False)[1:-1]}'"


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), "value")


def _fold(document: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The values of ``names`` as Go finds them: any capitalisation, the last key winning."""
    by_folded = {name.lower(): name for name in names}
    found: dict[str, Any] = {}
    for key, value in document.items():
        name = by_folded.get(key.lower())
        if name is not None:
            found[name] = value
    return found


def _field_error(value: Any, path: str, go_type: str) -> DecodeError:
    where = f"Go struct field UploadTokenRequest.{path}"
    return DecodeError(f"json: cannot unmarshal {_kind(value)} into {where} of type {go_type}")


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _field_error(value, path, "string")
    return value


def _struct(value: Any, path: str, go_type: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _field_error(value, path, f"v1beta1.{go_type}")
    return value


def _metadata(value: Any) -> JSON:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise _field_error(value, "metadata", "v1.ObjectMeta")
    try:
        meta = ObjectMeta.from_dict(value)
    except ApiParseError as err:
        cause = err.causes[0] if err.causes else None
        where = f"metadata.{cause.path}" if cause and cause.path else "metadata"
        raise DecodeError(
            f"json: cannot unmarshal into Go struct field UploadTokenRequest.{where}: "
            f"{cause.message if cause else err}"
        ) from None
    return to_go_json(meta)
