"""The CLI as a user meets it: bad inputs exit 2 with one clear message and no traceback (and
leave the file alone); `synth` -> `simulate` -> `skew` works end to end."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from signet_bench.cli import main
from signet_bench.store.schema import REQUIRED_TABLES, create_store


def _fails(capsys, argv: list[str], *needles: str) -> str:
    """Run the CLI; expect exit 2, nothing on stdout and one `signet-bench: error:` line."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("signet-bench: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


@pytest.fixture
def not_sqlite(tmp_path: Path) -> Path:
    p = tmp_path / "notes.db"
    p.write_text("these are my notes, not a database\n")
    return p


@pytest.fixture
def other_sqlite(tmp_path: Path) -> Path:
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT)")
    con.commit()
    con.close()
    return p


@pytest.mark.parametrize("command", [["simulate", "--sessions", "3"], ["skew"]])
def test_missing_store(capsys, tmp_path: Path, command):
    db = tmp_path / "nowhere" / "memories.db"
    _fails(capsys, [command[0], "--db", str(db), *command[1:]], str(db), "no such")
    assert not db.exists() and not db.parent.exists()


@pytest.mark.parametrize("command", [["simulate", "--sessions", "3"], ["skew"]])
def test_not_an_sqlite_file(capsys, not_sqlite: Path, command):
    before = not_sqlite.read_bytes()
    _fails(
        capsys,
        [command[0], "--db", str(not_sqlite), *command[1:]],
        str(not_sqlite),
        "not an SQLite database",
    )
    assert not_sqlite.read_bytes() == before
    assert _siblings(not_sqlite) == {"notes.db"}  # no -wal / -shm left behind


def test_empty_file_is_not_written(capsys, tmp_path: Path):
    empty = tmp_path / "empty.db"
    empty.touch()
    _fails(capsys, ["simulate", "--db", str(empty), "--sessions", "3"], "not an SQLite")
    assert empty.stat().st_size == 0 and _siblings(empty) == {"empty.db"}


@pytest.mark.parametrize("command", [["simulate", "--sessions", "3"], ["skew"]])
def test_not_a_signet_store_lists_missing_tables(capsys, other_sqlite: Path, command):
    before = other_sqlite.read_bytes()
    line = _fails(
        capsys,
        [command[0], "--db", str(other_sqlite), *command[1:]],
        str(other_sqlite),
        "not a Signet store",
    )
    missing = [t for t in REQUIRED_TABLES if t != "memories"]
    assert line.endswith("missing table(s): " + ", ".join(missing))
    assert other_sqlite.read_bytes() == before  # not switched to WAL, nothing created
    assert _siblings(other_sqlite) == {"other.db"}


def test_simulate_on_a_non_synthetic_store(capsys, tmp_path: Path):
    db = create_store(tmp_path / "real.db")
    _fails(
        capsys,
        ["simulate", "--db", str(db), "--sessions", "3"],
        str(db),
        "not a synthetic store",
        "signet-bench synth",
    )
    con = sqlite3.connect(db)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    finally:
        con.close()
    assert not any(t.startswith("sim_") for t in tables)


def test_unknown_persona(capsys, tmp_path: Path):
    out = tmp_path / "x.db"
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--persona", "nosuch", "--out", str(out)])
    assert exc.value.code == 2
    _, err = capsys.readouterr()
    assert "invalid choice: 'nosuch'" in err and "Traceback" not in err
    assert not out.exists()
    # `bench --persona` takes free text: the benchmark rejects it before doing any work
    _fails(capsys, ["bench", "loop", "--quick", "--persona", "nosuch"], "unknown persona")


@pytest.fixture(scope="module")
def synth_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "light.db"
    assert main(["synth", "--persona", "light", "--out", str(db), "--memories", "120"]) == 0
    return db


def test_synth_simulate_skew(capsys, synth_store: Path):
    capsys.readouterr()
    # synth refuses to overwrite
    _fails(capsys, ["synth", "--persona", "light", "--out", str(synth_store)], "already exists")

    assert main(["simulate", "--db", str(synth_store), "--sessions", "30", "--seed", "1"]) == 0
    out, err = capsys.readouterr()
    assert "sessions simulated: 30 (already recorded, skipped: 0)" in out
    assert "comparisons: 30;" in out
    assert "Traceback" not in err

    assert main(["simulate", "--db", str(synth_store), "--sessions", "30", "--seed", "1"]) == 0
    out, _ = capsys.readouterr()
    assert "sessions simulated: 0 (already recorded, skipped: 30)" in out

    assert main(["skew", "--db", str(synth_store), "--tz", "Europe/Berlin"]) == 0
    out, _ = capsys.readouterr()
    for name in ("recency", "dow_sin", "superseded", "session_gap"):
        assert name in out
    assert "infer_share_differs" in out or "infer_share_d" in out


def test_simulate_bad_session_counts(capsys, synth_store: Path):
    capsys.readouterr()
    _fails(capsys, ["simulate", "--db", str(synth_store), "--sessions", "0"], "--sessions")
    # the plan's length is fixed by the first run (30 sessions in the test above, or here)
    main(["simulate", "--db", str(synth_store), "--sessions", "30", "--seed", "1"])
    capsys.readouterr()
    _fails(
        capsys,
        ["simulate", "--db", str(synth_store), "--sessions", "31"],
        "session plan has 30 sessions",
    )


def test_bench_quality_takes_lists_of_personas_and_seeds(capsys):
    """Check --personas and --seeds parse into lists, and a bad seed list is a usage error."""
    from signet_bench.cli import build_parser

    args = build_parser().parse_args(
        ["bench", "quality", "--personas", "heavy, drifting", "--seeds", "11,12,13"]
    )
    assert args.personas == ["heavy", "drifting"] and args.seeds == [11, 12, 13]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "quality", "--seeds", "11,x"])
    assert "whole numbers" in capsys.readouterr().err


def test_simulate_injects_a_choice_when_asked(capsys, tmp_path: Path):
    db = tmp_path / "light.db"
    assert main(["synth", "--persona", "light", "--out", str(db), "--memories", "120"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["simulate", "--db", str(db), "--sessions", "3", "--inject-k", "-1"])
    assert "--inject-k: expected a whole number >= 0, got '-1'" in capsys.readouterr().err
    argv = ["simulate", "--db", str(db), "--sessions", "4", "--inject-k", "5"]
    assert main([*argv, "--inject-tokens", "10000"]) == 0
    con = sqlite3.connect(db)
    try:
        counts = con.execute(
            "SELECT SUM(was_injected AND NOT is_constraint), SUM(was_injected) "
            "FROM session_memories GROUP BY session_key"
        ).fetchall()
    finally:
        con.close()
    # a constraint among the best 5 takes its place; the others are injected after them
    assert len(counts) == 4 and all(plain <= 5 <= every for plain, every in counts)
