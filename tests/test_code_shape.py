"""The shape of the code base: short functions, and a README layout that names the real tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80


def _functions(package: str) -> list[tuple[str, str, int]]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                out.append((str(path.relative_to(ROOT)), node.name, lines))
    return out


@pytest.mark.parametrize("package", ["signet_bench", "scorer/signet_scorer"])
def test_no_function_is_longer_than_80_lines(package: str) -> None:
    functions = _functions(package)
    assert functions, f"no function found under {package}/"
    long = [f"{p}:{name} ({n} lines)" for p, name, n in functions if n > MAX_FUNCTION_LINES]
    assert not long, "functions over 80 lines: " + ", ".join(long)


MAX_PARAMETERS = 8

# Functions still over the limit, each waiting for the typed object its arguments make (the
# list only shrinks: a name here that no longer needs the exemption fails the test).
OVER_THE_LIMIT = {
    "signet_bench/bench/quality.py:simulate_run",
    "signet_bench/daemon/ranking/prefilter.py:prefilter",
    "signet_bench/daemon/ranking/session_start.py:ranked_result",
    "signet_bench/learn/model/scorer.py:batch_from_sessions",
    "signet_bench/learn/model/scorer.py:score_session",
    "signet_bench/learn/samples.py:build_sample",
    "signet_bench/learn/samples.py:load_samples",
    "signet_bench/store/write.py:_history",
    "signet_bench/world/synth/persona.py:_builtin",
    "scorer/signet_scorer/client.py:__init__",
}


def _parameter_counts(package: str) -> dict[str, int]:
    """Every function's named parameters (positional and keyword-only; not self, cls, *args or
    **kwargs), by "path:name"; the largest where a name repeats in a file."""
    out: dict[str, int] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
                n = len([x for x in names if x not in ("self", "cls")])
                key = f"{path.relative_to(ROOT)}:{node.name}"
                out[key] = max(n, out.get(key, 0))
    return out


def test_no_function_takes_more_than_8_parameters() -> None:
    counts = {**_parameter_counts("signet_bench"), **_parameter_counts("scorer/signet_scorer")}
    over = {k for k, n in counts.items() if n > MAX_PARAMETERS}
    assert not over - OVER_THE_LIMIT, "functions over 8 parameters (pass a typed object): " + (
        ", ".join(f"{k} ({counts[k]})" for k in sorted(over - OVER_THE_LIMIT))
    )
    assert not OVER_THE_LIMIT - over, "within the limit now, drop from OVER_THE_LIMIT: " + (
        ", ".join(sorted(OVER_THE_LIMIT - over))
    )


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Layout\n", 1)[1]
    return re.search(r"```\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_the_readme_layout_names_every_stage_folder_and_nothing_else() -> None:
    block = _layout_block()
    named = set(re.findall(r"^  ([a-z_]+)/", block, re.MULTILINE))
    on_disk = {p.name for p in (ROOT / "signet_bench").iterdir() if (p / "__init__.py").is_file()}
    assert named == on_disk
    top = set(re.findall(r"^([a-z_]+)/", block, re.MULTILINE))
    assert top <= {p.name for p in ROOT.iterdir() if p.is_dir()}
