"""The workbench's paths are written without `pathlib` (the hooks read them before Signet
starts), as `pathlib` writes them: every path of a small alphabet of tricky parts, up to four
parts long, against `pathlib` itself."""

from __future__ import annotations

import itertools
from pathlib import Path, PurePosixPath

from signet_scorer.workbench import (
    default_workbench,
    path_text,
    prompt_model_file,
    pure_text,
    served_at_prompt,
)

PARTS = ("/", "//", ".", "..", "a", "b.c", "x.", ".y", "~", "a.b.onnx")
TEXTS = ["", *("".join(p) for n in range(1, 5) for p in itertools.product(PARTS, repeat=n))]


def test_path_texts_are_pathlibs(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home/"))
    for text in TEXTS:
        assert pure_text(text) == str(PurePosixPath(text)), text
        try:
            want = str(Path(text).expanduser())
        except RuntimeError:  # `~user` of no user: `pathlib` raises, the text is kept
            want = pure_text(text)
        assert path_text(text) == want, text
    assert path_text("~/m.db") == str(tmp_path / "home" / "m.db")


def test_a_path_rule_gives_what_it_is_given(tmp_path):
    """A `Path` in, a `Path` out, and a `str` for a `str`, the same path either way."""
    for text in TEXTS:
        p = Path(text)
        if p.name and p.stem:
            model = p.with_name(f"{p.stem}.prompt{p.suffix}")
            assert prompt_model_file(p) == model and prompt_model_file(text) == str(model), text
        if p.name:
            assert default_workbench(text) == str(default_workbench(p)), text
    db = tmp_path / "s.db"
    assert default_workbench(db) == tmp_path / "workbench.duckdb"
    assert default_workbench(str(db)) == str(tmp_path / "workbench.duckdb")
    (tmp_path / "s.db.predictor").mkdir()
    (tmp_path / "s.db.predictor" / "workbench.duckdb").touch()
    assert default_workbench(str(db)) == str(tmp_path / "s.db.predictor" / "workbench.duckdb")
    model = tmp_path / "model.onnx"
    assert served_at_prompt(model) == model and served_at_prompt(str(model)) == str(model)
    (tmp_path / "model.prompt.onnx").touch()
    assert served_at_prompt(str(model)) == str(tmp_path / "model.prompt.onnx")
    assert served_at_prompt(model) == tmp_path / "model.prompt.onnx"
