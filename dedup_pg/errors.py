"""Errors shared by modules that should not import each other: about input
(documents, pages), and calibration's (its modules and the command)."""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """One input item cannot be ingested; the message says why.

    item_id: how to name the item in reports (its id, or "line N").
    raw: the bytes received, kept in ``ingest_errors`` so nothing is lost.
    """

    def __init__(
        self, message: str, *, item_id: str | None = None, raw: bytes | None = None
    ) -> None:
        super().__init__(message)
        self.item_id = item_id
        self.raw = raw

    def __reduce__(self) -> tuple[Any, ...]:  # keep item_id and raw across processes
        return (_rebuild_input_error, (str(self), self.item_id, self.raw))


def _rebuild_input_error(message: str, item_id: str | None, raw: bytes | None) -> InputError:
    return InputError(message, item_id=item_id, raw=raw)


class CalibrationError(ValueError):
    """Calibration cannot run as asked (too few documents, unknown model, ...)."""


def first_line(exc: BaseException) -> str:
    """An exception's message in one line (PostgreSQL's carry DETAIL and
    CONTEXT lines below it): for one-line reports instead of tracebacks."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
