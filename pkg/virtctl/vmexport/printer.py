"""Where ``virtctl vmexport`` says what it is doing: stdout while the volume goes to a file, stderr when
stdout carries the volume or a manifest (or nothing, for create and delete), as KubeVirt's does."""

from __future__ import annotations

from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Printer:
    to_stderr: bool

    def say(self, text: str) -> None:
        click.echo(text, nl=False, err=self.to_stderr)
