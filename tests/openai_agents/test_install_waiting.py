"""The groups of the SDK's extras (aiosqlite, SQLAlchemy, cryptography) wait for the
program to import their module (``Installation.waiting``, ``_post_import``). The
scripts run in fresh interpreters: this one has imported those modules already."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)
pytest.importorskip("aiosqlite", reason="the SDK's aiosqlite extra is not installed")
pytest.importorskip("sqlalchemy", reason="the SDK's sqlalchemy extra is not installed")
pytest.importorskip("cryptography", reason="the SDK's encrypt extra is not installed")

import histcore.openai_agents as accelerator

EXTRAS = {"async_session_read", "sqlalchemy_read", "encrypted_read"}
SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


def _run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_extras_are_bound_when_imported_and_unbound_with_the_rest() -> None:
    out = _run(
        f"""
        import sys, warnings
        warnings.simplefilter("error")
        import histcore.openai_agents as accelerator
        from histcore.openai_agents import _post_import

        finders = list(sys.meta_path)
        installation = accelerator.install()
        assert {SQLALCHEMY!r} not in sys.modules and "sqlalchemy" not in sys.modules
        assert set(installation.waiting) == {EXTRAS!r}, installation.waiting
        assert not [r for r in installation.replaced if ".extensions." in r]

        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        now = accelerator.installation()
        assert set(now.waiting) == {EXTRAS - {"sqlalchemy_read"}!r}, now.waiting
        assert "{SQLALCHEMY}.SQLAlchemySession.get_items" in now.replaced
        assert SQLAlchemySession.get_items.__module__.startswith("histcore."), "not bound"
        module = sys.modules[{SQLALCHEMY!r}]
        # The module keeps its own loader: nothing shows it was watched.
        assert type(module.__loader__).__name__ == "SourceFileLoader", module.__loader__
        assert module.__spec__.loader is module.__loader__
        assert _post_import.watched() == (
            "agents.extensions.memory.async_sqlite_session",
            "agents.extensions.memory.encrypt_session",
        ), _post_import.watched()

        accelerator.uninstall()
        assert SQLAlchemySession.get_items.__module__ == {SQLALCHEMY!r}
        assert sys.meta_path == finders and _post_import.watched() == ()
        import agents.extensions.memory.async_sqlite_session as async_sqlite
        assert async_sqlite.AsyncSQLiteSession.get_items.__module__ == async_sqlite.__name__

        for _ in range(3):
            accelerator.install()
            accelerator.uninstall()
        assert sys.meta_path == finders
        # Imported before install: bound by install, as any other group.
        installation = accelerator.install(guard=True)
        assert installation.waiting == ("encrypted_read",), installation.waiting
        assert installation.guard is not None
        from agents.extensions.memory.encrypt_session import EncryptedSession
        assert accelerator.installation().waiting == ()
        assert accelerator.installation().guard is installation.guard
        assert EncryptedSession._unwrap_valid_items.__module__.startswith("histcore.")
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_group_that_does_not_fit_is_skipped_at_import_with_a_warning() -> None:
    out = _run(
        f"""
        import dataclasses, warnings
        import histcore.openai_agents as accelerator
        from histcore.openai_agents import _table

        def boom(original, site):
            raise RuntimeError("builder failed")

        def changed(group):
            if group.name == "sqlalchemy_read":
                return dataclasses.replace(group, digests=frozenset())
            if group.name == "async_session_read":
                targets = tuple(dataclasses.replace(t, build=boom) for t in group.targets)
                return dataclasses.replace(group, targets=targets)
            return group

        _table.GROUPS = tuple(changed(group) for group in _table.GROUPS)
        accelerator.install()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
            from agents.extensions.memory.async_sqlite_session import AsyncSQLiteSession
        assert SQLAlchemySession.get_items.__module__ == {SQLALCHEMY!r}
        assert AsyncSQLiteSession.get_items.__module__.startswith("agents."), "half bound"
        now = accelerator.installation()
        assert "changed (digest" in now.skipped["sqlalchemy_read"], now.skipped
        assert "builder failed" in now.skipped["async_session_read"], now.skipped
        assert now.waiting == ("encrypted_read",), now.waiting
        said = [str(w.message) for w in caught if w.category is RuntimeWarning]
        assert any("sqlalchemy_read" in s for s in said), said
        assert any("async_session_read" in s for s in said), said
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_imports_in_threads_each_bind_their_group_once() -> None:
    out = _run(
        """
        import importlib, threading
        import histcore.openai_agents as accelerator

        accelerator.install()
        names = [
            "agents.extensions.memory.sqlalchemy_session",
            "agents.extensions.memory.async_sqlite_session",
            "agents.extensions.memory.encrypt_session",
        ]
        start = threading.Barrier(len(names) * 2)

        def load(name):
            start.wait()
            importlib.import_module(name)

        threads = [threading.Thread(target=load, args=(n,)) for n in names * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        now = accelerator.installation()
        assert now.waiting == () and now.skipped == {}, now
        extension = [r for r in now.replaced if ".extensions." in r]
        assert len(extension) == len(set(extension)) == 3, extension
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_module_imported_while_install_starts_watching_is_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``install()`` looks at ``sys.modules`` again once it watches: here every extra's
    module counts as not imported when ``_waits`` asks, though all are."""
    import agents.extensions.memory.async_sqlite_session
    import agents.extensions.memory.encrypt_session
    import agents.extensions.memory.sqlalchemy_session  # noqa: F401

    accelerator.uninstall()
    monkeypatch.setattr(accelerator, "_waits", lambda group: bool(group.needs))
    try:
        installation = accelerator.install()
        assert installation.waiting == ()
        replaced: Any = set(installation.replaced)
        assert f"{SQLALCHEMY}.SQLAlchemySession.get_items" in replaced
        assert installation.skipped == {}
    finally:
        accelerator.uninstall()


def test_a_module_this_release_lacks_is_skipped_at_install_not_awaited() -> None:
    out = _run(
        """
        import dataclasses, warnings
        import histcore.openai_agents as accelerator
        from histcore.openai_agents import _table

        def moved(group):
            if group.name != "sqlalchemy_read":
                return group
            return dataclasses.replace(group, module=group.module + "_gone")

        _table.GROUPS = tuple(moved(group) for group in _table.GROUPS)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            installation = accelerator.install()
        assert "sqlalchemy_read" not in installation.waiting, installation.waiting
        assert "cannot be imported" in installation.skipped["sqlalchemy_read"]
        assert any("sqlalchemy_read" in str(w.message) for w in caught)
        print("ok")
        """
    )
    assert out.strip() == "ok"
