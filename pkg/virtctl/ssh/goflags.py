"""Boolean flags the way pflag parses them: ``--flag`` alone is true, ``--flag=false`` sets it explicitly,
and a bare ``--flag`` never takes the next argument as its value (so ``--local-ssh vmi/x`` works).

Click cannot express that with one option: a flag refuses ``=value``, and an optional value swallows the
next token. The options are declared as taking a value and :class:`GoFlagsCommand` turns a bare flag
into ``--flag=true`` before click parses the line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class GoBool(click.ParamType[bool]):
    """The spellings Go's ``strconv.ParseBool`` accepts, and pflag's error for anything else."""

    name = "boolean"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bool:
        if isinstance(value, bool):
            return value
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        flag = f"--{param.name.replace('_', '-')}" if param is not None and param.name else "flag"
        raise click.BadParameter(
            f'invalid argument "{value}" for "{flag}" flag: strconv.ParseBool: parsing "{value}": '
            "invalid syntax",
            ctx,
            param,
        )


GO_BOOL = GoBool()


def bool_flag(*decls: str, default: bool = False, help: str) -> Callable[[F], F]:
    """A pflag-style boolean option; use it on a command whose class is :class:`GoFlagsCommand`."""
    return click.option(*decls, type=GO_BOOL, default=default, show_default=True, metavar="", help=help)


class GoFlagsCommand(click.Command):
    """Rewrites bare boolean flags (long or short) to ``--name=true``, and ``-x=value`` the way pflag reads
    it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.rewrite(args))

    def rewrite(self, args: list[str]) -> list[str]:
        longs: dict[str, str] = {}
        takes_value: set[str] = set()
        for param in self.params:
            if not isinstance(param, click.Option):
                continue
            if isinstance(param.type, GoBool):
                long = next(opt for opt in param.opts if opt.startswith("--"))
                longs.update(dict.fromkeys(param.opts, long))
            elif not param.is_flag and not param.count:
                takes_value.update(param.opts)
        rewritten: list[str] = []
        value_next = False
        for index, arg in enumerate(args):
            if value_next:  # another option's value, even when it looks like a flag ("-t -r")
                rewritten.append(arg)
                value_next = False
                continue
            if arg == "--":
                return rewritten + args[index:]
            name, equals, value = arg.partition("=")
            if name in longs and not equals:
                rewritten.append(f"{longs[name]}=true")
            elif name in longs and not name.startswith("--"):
                rewritten.append(f"{longs[name]}={value}")
            elif equals and name in takes_value and not name.startswith("--"):
                rewritten += [name, value]  # pflag's "-p=2222"; click would keep the "="
            else:
                rewritten.append(arg)
                value_next = arg in takes_value
        return rewritten
