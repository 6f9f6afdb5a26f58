"""Kubernetes' name rules (``k8s.io/apimachinery/pkg/util/validation``) with their exact messages."""

from __future__ import annotations

import re
import secrets

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + ")*"
_LABEL_RE = re.compile(f"^{_LABEL}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")
_HAS_LETTER = re.compile(r"[a-z]")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253


def _max_len(length: int) -> str:
    return f"must be no more than {length} characters"


def dns1123_label(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > LABEL_MAX:
        errors.append(_max_len(LABEL_MAX))
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            # A valid subdomain that is no label: the length was checked, so it has dots.
            errors.append("must not contain dots")
            return errors
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
            "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
            f"for validation is '{_LABEL}')"
        )
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > SUBDOMAIN_MAX:
        errors.append(_max_len(SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            f"validation is '{_SUBDOMAIN}')"
        )
    return errors


def port_name(value: str) -> list[str]:
    """IANA service name rules (``IsValidPortName``)."""
    errors: list[str] = []
    if not 1 <= len(value) <= 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if not _HAS_LETTER.search(value):
        errors.append("must contain at least one letter (a-z)")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_QUALIFIED_NAME_ERROR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    f"regex used for validation is '{_QUALIFIED_NAME}')"
)
_LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE}$")
QUALIFIED_NAME_MAX = 63


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS subdomain prefix and ``/``, then a name part."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {_QUALIFIED_NAME_ERROR} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {message}" for message in dns1123_subdomain(prefix))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append(f"name part {_max_len(QUALIFIED_NAME_MAX)}")
    if not _QUALIFIED_NAME_RE.match(name):
        errors.append(f"name part {_QUALIFIED_NAME_ERROR}")
    return errors


def label_value(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    errors: list[str] = []
    if len(value) > LABEL_MAX:
        errors.append(_max_len(LABEL_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            f"'12345', regex used for validation is '{_LABEL_VALUE}')"
        )
    return errors


# Kubernetes' rand.String alphabet: no vowels, no look-alike digits.
_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(length: int = 5) -> str:
    """Kubernetes' ``rand.String``: what KubeVirt (and virtctl) append to the names they make up."""
    return "".join(secrets.choice(_RANDOM_ALPHABET) for _ in range(length))


def bounded_name(base: str, suffix: str, max_length: int) -> str:
    """``<base>-<suffix>``, or a form shortened with an FNV-1a hash when that is longer than ``max_length``.

    OpenShift's ``naming.GetName``, which KubeVirt names its export pods, services and secrets with: the
    same inputs must give the same names, or a controller would not find what another one made.
    """
    name = f"{base}-{suffix}"
    if len(name) <= max_length:
        return name
    base_length = max_length - 10 - len(suffix)  # 10: "-" + 8 hash digits + "-"
    if base_length < 0:
        prefix = base[: max(0, max_length - 9)]
        return f"{prefix}-{_fnv32a_hex(name)}"[:max_length]
    return f"{base[:base_length]}-{_fnv32a_hex(base)}-{suffix}"


def _fnv32a_hex(text: str) -> str:
    digest = 0x811C9DC5
    for byte in text.encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{digest:08x}"
