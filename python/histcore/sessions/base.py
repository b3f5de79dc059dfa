"""The session contract: ``SessionSettings``, the ``Session`` protocol and ``SessionABC``.

A session stores one conversation's input items in order. ``Session`` is a
runtime-checkable protocol, so any object with the right attributes works (the OpenAI
Agents SDK's sessions included); ``SessionABC`` is the base class histcore's own
backends derive from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, ClassVar, Protocol, TypeAlias, TypeVar, runtime_checkable

__all__ = [
    "MESSAGES_TABLE",
    "SESSIONS_TABLE",
    "InputItem",
    "Session",
    "SessionABC",
    "SessionInputCallback",
    "SessionSettings",
    "check_int",
    "check_limit",
    "check_session_id",
    "describe_session_id",
    "items_argument",
    "resolve_limit",
]

#: The SDK's table names: every SQL store's (and the doctor's) default.
SESSIONS_TABLE = "agent_sessions"
MESSAGES_TABLE = "agent_messages"

#: An input item: a JSON-like dict, or a model with ``model_dump()`` (read as
#: ``model_dump(exclude_unset=True)``).
InputItem: TypeAlias = Any

#: ``session_input_callback(history, new_items)``: returns the model input as a list,
#: directly or as an awaitable. It gets deep copies and may change them freely.
SessionInputCallback: TypeAlias = Callable[
    [list[Any], list[Any]], "list[Any] | Awaitable[list[Any]]"
]


def check_int(
    value: object, name: str, low: int = 0, rule: str | None = None, hint: str = ""
) -> int:
    """``value`` if it is an int >= ``low`` (a bool is not); otherwise a TypeError or
    ValueError naming ``name``, the argument it was passed as, and the ``rule`` it
    breaks (default "an int >= low"; ``hint`` follows it in the ValueError)."""
    rule = rule or f"an int >= {low}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {rule}, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be {rule}{hint}, got {value}")
    return value


def check_limit(limit: object, name: str = "limit") -> int | None:
    """``limit`` if it is None or an int >= 0; otherwise a TypeError/ValueError naming it."""
    return None if limit is None else check_int(limit, name, rule="an int >= 0 or None")


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is a str that is valid UTF-8 text (no lone surrogate, which
    no database can store); otherwise a TypeError or ValueError naming it."""
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"session_id must be valid UTF-8 text, but {describe_session_id(session_id)} "
            f"holds a lone surrogate ({session_id[exc.start]!r}) at position {exc.start}"
        ) from None
    return session_id


# Session ids longer than this are cut short in messages and reprs.
_ID_SHOWN = 64


def describe_session_id(session_id: str) -> str:
    """``repr(session_id)`` for messages, cut short when the id is long (a megabyte of
    id repeated in an error message hides the message)."""
    if len(session_id) <= _ID_SHOWN:
        return repr(session_id)
    return f"{session_id[:_ID_SHOWN]!r}... ({len(session_id)} characters)"


def items_argument(items: object) -> list[Any]:
    """``items`` as a list, or a TypeError saying what was passed instead (every
    store's ``add_items`` checks its argument with this)."""
    if isinstance(items, list):
        return items
    if isinstance(items, tuple):
        return list(items)
    raise TypeError(f"items must be a list of input items, not {type(items).__name__}")


@dataclass(frozen=True)
class SessionSettings:
    """How a session is read. ``limit``: read only the latest ``limit`` items (None: all)."""

    limit: int | None = None

    def __post_init__(self) -> None:
        check_limit(self.limit, "SessionSettings.limit")

    def resolve(self, override: object) -> SessionSettings:
        """These settings with every non-None value of ``override`` laid over them.

        ``override`` may be a ``SessionSettings``, any object with a ``limit``
        attribute (such as the OpenAI Agents SDK's settings), a mapping, or None.
        """
        limit = _limit_of(override, "session_settings")
        return self if limit is None else replace(self, limit=limit)

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit}


def _limit_of(settings: object, name: str) -> int | None:
    """The ``limit`` carried by a settings object, a mapping, or None."""
    if settings is None:
        return None
    if isinstance(settings, Mapping):
        unknown = set(settings) - {"limit"}
        if unknown:
            raise ValueError(f"{name} has unknown keys: {', '.join(sorted(map(str, unknown)))}")
        return check_limit(settings.get("limit"), f"{name}['limit']")
    if not hasattr(settings, "limit"):
        raise TypeError(
            f"{name} must be a SessionSettings, a mapping or None, not {type(settings).__name__}"
        )
    return check_limit(settings.limit, f"{name}.limit")


def resolve_limit(session: object, override: object = None) -> int | None:
    """The effective read limit: ``override``'s limit if set, else the session's own."""
    limit = _limit_of(override, "session_settings")
    if limit is not None:
        return limit
    return _limit_of(getattr(session, "session_settings", None), "session.session_settings")


@runtime_checkable
class Session(Protocol):
    """What histcore needs from a session store.

    ``get_items(limit)`` returns the latest ``limit`` items (all when None) oldest
    first; ``add_items`` appends a batch, all of it or nothing; ``pop_item`` removes and
    returns the newest item (None when empty); ``clear_session`` removes everything.
    """

    session_id: str
    session_settings: SessionSettings | None

    async def get_items(self, limit: int | None = None) -> list[InputItem]: ...

    async def add_items(self, items: list[InputItem]) -> None: ...

    async def pop_item(self) -> InputItem | None: ...

    async def clear_session(self) -> None: ...


class SessionABC(ABC):
    """Base class of histcore's session backends (see ``Session`` for the contract)."""

    session_id: str
    session_settings: SessionSettings | None = None

    #: Whether ``get_items`` returns objects nobody else holds (decoded or copied for
    #: this call), so that session-input preparation can use them without another deep
    #: copy. A class sets it True only when its own ``get_items`` guarantees that; a
    #: subclass that overrides ``get_items`` gets False unless it sets it again itself,
    #: as the promise was about the method it replaced.
    _returns_fresh_items: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "get_items" in cls.__dict__ and "_returns_fresh_items" not in cls.__dict__:
            cls._returns_fresh_items = False

    def _read_limit(self, limit: object) -> int | None:
        """The limit a ``get_items(limit)`` call reads with: ``limit`` when given (a
        TypeError/ValueError when it is no int >= 0), else the session's own."""
        checked = check_limit(limit)
        return resolve_limit(self) if checked is None else checked

    @abstractmethod
    async def get_items(self, limit: int | None = None) -> list[InputItem]:
        """The latest ``limit`` items (all when None, else the session's own limit),
        oldest first, as objects the caller owns."""

    @abstractmethod
    async def add_items(self, items: list[InputItem]) -> None:
        """Append ``items`` in order: all of them, or none when anything fails."""

    @abstractmethod
    async def pop_item(self) -> InputItem | None:
        """Remove and return the newest item, or None when the session is empty."""

    @abstractmethod
    async def clear_session(self) -> None:
        """Remove every item of this session."""


_Closable = TypeVar("_Closable", bound="_ClosableSession")


class _ClosableSession(SessionABC):
    """A backend holding a connection: ``close()`` ends it, and so does leaving a
    ``with`` or ``async with`` block around it."""

    @abstractmethod
    def close(self) -> None:
        """End the session; afterwards every operation raises ``SessionClosedError``."""

    def __enter__(self: _Closable) -> _Closable:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self: _Closable) -> _Closable:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._aclose()

    async def _aclose(self) -> None:
        """How ``async with`` closes: by calling ``close()``, unless a backend whose
        ``close()`` may block overrides this."""
        self.close()
