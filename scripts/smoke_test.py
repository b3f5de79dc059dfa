"""Smoke test of an installed histcore: import, engine, version and one call of each kind.

    python scripts/smoke_test.py rust      # a compiled wheel: the Rust engine, release build
    python scripts/smoke_test.py rust dev  # the Rust engine of a dev-profile (debug) build
    python scripts/smoke_test.py python    # the pure wheel: HISTCORE_BACKEND=auto gives python

Run it from outside the checkout's python/ directory (``python scripts/smoke_test.py``
puts only scripts/ on sys.path), so that the installed package is the one imported.
Used by .ci/run and by every job of .github/workflows/release.yml; needs only the
standard library and histcore.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import sys


def main(expected_backend: str, profile: str = "release") -> None:
    if expected_backend not in ("rust", "python") or profile not in ("release", "dev"):
        raise SystemExit(f"usage: {sys.argv[0]} rust [dev]|python")
    os.environ.setdefault("HISTCORE_BACKEND", "auto")
    import histcore

    version = importlib.metadata.version("histcore")
    assert histcore.__version__ == version, (histcore.__version__, version)
    assert histcore.BACKEND == expected_backend, (
        f"expected the {expected_backend} engine with "
        f"HISTCORE_BACKEND={os.environ['HISTCORE_BACKEND']}, got {histcore.BACKEND}"
    )
    compiled = importlib.util.find_spec("histcore._core")
    if expected_backend == "rust":
        import histcore._core

        built = "debug" if profile == "dev" else "release"
        assert histcore._core.build_profile == built, histcore._core.build_profile
    else:
        assert compiled is None, f"the pure package ships an extension: {compiled.origin}"

    call_v1 = {"type": "function_call", "call_id": "c1", "arguments": "v1"}
    result = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    call_v2 = {"type": "function_call", "call_id": "c1", "arguments": "v2"}
    dangling = {"type": "function_call", "call_id": "c2"}
    thought = {"type": "reasoning", "id": "rs_1"}
    assert histcore.dedupe_key(call_v1) == "call_id:function_call:c1"
    latest = histcore.deduplicate_input_items_preferring_latest([call_v1, result, call_v2])
    assert latest[0] is call_v2
    assert latest[1] is result
    assert len(latest) == 2
    assert histcore.deduplicate_input_items([call_v1, result, call_v2]) == [call_v1, result]
    assert histcore.canonical_json({"b": 1, "a": [1.0, None, "é"]}) == (
        '{"a":[1.0,null,"é"],"b":1}'.encode()
    )
    assert histcore.content_key({}).hex() == "dc7048f8f8747f561349cde127705c16"
    kept = histcore.drop_orphan_function_calls([call_v1, result, thought, dangling])
    assert kept == [call_v1, result]
    history, new = [{"role": "user", "content": "u0"}], [{"role": "user", "content": "u1"}]
    assert histcore.classify_callback_output(history, new, history + history + new) == (
        [0, 1],
        [2],
    )

    async def session_turn() -> int:
        with histcore.SQLiteSession("smoke", ":memory:") as session:
            _, to_persist = await histcore.prepare_input_with_session("hi", session, None)
            await session.add_items(to_persist)
            return len(await session.get_items())

    assert asyncio.run(session_turn()) == 1
    print(
        f"smoke test OK: histcore {version} from {os.path.dirname(histcore.__file__)}, "
        f"BACKEND={histcore.BACKEND}, Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        main("")  # exits with the usage
    main(*sys.argv[1:])
