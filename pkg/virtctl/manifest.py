"""Reading a manifest for the offline commands: YAML or JSON, within the API server's limits.

JSON input (what ``kubectl get -o json`` writes) goes through the ``json`` module, which is many times
faster than any YAML loader; YAML through libyaml's loader when PyYAML was built with it. Either way a
timestamp stays a string, as Kubernetes' own YAML decoding leaves it.
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

import click
import yaml

from kubevirt.admission.limits import MAX_OBJECT_BYTES, InputLimitError, check_nesting, check_size, load_json

# Exit status when the manifest cannot be read (validate documents 1 as "refused").
EXIT_UNREADABLE = 2

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ManifestLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """The safe loader with timestamps left as strings (as sigs.k8s.io/yaml leaves them)."""


_ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_manifest(data: bytes) -> Any:
    """The document in ``data``; raises ``ValueError`` (or ``yaml.YAMLError``) with the reason."""
    check_size(len(data), "manifest")
    text = data.decode("utf-8")
    if text.lstrip()[:1] in ("{", "["):
        try:
            return load_json(text, "manifest")
        except InputLimitError:
            raise
        except ValueError:
            pass  # YAML flow style, e.g. {a: 1}: let the YAML loader read it
    try:
        document = yaml.load(text, Loader=_ManifestLoader)
    except RecursionError:
        raise InputLimitError("manifest is nested too deeply") from None
    check_nesting(document)
    return document


def _read_bounded(stream: BinaryIO) -> bytes:
    # One byte past the limit is enough to know the input is too large.
    return stream.read(MAX_OBJECT_BYTES + 1)


def read_manifest(filename: str) -> Any:
    """The document in ``filename`` (``-``: stdin)."""
    if filename == "-":
        return parse_manifest(_read_bounded(sys.stdin.buffer))
    with open(filename, "rb") as handle:
        return parse_manifest(_read_bounded(handle))


def read_object(filename: str, what: str) -> dict[str, Any]:
    """The manifest in ``filename`` (``-``: stdin) as a JSON object; exits 2 when it cannot be read."""
    try:
        manifest = read_manifest(filename)
    except (OSError, ValueError, yaml.YAMLError) as err:  # ValueError: bad UTF-8, limits, huge integers
        click.echo(f"error: cannot read {filename}: {err}".splitlines()[0], err=True)
        sys.exit(EXIT_UNREADABLE)
    if not isinstance(manifest, dict):
        click.echo(f"error: {filename} does not hold {what}", err=True)
        sys.exit(EXIT_UNREADABLE)
    return manifest
