"""The SDK's ``prepare_input_with_session``, replaced: the batch path of ``_prepare`` for
its common case, else the original with the callback observed and the group's helpers
pinned for the call."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from types import FunctionType, ModuleType
from typing import Any, cast

from histcore.openai_agents._prepare import applies, prepare
from histcore.openai_agents._replacements import intact, named_after, stripped_keys
from histcore.openai_agents._session_keys import CALL, Call, canonical_key_setup
from histcore.openai_agents._versions import BATCH_PREPARE_DIGESTS, function_digest
from histcore.openai_agents._watch import Watch

__all__ = ["make_prepare_input_with_session", "pinning"]


def _capturing(callback: Callable[..., Any], call: Call) -> Callable[..., Any]:
    """The callback, noting its arguments and result in ``call``."""

    def session_input_callback(history: Any, new_items: Any) -> Any:
        result = callback(history, new_items)
        if inspect.isawaitable(result):
            awaitable = result

            async def finish() -> Any:
                returned = await awaitable
                call.captured = (history, new_items, returned)
                return returned

            return finish()
        call.captured = (history, new_items, result)
        return result

    return session_input_callback


def pinning(
    original: Callable[..., Awaitable[Any]], module: ModuleType, helpers: dict[str, Any]
) -> Callable[..., Awaitable[Any]]:
    """``original`` run on a copy of ``module``'s namespace taken when the call starts,
    with ``helpers`` in place of the module's: one set of helpers for the whole call,
    whatever another thread installs or uninstalls meanwhile."""
    code, name, defaults = original.__code__, original.__name__, original.__defaults__
    closure, kwdefaults = original.__closure__, original.__kwdefaults__
    namespace = vars(module)

    def pinned(*args: Any, **kwargs: Any) -> Awaitable[Any]:
        globals_ = {**namespace, **helpers}
        function = FunctionType(code, globals_, name, defaults, closure)
        function.__kwdefaults__ = kwdefaults
        return cast("Awaitable[Any]", function(*args, **kwargs))

    return pinned


def make_prepare_input_with_session(
    original: Callable[..., Awaitable[Any]],
    module: ModuleType,
    watch: Watch | None = None,
    *,
    pinned: dict[str, Any] | None = None,
) -> Callable[..., Awaitable[Any]]:
    """``prepare_input_with_session``: the batch path for its common case (on releases
    whose function it follows), else the original with the callback observed and the
    ``pinned`` helpers in place of the module's (never bound there: ``pinning``); either
    way with one key memory per call (``_session_keys``). Once anything the original
    looks up was rebound (``watch``), just the original."""
    run = original if not pinned else pinning(original, module, pinned)
    key = None if not pinned else pinned.get("_session_item_key")
    signature = inspect.signature(original)
    capture = BATCH_PREPARE_DIGESTS.get(
        function_digest("prepare_input_with_session", original) or ""
    )
    batch = capture is not None
    stripped = stripped_keys(module.strip_internal_input_item_metadata)
    extra_stripped = canonical_key_setup(stripped)
    unchanged = intact(watch)

    @named_after(original)
    async def prepare_input_with_session(*args: Any, **kwargs: Any) -> Any:
        if not unchanged():
            return await original(*args, **kwargs)
        call = Call(module, extra_stripped, key)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            bound = None  # let the original report the bad call
        token = CALL.set(call)
        try:
            if bound is not None and batch and applies(module, bound.arguments):
                return await prepare(module, call, bound.arguments, stripped, bool(capture))
            if bound is not None:
                callback = bound.arguments.get("session_input_callback")
                # A non-callable is the original's to reject, with its own message.
                if callback is not None and callable(callback):
                    bound.arguments["session_input_callback"] = _capturing(callback, call)
                    args, kwargs = bound.args, bound.kwargs
            return await run(*args, **kwargs)
        finally:
            CALL.reset(token)

    return prepare_input_with_session
