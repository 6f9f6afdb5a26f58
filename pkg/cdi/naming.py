"""CDI's names for what it makes per claim: ``<base>-<suffix>``, shortened with an FNV-32a hash when longer
than a DNS subdomain allows."""

from __future__ import annotations

MAX_NAME_LENGTH = 253


def fnv32a(text: str) -> str:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


def resource_name(base: str, suffix: str, max_length: int = MAX_NAME_LENGTH) -> str:
    name = f"{base}-{suffix}"
    if len(name) <= max_length:
        return name
    base_length = max_length - 10 - len(suffix)
    if base_length < 0:
        short = f"{base[: max(0, max_length - 9)]}-{fnv32a(name)}"
        return short[:max_length]
    return f"{base[:base_length]}-{fnv32a(base)}-{suffix}"


DNS_LABEL_MAX_LENGTH = 63
UPLOAD_PREFIX = "cdi-upload"


def label_name(resource: str) -> str:
    """A resource name made fit for a Service or label value: no dots, at most 63 characters."""
    base = resource.replace(".", "-")
    if len(base) <= DNS_LABEL_MAX_LENGTH:
        return base
    return resource_name(base, "cdi", DNS_LABEL_MAX_LENGTH)


def upload_resource_name(claim: str) -> str:
    """The upload server pod (and its certificate Secret) of a claim: ``cdi-upload-<claim>``."""
    return resource_name(UPLOAD_PREFIX, claim)


def upload_service_name(claim: str) -> str:
    """The Service in front of a claim's upload server, which the upload proxy posts to."""
    return label_name(upload_resource_name(claim))


def upload_server_url(namespace: str, claim: str, path: str) -> str:
    return f"https://{upload_service_name(claim)}.{namespace}.svc{path}"
