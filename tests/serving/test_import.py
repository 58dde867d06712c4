"""`serving` stays light: importing every module of it loads neither the workbench nor its
heavy dependencies (the hook path must start fast)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("polars", "duckdb", "marimo", "pyarrow", "signet_bench", "onnx")

PROBE = """
import json, sys
import serving, serving.contract, serving.tokenize, serving.scorer, serving.rpc
import serving.client, serving.training, serving.atomic, serving.jsonio, serving.__main__
from serving import Scorer
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""


def test_importing_serving_loads_nothing_heavy():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    assert "onnxruntime" in loaded and "numpy" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
