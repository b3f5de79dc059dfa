"""Check .github/workflows/release.yml: the targets it builds, its tests, how it publishes.

    python scripts/check_release_workflow.py .github/workflows/release.yml

Needs PyYAML. Checks that the wheel matrix names every release target (linux x86_64 and
aarch64 for manylinux2014 and musllinux_1_2, macOS x86_64 and arm64, Windows x64), each
built by PyO3/maturin-action with --release --locked and smoke-tested; that the pure
wheel and the sdist are built and smoke-tested; that publishing runs only on a version
tag, through PyPI trusted publishing (id-token, no password or token), after every
build. Then, where shellcheck is installed (SHELLCHECK, or on PATH), every `run:` script
goes through it, with each ${{ }} expression replaced by a placeholder word.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

# name -> what its matrix entry must say: (runner prefix, maturin target, manylinux).
TARGETS: dict[str, tuple[str, str, str | None]] = {
    "linux-x86_64-manylinux2014": ("ubuntu-", "x86_64", "2014"),
    "linux-aarch64-manylinux2014": ("ubuntu-", "aarch64", "2014"),
    "linux-x86_64-musllinux_1_2": ("ubuntu-", "x86_64", "musllinux_1_2"),
    "linux-aarch64-musllinux_1_2": ("ubuntu-", "aarch64", "musllinux_1_2"),
    "macos-x86_64": ("macos-", "x86_64", None),
    "macos-arm64": ("macos-", "aarch64", None),
    "windows-x64": ("windows-", "x64", None),
}
MATURIN_ACTION = "PyO3/maturin-action@v1"
PUBLISH_ACTION = "pypa/gh-action-pypi-publish@release/v1"

failures: list[str] = []


def check(condition: bool, message: str) -> None:
    print(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        failures.append(message)


def steps_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps") or [])


def uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in steps_of(job) if step.get("uses") == action]


def runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in steps_of(job))


def smoke_tests(text: str, backend: str) -> bool:
    """Whether a script runs scripts/smoke_test.py expecting ``backend``."""
    return re.search(rf"scripts/smoke_test\.py\"?\s+{backend}\b", text) is not None


def check_wheels(jobs: dict[str, Any]) -> None:
    wheels = jobs.get("wheels", {})
    entries = {
        entry.get("name"): entry
        for entry in (wheels.get("strategy", {}).get("matrix", {}).get("include") or [])
    }
    check(set(entries) == set(TARGETS), f"wheel matrix names exactly {sorted(TARGETS)}")
    for name, (runner, target, manylinux) in TARGETS.items():
        entry = entries.get(name, {})
        check(
            str(entry.get("runner", "")).startswith(runner)
            and entry.get("target") == target
            and (manylinux is None or str(entry.get("manylinux")) == manylinux),
            f"{name}: runner {entry.get('runner')}, target {entry.get('target')}, "
            f"manylinux {entry.get('manylinux')}",
        )
    builds = uses(wheels, MATURIN_ACTION)
    check(len(builds) == 1, "wheels: one PyO3/maturin-action build step")
    for build in builds:
        arguments = str(build.get("with", {}).get("args", "")).split()
        check({"--release", "--locked"} <= set(arguments), f"wheels: built with {arguments}")
        inputs = build.get("with", {})
        check(
            inputs.get("target") == "${{ matrix.target }}"
            and "matrix.manylinux" in str(inputs.get("manylinux")),
            "wheels: target and manylinux come from the matrix",
        )
    smoke = [step for step in steps_of(wheels) if smoke_tests(str(step.get("run")), "rust")]
    conditions = sorted(str(step.get("if", "")) for step in smoke)
    check(
        conditions == ["${{ !matrix.smoke-image }}", "matrix.smoke-image"],
        f"wheels: every entry is smoke-tested, in a container or natively ({conditions})",
    )
    for name in TARGETS:
        entry = entries.get(name, {})
        if name.startswith("linux-"):
            libc = "musllinux" if "musl" in name else "manylinux"
            check(
                libc in str(entry.get("smoke-image", ""))
                or "alpine" in str(entry.get("smoke-image", "")),
                f"{name}: smoke test in {entry.get('smoke-image')}",
            )
    uploads = uses(wheels, "actions/upload-artifact@v6")
    check(
        any("matrix.name" in str(step.get("with", {}).get("name")) for step in uploads),
        "wheels: each entry uploads its wheel",
    )


def check_pure_and_sdist(jobs: dict[str, Any]) -> None:
    sdist = jobs.get("sdist", {})
    check(
        any(step.get("with", {}).get("command") == "sdist" for step in uses(sdist, MATURIN_ACTION)),
        "sdist: built by maturin-action (command: sdist)",
    )
    check(smoke_tests(runs(sdist), "rust"), "sdist: smoke test of a source build")
    check(
        "scripts/check-sdist-without-rust.sh" in runs(sdist),
        "sdist: checked without a Rust toolchain",
    )
    pure = jobs.get("pure", {})
    check("HISTCORE_BUILD_PURE=1" in runs(pure), "pure: built with HISTCORE_BUILD_PURE=1")
    check(smoke_tests(runs(pure), "python"), "pure: smoke test gives the pure twin")


def check_publish(workflow: dict[str, Any], jobs: dict[str, Any]) -> None:
    # YAML 1.1 reads the key `on` as True.
    triggers = workflow.get("on", workflow.get(True)) or {}
    tags = (triggers.get("push") or {}).get("tags") or []
    check("v*" in tags, f"runs on version tags (push tags {tags})")
    publish = jobs.get("publish", {})
    condition = str(publish.get("if", ""))
    check(
        "startsWith(github.ref, 'refs/tags/v')" in condition
        and "github.event_name == 'push'" in condition,
        f"publish: only on a pushed version tag ({condition})",
    )
    check(
        set(publish.get("needs") or []) >= {"wheels", "sdist", "pure", "check", "lint", "full-ci"},
        f"publish: after every build and check ({publish.get('needs')})",
    )
    check(
        (publish.get("permissions") or {}).get("id-token") == "write",
        "publish: id-token: write (trusted publishing)",
    )
    steps = uses(publish, PUBLISH_ACTION)
    check(len(steps) == 1, f"publish: {PUBLISH_ACTION}")
    secrets = [step for step in steps if {"password", "user"} & set(step.get("with") or {})]
    check(not secrets, "publish: no password or token (trusted publishing)")
    check(bool(publish.get("environment")), "publish: runs in a deployment environment")
    top = workflow.get("permissions") or {}
    check(top == {"contents": "read"}, f"workflow permissions default to read ({top})")
    check("scripts/check_dist.py --release" in runs(jobs.get("check", {})), "check job")
    check(
        "bash .ci/run --full" in runs(jobs.get("full-ci", {})),
        "full-ci: runs every step of CI (bash .ci/run --full) before publishing",
    )


def shellcheck(jobs: dict[str, Any]) -> None:
    tool = os.environ.get("SHELLCHECK") or shutil.which("shellcheck")
    if tool is None:
        print("skip  shellcheck: not installed")
        return
    bad = []
    with tempfile.TemporaryDirectory() as scratch:
        for job_name, job in jobs.items():
            for index, step in enumerate(steps_of(job)):
                if "run" not in step:
                    continue
                script = re.sub(r"\$\{\{.*?\}\}", "EXPRESSION", str(step["run"]))
                path = Path(scratch, f"{job_name}-{index}.sh")
                path.write_text("#!/usr/bin/env bash\nset -e\n" + script, encoding="utf-8")
                done = subprocess.run(
                    [tool, "--severity=warning", str(path)], capture_output=True, text=True
                )
                if done.returncode != 0:
                    bad.append(f"{job_name} step {index}:\n{done.stdout}")
    check(not bad, "shellcheck on every run: script" + ("".join("\n" + b for b in bad)))


def main(path: Path) -> int:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    jobs = workflow.get("jobs") or {}
    check_wheels(jobs)
    check_pure_and_sdist(jobs)
    check_publish(workflow, jobs)
    shellcheck(jobs)
    if failures:
        print(f"\ncheck_release_workflow: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("\ncheck_release_workflow: all checks passed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} WORKFLOW.yml")
    sys.exit(main(Path(sys.argv[1])))
