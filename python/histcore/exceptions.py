"""Exceptions raised by histcore. Every error histcore raises on purpose derives from
``HistcoreError``, so callers can catch the library's errors in one place."""

from __future__ import annotations


class HistcoreError(Exception):
    """Base class of histcore's own errors."""


class UserError(HistcoreError):
    """The caller passed something histcore cannot use (a bad callback result, a bad
    argument combination); the message says what and where."""


class SessionError(HistcoreError):
    """A session store could not do what was asked; the store is left as it was."""


class SessionClosedError(SessionError):
    """The session was closed and cannot be used any more."""


class MaxTurnsExceeded(HistcoreError):
    """A run reached ``max_turns`` without a final output."""


class ModelBehaviorError(HistcoreError):
    """The model produced something the runner cannot act on (e.g. an unknown tool)."""


class RunStateError(HistcoreError, ValueError):
    """A serialised RunState is malformed, of an unsupported version, or does not fit
    the agent it is loaded for; the message names the offending field."""
