"""What the offline commands (``render``, ``validate``) share: reading a manifest, the values a cluster
would assign to it, and the options describing the cluster it would be created in.

A manifest is read within the API server's limits. JSON input (what ``kubectl get -o json`` writes) goes
through the ``json`` module, many times faster than any YAML loader; YAML through libyaml's loader when
PyYAML was built with it. Either way a timestamp stays a string, as Kubernetes' own YAML decoding leaves it.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import click
import yaml

from kubevirt.input_limits import MAX_OBJECT_BYTES, InputLimitError, check_nesting, check_size, load_json
from kubevirt.virt_config import ROLLOUT_LIVE_UPDATE, ROLLOUT_STRATEGIES, ClusterConfig

# Stand-ins for values a cluster assigns (the namespace of the request, the VM controller's firmware
# UUID, the API server's object UID), so that rendering is reproducible.
DEFAULT_NAMESPACE = "default"
FIRMWARE_UUID_NAMESPACE = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")
STAND_IN_UID = "00000000-0000-4000-8000-000000000001"


@dataclass(frozen=True, kw_only=True)
class RenderOptions:
    rollout_strategy: str = ROLLOUT_LIVE_UPDATE
    feature_gates: frozenset[str] = frozenset()
    block_volumes: frozenset[str] = frozenset()
    domain_type: str = "kvm"
    # Instance types and preferences a VM may refer to (the cluster's, given offline).
    instancetype_objects: tuple[dict[str, Any], ...] = ()


def cluster_config(options: RenderOptions) -> ClusterConfig:
    """The cluster configuration the options stand for."""
    return ClusterConfig.build(feature_gates=options.feature_gates, rollout_strategy=options.rollout_strategy)


def apply_stand_ins(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with the namespace and firmware UUID a cluster would have given it (the input is
    not changed; only the few mappings on the way to the new values are copied)."""
    manifest = dict(raw)
    metadata = raw.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    manifest["metadata"] = metadata
    if not metadata.get("namespace"):
        metadata["namespace"] = DEFAULT_NAMESPACE
    spec = raw.get("spec")
    domain = spec.get("domain") if isinstance(spec, Mapping) else None
    if isinstance(spec, Mapping) and isinstance(domain, Mapping):
        firmware = domain.get("firmware")
        if firmware is None:  # absent or null: the defaults would otherwise pick a random UUID
            firmware = {}
        if isinstance(firmware, Mapping) and not firmware.get("uuid"):
            name = str(metadata.get("name") or "")
            firmware = {**firmware, "uuid": str(uuid.uuid5(FIRMWARE_UUID_NAMESPACE, name))}
            manifest["spec"] = {**spec, "domain": {**domain, "firmware": firmware}}
    return manifest


def split_list(value: str) -> frozenset[str]:
    """The comma-separated items of a flag value, without blanks."""
    return frozenset(part.strip() for part in value.split(",") if part.strip())


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


def read_objects(filename: str) -> list[dict[str, Any]]:
    """Every object in ``filename``: YAML documents, each an object or a ``List`` of them; exits 2
    when the file cannot be read or holds anything else."""
    try:
        if filename == "-":
            text = sys.stdin.read()
        else:
            with open(filename, encoding="utf-8") as handle:
                text = handle.read()
        documents = list(yaml.load_all(text, Loader=_ManifestLoader))
    except (OSError, ValueError, yaml.YAMLError) as err:
        click.echo(f"error: cannot read {filename}: {err}".splitlines()[0], err=True)
        sys.exit(2)
    found: list[dict[str, Any]] = []
    for document in documents:
        if document is None:
            continue
        items = (
            document.get("items")
            if isinstance(document, dict) and document.get("kind") == "List"
            else [document]
        )
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            click.echo(f"error: {filename} holds something other than Kubernetes objects", err=True)
            sys.exit(2)
        found.extend(items)
    return found


def read_all_objects(filenames: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    return tuple(item for filename in filenames for item in read_objects(filename))


def objects_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--objects FILE`` (repeatable): the cluster's instance types and preferences, given offline."""
    return click.option(
        "--objects",
        "objects",
        multiple=True,
        help="Instance types and preferences a VM refers to (YAML or JSON, several documents or a List); "
        "repeatable. Without them a VM's references are not found, which KubeVirt tolerates.",
    )(command)


def cluster_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options describing the cluster a manifest would be created in (shared by offline commands)."""
    for option in reversed(
        (
            click.option(
                "--rollout-strategy",
                "--rollout",
                "rollout_strategy",
                type=click.Choice(ROLLOUT_STRATEGIES),
                default=ROLLOUT_LIVE_UPDATE,
                show_default=True,
                help="The cluster's VM rollout strategy (LiveUpdate: CPU and memory hotplug defaults).",
            ),
            click.option(
                "--feature-gates", default="", help="Comma-separated feature gates enabled in the cluster."
            ),
            click.option(
                "--block-volumes", default="", help="Comma-separated volumes whose PVC is in block mode."
            ),
        )
    ):
        command = option(command)
    return command
