"""The ``key:value,key:value`` flag values of ``virtctl create`` and its error wording."""

from __future__ import annotations

import click

from kubevirt.admission.k8s_names import random_suffix

__all__ = ["FlagError", "flag_error", "parse_params", "random_suffix", "split_prefixed_name"]


class FlagError(click.ClickException):
    """A flag value virtctl refuses; printed as ``Error: <message>``."""


def flag_error(flag: str, message: str) -> FlagError:
    return FlagError(f'failed to parse "--{flag}" flag: {message}')


def parse_params(flag: str, value: str, known: tuple[str, ...]) -> dict[str, str]:
    """``src:a,name:b`` → ``{"src": "a", "name": "b"}``; unknown keys are refused."""
    if not value:
        raise flag_error(flag, "params may not be empty")
    found: dict[str, str] = {}
    for param in value.split(","):
        key, colon, rest = param.partition(":")
        if not colon:
            raise flag_error(flag, f"params need to have at least one colon: {param}")
        found[key] = rest
    unknown = [f"{key}:{rest}" for key, rest in found.items() if key not in known]
    if unknown:
        raise flag_error(flag, f"unknown param(s): {','.join(unknown)}")
    return found


def split_prefixed_name(flag: str, value: str) -> tuple[str, str]:
    """``prefix/name`` → ``(prefix, name)``; a bare name has an empty prefix."""
    parts = value.split("/")
    if len(parts) > 2:
        raise flag_error(flag, f"invalid count {len(parts) - 1} of slashes in prefix/name")
    prefix, name = ("", parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    if not name:
        raise flag_error(flag, "name cannot be empty")
    return prefix, name


def boot_order(flag: str, params: dict[str, str]) -> int | None:
    text = params.get("bootorder")
    if text is None:
        return None
    if not text.isdigit():
        raise flag_error(flag, f'invalid bootorder "{text}"')
    return int(text)
