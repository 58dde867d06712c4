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
