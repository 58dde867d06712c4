"""The keyboard labeler in a real browser (the served calibration notebook, Debian's chromium
driven by Playwright): a whole session labelled by keystrokes alone, with back and skip, each
label saved as it is given; and a label whose save finds the workbench busy is taken back."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl

from signet_bench.analysis.queries import calibration as cal
from signet_bench.analysis.queries.source import open_store
from tests.notebooks import test_browser
from tests.notebooks.test_browser import INTERNAL_ERROR, _open, _screenshot, _served

pytestmark = test_browser.pytestmark
browser = test_browser.browser  # the shared Chromium fixture
WAIT_MS = 60_000


def _demo_copy(demo, tmp_path: Path) -> tuple[Path, Path]:
    """The demo's store and workbench, copied so the labels written here stay here."""
    copy = tmp_path / "demo"
    shutil.copytree(demo.dir, copy)
    return copy / demo.store.name, copy / demo.workbench.relative_to(demo.dir)


def _open_labeler(browser, url: str):
    """The page once the first memory and the key buttons are shown; also how many memories."""
    page = _open(browser, url)
    first = page.get_by_text(re.compile(r"^1 of \d+ · 0 labelled$")).first
    first.wait_for(timeout=WAIT_MS)
    page.get_by_role("button", name="back").wait_for(timeout=WAIT_MS)
    n = int(re.match(r"1 of (\d+)", first.inner_text()).group(1))
    return page, n


def _press(page, key: str, progress: str) -> None:
    """One keystroke, then until the progress line reads `progress`."""
    page.keyboard.press(key)
    page.get_by_text(progress, exact=True).first.wait_for(timeout=WAIT_MS)


def _rows(workbench: Path, labeler: str) -> pl.DataFrame:
    return cal.read_labels(workbench).filter(pl.col("labeler") == labeler)


def test_a_whole_session_labelled_by_keys(browser, demo, tmp_path):
    store, workbench = _demo_copy(demo, tmp_path)
    args = ("--db", str(store), "--workbench", str(workbench), "--labeler", "keys")
    with _served("calibration", *args, log=tmp_path / "server.log") as url:
        page, n = _open_labeler(browser, url)
        assert n >= 3
        _press(page, "2", f"2 of {n} · 1 labelled")
        _press(page, "ArrowLeft", f"1 of {n} · 1 labelled")  # back: relabel the first
        _press(page, "4", f"2 of {n} · 1 labelled")
        _press(page, "s", f"3 of {n} · 1 labelled")  # skip the second
        typed = {0: 0.75}
        for i in range(2, n):
            key = str(1 + i % 5)
            typed[i] = cal.LABEL_KEYS[key]
            last = i == n - 1
            progress = f"{i + 2} of {n} · {i} labelled"
            _press(
                page,
                key,
                f"All {n} seen · {n - 1} labelled, 1 without a label" if last else progress,
            )
        page.get_by_text(re.compile(rf"^Saved memory {n}: you ")).first.wait_for(timeout=WAIT_MS)
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "calibration-keys")
        page.close()
    rows = _rows(workbench, "keys")
    assert rows["session_key"].n_unique() == 1
    key = rows["session_key"][0]
    con = open_store(store)
    try:
        items = cal.label_items(con, key, cal.read_labels(None), "keys")
    finally:
        con.close()
    assert items.height == n
    expected = {items["memory_id"][i]: level for i, level in typed.items()}
    assert dict(zip(rows["memory_id"], rows["human_label"], strict=True)) == expected
    judge = dict(zip(items["memory_id"], items["judge_relevance"], strict=True))
    assert rows["judge_relevance"].to_list() == [judge[m] for m in rows["memory_id"]]


_HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""


def test_a_label_the_busy_workbench_refused_is_taken_back(browser, demo, tmp_path):
    store, workbench = _demo_copy(demo, tmp_path)
    args = ("--db", str(store), "--workbench", str(workbench), "--labeler", "busy")
    with _served("calibration", *args, log=tmp_path / "server.log") as url:
        page, n = _open_labeler(browser, url)
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(workbench)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout.readline().strip() == "held"
            page.keyboard.press("3")
            page.get_by_text(re.compile(r"workbench is busy .*retry 1")).first.wait_for(
                timeout=WAIT_MS
            )
            page.get_by_text(re.compile(r"Not saved.*0\.50 for memory 1")).first.wait_for(
                timeout=WAIT_MS
            )
            page.get_by_text(f"1 of {n} · 0 labelled", exact=True).first.wait_for()
        finally:
            holder.kill()
            holder.wait()
        assert _rows(workbench, "busy").height == 0
        _press(page, "3", f"2 of {n} · 1 labelled")
        page.get_by_text(re.compile(r"^Saved memory 1: you 0\.50")).first.wait_for(timeout=WAIT_MS)
        page.close()
    assert _rows(workbench, "busy")["human_label"].to_list() == [0.5]
