"""``virtctl render``: the libvirt domain a VMI manifest would run with, computed offline.

The pipeline (:func:`render_domain`) is a library function so that other callers (admission checks,
tests, benchmarks) run exactly the same steps: deterministic stand-ins for what the cluster would
assign, the mutating webhook's defaults, then the converter.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import click

from kubevirt.virt_config import ROLLOUT_LIVE_UPDATE, ROLLOUT_STRATEGIES
from kubevirt.virt_launcher.virtwrap.converter import (
    ConversionError,
    ConverterContext,
    Domain,
    convert_vmi_to_domain,
)
from kubevirt.virtctl.manifests import (
    RenderOptions,
    cluster_config,
    cluster_options,
    objects_option,
    read_all_objects,
    read_object,
    split_list,
)
from kubevirt.virtctl.offline_vmi import DEFAULT_OPTIONS, RenderError, default_vmi
from kubevirt.virtctl.validate import UnsupportedKindError, causes_json, renderable_vmi

DOMAIN_TYPES = ("kvm", "qemu")


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
        feature_gates=split_list(values.pop("feature-gates", "")),
        block_volumes=split_list(values.pop("block-volumes", "")),
        domain_type=values.pop("domain-type", "kvm"),
    )
    if values:
        raise RenderError(f"unknown flag --{next(iter(values))}")
    if options.domain_type not in DOMAIN_TYPES:
        raise RenderError(f"unknown domain type {options.domain_type!r}")
    return options


def converter_context(options: RenderOptions) -> ConverterContext:
    return ConverterContext(
        domain_type=options.domain_type,
        cluster=cluster_config(options),
        block_volumes=options.block_volumes,
    )


def render_domain(raw: Mapping[str, Any], options: RenderOptions = DEFAULT_OPTIONS) -> Domain:
    """Manifest → defaulted VMI → domain. Raises :class:`RenderError` or :class:`ConversionError`."""
    return convert_vmi_to_domain(default_vmi(raw, options), converter_context(options))


@click.command(name="render")
@click.option("-f", "--filename", "filename", required=True, help="VMI manifest (YAML or JSON); - for stdin.")
@objects_option
@cluster_options
@click.option(
    "--domain-type",
    type=click.Choice(DOMAIN_TYPES),
    default="kvm",
    show_default=True,
    help="kvm on a node with hardware virtualisation, qemu for software emulation.",
)
@click.option(
    "--launcher-pod",
    is_flag=True,
    help="Print the virt-launcher pod virt-controller would create (JSON) instead of the domain.",
)
def render(
    filename: str,
    objects: tuple[str, ...],
    rollout_strategy: str,
    feature_gates: str,
    block_volumes: str,
    domain_type: str,
    launcher_pod: bool,
) -> None:
    """Print the libvirt domain XML a VirtualMachineInstance would run with."""
    manifest = read_object(filename, "a VirtualMachineInstance object")
    options = RenderOptions(
        rollout_strategy=rollout_strategy,
        feature_gates=split_list(feature_gates),
        block_volumes=split_list(block_volumes),
        domain_type=domain_type,
        instancetype_objects=read_all_objects(objects),
    )
    try:
        manifest, causes = renderable_vmi(manifest, options)
    except UnsupportedKindError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if causes:
        click.echo(causes_json(causes), err=True)
        sys.exit(1)
    if launcher_pod:
        _print_launcher_pod(manifest, options)
        return
    try:
        domain = render_domain(manifest, options)
    except (RenderError, ConversionError) as err:
        click.echo(f"error: {err}".splitlines()[0], err=True)
        sys.exit(1)
    click.echo(domain.to_xml())


def _print_launcher_pod(manifest: dict[str, Any], options: RenderOptions) -> None:
    # Imported here: the template service is only needed for this output.
    from kubevirt.virtctl.launcher_pod import TemplateError, render_pod

    try:
        pod = render_pod(manifest, options)
    except (RenderError, TemplateError) as err:
        click.echo(f"error: {err}".splitlines()[0], err=True)
        sys.exit(1)
    click.echo(json.dumps(pod, indent=2))
