"""`signet_scorer` stays light and apart: importing every module of it loads neither the workbench
nor its heavy dependencies (the hook path must start fast), and no line of it, at any depth,
imports the workbench library (training and conversion reach it through child processes)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("polars", "duckdb", "marimo", "pyarrow", "signet_bench", "onnx")

PROBE = """
import json, sys
import signet_scorer, signet_scorer.contract, signet_scorer.tokenize, signet_scorer.scorer
import signet_scorer.rpc, signet_scorer.client, signet_scorer.training, signet_scorer.atomic
import signet_scorer.jsonio, signet_scorer.__main__, signet_scorer.request, signet_scorer.library
from signet_scorer import Scorer
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""


def test_importing_the_scorer_loads_nothing_heavy():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    assert "onnxruntime" in loaded and "numpy" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


SCORER = Path(__file__).resolve().parents[2] / "scorer" / "signet_scorer"


def _library_imports(path: Path) -> list[str]:
    """Every place in one file that imports the workbench library: `import signet_bench...`,
    `from signet_bench... import`, or `importlib.import_module("signet_bench...")` /
    `__import__("signet_bench...")`, at any depth (module level, functions, branches)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
                names = [str(first.value)]
        hits = [n for n in names if n == "signet_bench" or n.startswith("signet_bench.")]
        found += [f"{path.name}:{node.lineno}: {n}" for n in hits]
    return found


def test_the_scorer_imports_nothing_from_the_library_anywhere():
    files = sorted(SCORER.rglob("*.py"))
    assert len(files) >= 10, files  # the walk found the package
    found = [hit for f in files for hit in _library_imports(f)]
    assert found == []


def test_the_walk_finds_imports_at_any_depth(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "def f():\n"
        "    from signet_bench.learn.export import model_bytes\n"
        "    if True:\n"
        "        import signet_bench.config as cfg\n"
        "    return importlib.import_module('signet_bench.cli')\n"
        "class C:\n"
        "    def g(self):\n"
        "        __import__('signet_bench')\n"
        "from signet_scorer import contract\n"
    )
    assert [h.split(": ")[1] for h in _library_imports(probe)] == [
        "signet_bench.learn.export",
        "signet_bench.config",
        "signet_bench.cli",
        "signet_bench",
    ]


HOOK_PROBE = """
import json, sys
import signet_scorer.hook, signet_scorer.hook.cli, signet_scorer.hook.harness
import signet_scorer.hook.js, signet_scorer.hook.inject, signet_scorer.hook.log
import signet_scorer.hook.signet, signet_scorer.workbench, signet_scorer.hook.config
import signet_scorer.hook.resident_link
before = sorted({m.split('.')[0] for m in sys.modules})
import signet_scorer.hook.rank, signet_scorer.hook.store, signet_scorer.features
import signet_scorer.context
after = sorted({m.split('.')[0] for m in sys.modules})
print(json.dumps([before, after]))
"""


def test_the_session_start_hook_loads_numpy_and_onnxruntime_only_for_a_model():
    """The console script's modules (`signet_scorer.hook.cli:main`) load neither numpy nor onnxruntime,
    nor `typing` and `dataclasses`, which would lengthen every session start by milliseconds;
    the in-process ranking's modules load numpy."""
    out = subprocess.run(
        [sys.executable, "-c", HOOK_PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    before, after = (set(x) for x in json.loads(out))
    assert not before & {"numpy", "onnxruntime", "typing", "dataclasses", *HEAVY}, before
    assert "numpy" in after and not after & {"onnxruntime", *HEAVY}, after
