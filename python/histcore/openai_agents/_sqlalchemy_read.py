"""The SDK's ``SQLAlchemySession.get_items``, its rows decoded in one batch.

The unlimited read runs the SDK's own statement (``created_at``, then ``id``) through
the SDK's own session context (``_session()``, or ``_session_factory()`` before 0.23),
then decodes every row in one engine call (``decode_with``: orjson where it gives what
``json.loads`` gives, ``json.loads`` otherwise) instead of awaiting
``_deserialize_item`` once a row; like the SDK's loop it skips only rows raising
``json.JSONDecodeError``. Only while ``_deserialize_item`` is the SDK's own (a subclass
that decodes otherwise gets the SDK's read), and never for a limited read. On
PostgreSQL a session object's read fetches only new rows (``_postgres_read``); other
dialects read the whole history. docs/design.md, "Drop-in accelerator" ("The other
stores' reads").
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from histcore.openai_agents import _postgres_read as postgres_read
from histcore.openai_agents._replacements import intact, named_after
from histcore.openai_agents._session_read import GetItems, decode_with
from histcore.openai_agents._watch import Watch

__all__ = ["make_get_items", "watch_for"]


def watch_for(original: Any) -> Watch:
    """What the SDK's read looks up, with what its ``_deserialize_item`` looks up
    (``json.loads``, reached through ``self``, which the watch does not follow)."""
    sdk_class = original.__globals__["SQLAlchemySession"]
    return Watch.over([original, sdk_class._deserialize_item])


def make_get_items(original: GetItems, module: ModuleType, watch: Watch | None = None) -> GetItems:
    unchanged = intact(watch)
    sdk_class = module.SQLAlchemySession
    sdk_deserialize = sdk_class._deserialize_item
    # From 0.23 on the read holds the SDK's shared-connection guard (``_session``).
    guarded = "_session" in vars(sdk_class)
    histories = postgres_read.PostgresHistories()

    @named_after(original)
    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if (
            limit is not None
            or not unchanged()
            or type(self)._deserialize_item is not sdk_deserialize
        ):
            return await original(self, limit)
        try:
            limited = module.resolve_session_limit(limit, self.session_settings) is not None
        except Exception:
            # The SDK raises it, after making the tables.
            limited = True
        if limited:
            return await original(self, limit)
        await self._ensure_tables()
        messages = self._messages
        # The SDK's statement.
        stmt = (
            module.select(messages.c.message_data)
            .where(messages.c.session_id == self.session_id)
            .order_by(messages.c.created_at.asc(), messages.c.id.asc())
        )
        json_module = module.json
        skipped = (json_module.JSONDecodeError,)

        def decode(rows: list[Any]) -> list[Any]:
            return decode_with(rows, json_module.loads, skipped)

        style = postgres_read.style_of(self._engine.dialect)
        kept = style is not None and histories.can_keep(self)
        async with self._session() if guarded else self._session_factory() as sess:
            if not kept:
                result = await sess.execute(stmt)
                return decode(list(zip(result.scalars().all())))
            try:
                assert style is not None
                return await histories.read(self, sess, style, decode)
            except BaseException as exc:
                histories.forget(self)
                if not isinstance(exc, Exception):
                    raise
        # The SDK's read raises what the SDK would, if anything.
        return await original(self, limit)

    return get_items
