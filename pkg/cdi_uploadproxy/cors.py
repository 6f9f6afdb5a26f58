"""CORS as CDI's proxy answers it (rs/cors v1.7 ``AllowAll``): any origin, the usual methods, any header,
no credentials. Browsers upload through the proxy too (the OpenShift console), so preflights are answered
here, before any token is asked for."""

from __future__ import annotations

from collections.abc import Mapping

from multidict import CIMultiDict

ALLOWED_METHODS = frozenset({"HEAD", "GET", "POST", "PUT", "PATCH", "DELETE"})
_OPTIONS = "OPTIONS"
_REQUEST_METHOD = "Access-Control-Request-Method"
_REQUEST_HEADERS = "Access-Control-Request-Headers"
_ALLOW_ORIGIN = "Access-Control-Allow-Origin"


def is_preflight(method: str, headers: Mapping[str, str]) -> bool:
    return method == _OPTIONS and bool(headers.get(_REQUEST_METHOD))


def _method_allowed(method: str) -> bool:
    method = method.upper()
    return method == _OPTIONS or method in ALLOWED_METHODS


def header_list(value: str) -> list[str]:
    """The header names a preflight asks for, in canonical case (rs/cors keeps letters, digits, ``-`` and
    ``_``, splits on commas and spaces, and capitalises after each ``-``)."""
    names: list[str] = []
    current: list[str] = []
    upper = True
    for index, char in enumerate(value):
        if char.isascii() and char.isalpha():
            current.append(char.upper() if upper else char.lower())
        elif char in "-_" or (char.isascii() and char.isdigit()):
            current.append(char)
        if char in " ," or index == len(value) - 1:
            if current:
                names.append("".join(current))
                current = []
                upper = True
        else:
            upper = char == "-"
    return names


def preflight_headers(headers: Mapping[str, str]) -> CIMultiDict[str]:
    """The answer to a preflight (sent with 200 and no body, and never passed on)."""
    answer: CIMultiDict[str] = CIMultiDict()
    for name in ("Origin", _REQUEST_METHOD, _REQUEST_HEADERS):
        answer.add("Vary", name)
    method = headers.get(_REQUEST_METHOD, "")
    if not headers.get("Origin") or not _method_allowed(method):
        return answer
    answer[_ALLOW_ORIGIN] = "*"
    answer["Access-Control-Allow-Methods"] = method.upper()
    requested = header_list(headers.get(_REQUEST_HEADERS, ""))
    if requested:
        answer["Access-Control-Allow-Headers"] = ", ".join(requested)
    return answer


def actual_headers(method: str, headers: Mapping[str, str]) -> CIMultiDict[str]:
    """What every other answer carries besides its own headers."""
    answer: CIMultiDict[str] = CIMultiDict(Vary="Origin")
    if headers.get("Origin") and _method_allowed(method):
        answer[_ALLOW_ORIGIN] = "*"
    return answer
