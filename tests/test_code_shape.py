"""The shape of the code base: short functions, no module cycle, no re-export, and a README
layout that names the real tree."""

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
    over = sorted(k for k, n in counts.items() if n > MAX_PARAMETERS)
    assert not over, "functions over 8 parameters (pass a typed object): " + (
        ", ".join(f"{k} ({counts[k]})" for k in over)
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


PACKAGES = {
    "signet_bench": ROOT / "signet_bench",
    "signet_scorer": ROOT / "scorer" / "signet_scorer",
}


def _modules() -> dict[str, Path]:
    """Every module of both packages by dotted name (a package by its own name)."""
    out = {}
    for name, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = (name, *path.relative_to(root).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement reaches (a `from` import's names as submodules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".")[: len(module.split(".")) - (path.name != "__init__.py")]
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{a.name}" for a in node.names]


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, anywhere in it: function-local and
    TYPE_CHECKING imports count (they are edges all the same, only later)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for name in _imported(module, path, node):
                    while name and name not in modules:
                        name = name.rpartition(".")[0]
                    if name and name != module:
                        graph[module].add(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on_stack.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_cycle() -> None:
    graph = _import_graph()
    assert len(graph) > 100 and graph["signet_bench.cli"], "the import graph was not read"
    cycles = _cycles(graph)
    assert not cycles, "module cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


# The scorer distribution's public face: `signet_scorer.Scorer` and `ScoreQuery`, loaded lazily.
PUBLIC_FACES = {"signet_scorer"}


def _top_level_names(tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """(names a module defines, name -> the project-or-not module it imports it from)."""
    defined: set[str] = set()
    imported: dict[str, str] = {}
    body = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If | ast.Try):
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            body += [n for h in getattr(node, "handlers", []) for n in h.body]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported |= {a.asname or a.name: node.module for a in node.names}
    return defined, imported


def test_every_import_names_the_home_of_what_it_imports() -> None:
    """A name is imported from the module that defines it, never through one that imported it
    from another module of the project (a re-export)."""
    modules = _modules()
    names = {m: _top_level_names(ast.parse(p.read_text())) for m, p in modules.items()}
    files = [
        *modules.values(),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "fixtures").rglob("*.py"),
        *(ROOT / "notebooks").rglob("*.py"),
    ]
    through = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom) or node.module not in modules:
                continue
            if node.level or node.module in PUBLIC_FACES:
                continue
            defined, imported = names[node.module]
            for alias in node.names:
                source = imported.get(alias.name)
                if alias.name not in defined and source in modules:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    through.append(f"{where} {alias.name} via {node.module}, from {source}")
    assert not through, "re-exports: " + "; ".join(through)
