"""The drift explorer served, in a real browser: choosing a focal entity in its dropdown redraws
the drift views over that entity's sessions."""

from __future__ import annotations

import re

import pytest

from signet_bench.analysis.wording import plural
from tests.notebooks.test_browser import (
    CHROMIUM,
    INTERNAL_ERROR,
    _open,
    _screenshot,
    _served,
    _wait_for_charts,
    browser,  # noqa: F401  (the module's browser fixture)
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")


def test_drift_filtered_by_a_focal_entity_in_a_browser(browser, architect):  # noqa: F811
    with _served("drift", "--db", str(architect["0.58"])) as url:
        page = _open(browser, url)
        page.get_by_text("Two kinds of drift").first.wait_for(timeout=60_000)
        page.get_by_text("Focal entities as the store names them").first.wait_for(timeout=60_000)
        _wait_for_charts(page, 2)
        picker = page.locator("select").filter(has=page.locator("option", has_text="all")).first
        labels = picker.locator("option").all_inner_texts()
        chosen = next(
            t
            for t in labels
            if re.fullmatch(r"\w+ \(\d+ sessions?\)", t) and int(t.split("(")[1].split()[0]) < 12
        )
        entity, n = chosen.split(" (")[0], chosen.split("(")[1].split()[0]
        picker.select_option(label=chosen)
        shown = f"Shown at the {plural(int(n), 'session')} {entity} is focal in"
        page.get_by_text(shown).first.wait_for(timeout=60_000)
        _wait_for_charts(page, 2)
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "drift-focal-entity")
        page.close()
