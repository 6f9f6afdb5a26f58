"""``virtctl render``: the libvirt domain a VMI manifest would run with, computed offline.

The pipeline (:func:`render_domain`) is a library function so that other callers (admission checks,
tests, benchmarks) run exactly the same steps: deterministic stand-ins for what the cluster would
assign, the mutating webhook's defaults, then the converter.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

import click
from pydantic import BaseModel

from kubevirt.admission.config import ROLLOUT_LIVE_UPDATE, ROLLOUT_STRATEGIES, ClusterConfig
from kubevirt.defaults import DefaultingError, set_vmi_defaults
from kubevirt.virt_launcher.virtwrap.api.schema import Domain
from kubevirt.virt_launcher.virtwrap.converter import ConversionError, ConverterContext, convert_vmi_to_domain
from kubevirt.virtctl.manifest import read_object
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import VirtualMachineInstance

# Stand-ins for values a cluster assigns (the namespace of the request, the VM controller's firmware
# UUID, the API server's object UID), so that rendering is reproducible.
DEFAULT_NAMESPACE = "default"
FIRMWARE_UUID_NAMESPACE = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")
STAND_IN_UID = "00000000-0000-4000-8000-000000000001"
DOMAIN_TYPES = ("kvm", "qemu")


class RenderError(ValueError):
    """The VMI cannot be rendered; the message names the field at fault."""


@dataclass(frozen=True, kw_only=True)
class RenderOptions:
    rollout_strategy: str = ROLLOUT_LIVE_UPDATE
    feature_gates: frozenset[str] = frozenset()
    block_volumes: frozenset[str] = frozenset()
    domain_type: str = "kvm"


def options_from_flags(args: Iterable[str], *, rollout_strategy: str = ROLLOUT_LIVE_UPDATE) -> RenderOptions:
    """Options from ``--name=value`` flags as the command takes them (``--rollout`` is accepted as a
    short form of ``--rollout-strategy``); ``rollout_strategy`` applies when no flag sets one."""
    values: dict[str, str] = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not name.startswith("--"):
            raise RenderError(f"expected --name=value, got {arg!r}")
        values[name[2:]] = value
    strategy = values.pop("rollout-strategy", values.pop("rollout", rollout_strategy))
    if strategy not in ROLLOUT_STRATEGIES:
        raise RenderError(f"unknown rollout strategy {strategy!r}")
    options = RenderOptions(
        rollout_strategy=strategy,
        feature_gates=_split(values.pop("feature-gates", "")),
        block_volumes=_split(values.pop("block-volumes", "")),
        domain_type=values.pop("domain-type", "kvm"),
    )
    if values:
        raise RenderError(f"unknown flag --{next(iter(values))}")
    if options.domain_type not in DOMAIN_TYPES:
        raise RenderError(f"unknown domain type {options.domain_type!r}")
    return options


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


# For each API model: JSON key -> (is a list, nested model) for keys holding models, None for leaves.
_Plan = dict[str, tuple[bool, type[BaseModel]] | None]
_plans: dict[type[BaseModel], _Plan] = {}


def _plan(model: type[BaseModel]) -> _Plan:
    plan = _plans.get(model)
    if plan is None:
        plan = {}
        for name, field in model.model_fields.items():
            plan[field.alias or name] = _nested_model(field.annotation)
        _plans[model] = plan
    return plan


def _nested_model(annotation: Any) -> tuple[bool, type[BaseModel]] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return False, candidate
        if get_origin(candidate) is list:
            (item,) = get_args(candidate) or (Any,)
            if isinstance(item, type) and issubclass(item, BaseModel):
                return True, item
    return None


def unknown_fields(model: type[BaseModel], data: Any, path: str = "") -> list[str]:
    """JSON paths of keys the API type does not declare (the CRD schema rejects those).
    Object metadata is left to the API server, as the CRD schema does."""
    found: list[str] = []
    if not isinstance(data, Mapping):
        return found
    plan = _plan(model)
    for key, value in data.items():
        if key not in plan:
            if not _keeps_unknown_fields(model):
                found.append(f"{path}.{key}" if path else key)
            continue
        nested = plan[key]
        if nested is None or (not path and key == "metadata"):
            continue
        is_list, inner = nested
        child = f"{path}.{key}" if path else key
        if not is_list:
            found += unknown_fields(inner, value, child)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                found += unknown_fields(inner, item, f"{child}[{index}]")
    return found


def _keeps_unknown_fields(model: type[BaseModel]) -> bool:
    """Whether the CRD schema keeps unknown fields below this type (as it does below ``clock``)."""
    extra = model.model_config.get("json_schema_extra")
    return isinstance(extra, dict) and extra.get("x-kubernetes-preserve-unknown-fields") is True


def default_vmi(raw: Mapping[str, Any], options: RenderOptions = RenderOptions()) -> VirtualMachineInstance:
    """Parse a VMI manifest and default it as virt-api would on CREATE (with the stand-ins above)."""
    manifest = apply_stand_ins(raw)
    unknown = unknown_fields(VirtualMachineInstance, manifest)
    if unknown:
        raise RenderError(f"{unknown[0]}: unknown field")
    try:
        vmi = VirtualMachineInstance.from_dict(manifest)
    except ApiParseError as err:
        raise RenderError(str(err.causes[0]) if err.causes else str(err)) from None
    cluster = ClusterConfig.build(
        feature_gates=options.feature_gates, rollout_strategy=options.rollout_strategy
    )
    try:
        set_vmi_defaults(vmi, cluster)
    except DefaultingError as err:
        raise RenderError(str(err)) from None
    assert vmi.metadata is not None  # set by the defaults
    if not vmi.metadata.uid:
        vmi.metadata.uid = STAND_IN_UID
    return vmi


def converter_context(options: RenderOptions) -> ConverterContext:
    return ConverterContext(
        domain_type=options.domain_type,
        feature_gates=options.feature_gates,
        block_volumes=options.block_volumes,
    )


def render_domain(raw: Mapping[str, Any], options: RenderOptions = RenderOptions()) -> Domain:
    """Manifest → defaulted VMI → domain. Raises :class:`RenderError` or :class:`ConversionError`."""
    return convert_vmi_to_domain(default_vmi(raw, options), converter_context(options))


def _split(value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split(",") if part.strip())


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


@click.command(name="render")
@click.option("-f", "--filename", "filename", required=True, help="VMI manifest (YAML or JSON); - for stdin.")
@cluster_options
@click.option(
    "--domain-type",
    type=click.Choice(DOMAIN_TYPES),
    default="kvm",
    show_default=True,
    help="kvm on a node with hardware virtualisation, qemu for software emulation.",
)
def render(
    filename: str, rollout_strategy: str, feature_gates: str, block_volumes: str, domain_type: str
) -> None:
    """Print the libvirt domain XML a VirtualMachineInstance would run with."""
    manifest = read_object(filename, "a VirtualMachineInstance object")
    options = RenderOptions(
        rollout_strategy=rollout_strategy,
        feature_gates=_split(feature_gates),
        block_volumes=_split(block_volumes),
        domain_type=domain_type,
    )
    # Imported here: validate builds on this module's reading and options.
    from kubevirt.virtctl.validate import UnsupportedKindError, causes_json, renderable_vmi

    try:
        manifest, causes = renderable_vmi(manifest, options)
    except UnsupportedKindError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if causes:
        click.echo(causes_json(causes), err=True)
        sys.exit(1)
    try:
        domain = render_domain(manifest, options)
    except (RenderError, ConversionError) as err:
        click.echo(f"error: {err}".splitlines()[0], err=True)
        sys.exit(1)
    click.echo(domain.to_xml())
