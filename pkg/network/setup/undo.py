"""Undo steps for a multi-step setup: on failure, what was done is taken back, newest first."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from kubevirt.log import get_logger


class UndoStack:
    def __init__(self) -> None:
        self._steps: list[tuple[str, Callable[[], object]]] = []

    def push(self, what: str, step: Callable[[], object]) -> None:
        self._steps.append((what, step))

    def unwind(self) -> None:
        log = get_logger()
        while self._steps:
            what, step = self._steps.pop()
            try:
                step()
            except Exception as err:  # keep undoing the rest; the original failure is what is raised
                log.warning("undoing a network setup step failed", step=what, reason=str(err))


@contextlib.contextmanager
def all_or_nothing() -> Iterator[UndoStack]:
    """Yields a stack to push undo steps on; unwinds it if the block raises."""
    stack = UndoStack()
    try:
        yield stack
    except BaseException:
        stack.unwind()
        raise
