"""What every binary shares at start-up: version flag, logging set-up, clean exit on bad flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kubevirt.log import configure as configure_logging
from kubevirt.version import get_version

F = TypeVar("F", bound=Callable[..., Any])


class _Verbosity(click.types.IntParamType):
    """An integer, also written Go's way as ``-v=2`` (KubeVirt's and CDI's pods pass it so)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            value = value.removeprefix("=")
        return super().convert(value, param, ctx)


def binary(component: str, help_text: str) -> Callable[[F], click.Command]:
    """Turn a function into a component's click command with ``--version`` and JSON logging.

    The wrapped function receives the parsed options as keyword arguments; logging is configured
    for ``component`` before it runs.
    """

    def decorate(func: F) -> click.Command:
        def run(**options: Any) -> Any:
            configure_logging(component, verbosity=options.pop("v", None))
            return func(**options)

        run.__doc__ = help_text
        command = click.command(name=component, help=help_text)(run)
        command = click.option(
            "-v",
            type=_Verbosity(),
            default=None,
            help="Log verbosity (KubeVirt's levels; above 2 logs debug).",
        )(command)
        # The version is looked up only when asked for: reading the package metadata costs every
        # start-up (each launcher's, under its VMI's CPU limit) tens of milliseconds of CPU.
        return click.option(
            "--version",
            is_flag=True,
            expose_value=False,
            is_eager=True,
            help="Show the version and exit.",
            callback=lambda ctx, _param, value: _print_version(ctx, component) if value else None,
        )(command)

    return decorate


def _print_version(ctx: click.Context, component: str) -> None:
    if ctx.resilient_parsing:
        return
    click.echo(f"{component} {get_version()}")
    ctx.exit()
