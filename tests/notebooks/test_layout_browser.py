"""The page as a person sees it, in a real browser (Debian's chromium driven by Playwright):
the comparison inspector's two top-10 tables neither overlap nor run past the page at 1280
and 1920 px, and every notebook on a current store after its first session is drawn without
an error, a traceback or a chart whose domain does not hold its data."""

from __future__ import annotations

import pytest

from tests.notebooks.test_browser import (
    CHROMIUM,
    INTERNAL_ERROR,
    _chart_problems,
    _open,
    _screenshot,
    _served,
    _wait_for_charts,
    browser,  # noqa: F401  (the module's browser fixture)
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")

WIDTHS = (1280, 1920)

# A marimo table draws inside its shadow root; its frame (toolbar, rows, footer) is the first
# element there with a box. Tables not drawn (a closed accordion's) have none.
_TABLE_FRAMES = """tables => tables.map(t => {
    const walk = node => {
        for (const child of node.children) {
            const r = child.getBoundingClientRect();
            if (r.width > 0 && r.height > 0) return r;
            const found = walk(child);
            if (found) return found;
        }
        return null;
    };
    const r = t.shadowRoot && walk(t.shadowRoot);
    return r && {x: r.x, y: r.y, width: r.width, height: r.height};
}).filter(Boolean)"""


def _intersect(a: dict, b: dict) -> bool:
    """Whether two boxes share any area."""
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_the_inspectors_tables_fit_the_page(browser, demo):  # noqa: F811
    """At 1280 and 1920 px the two top-10 tables (toolbar, rows and footer each) do not
    intersect, each lies within the page's width, and the page does not scroll sideways."""
    with _served("dashboard", "--db", str(demo.store)) as url:
        for width in WIDTHS:
            page = _open(browser, url, width)
            page.get_by_text("Predictor's top 10").first.wait_for(timeout=90_000)
            cell = page.locator(".marimo-cell").filter(has_text="Comparison inspector · session #")
            tables = cell.first.locator("marimo-table")
            tables.nth(1).wait_for(state="attached", timeout=30_000)
            boxes = tables.evaluate_all(_TABLE_FRAMES)
            assert len(boxes) == 2, boxes
            page_width = page.evaluate("document.documentElement.clientWidth")
            assert not _intersect(*boxes), (width, boxes)
            for box in boxes:
                assert box["x"] >= 0 and box["x"] + box["width"] <= page_width, (width, box)
            assert page.evaluate("document.documentElement.scrollWidth") <= page_width
            assert page.get_by_text(INTERNAL_ERROR).count() == 0
            _screenshot(page, f"dashboard-inspector-{width}")
            page.close()


# What each notebook draws last on a one-session store, and how many charts it has by then.
LAST_DRAWN = {
    "dashboard": ("What the training labels learn from", 2),
    "calibration": ("Judge vs human over time", 0),
    "drift": ("Signet 0.58's train/serve skew", 3),
    "bench": ("No benchmark results yet", 0),
}


@pytest.mark.parametrize("notebook", list(LAST_DRAWN))
def test_every_notebook_on_a_one_session_store(browser, one_session, notebook):  # noqa: F811
    """A current store on day one: each notebook draws its last section with no internal
    error, no console error and no Vega warning, at both widths."""
    text, charts = LAST_DRAWN[notebook]
    with _served(notebook, "--db", str(one_session)) as url:
        for width in WIDTHS:
            page = _open(browser, url, width)
            page.get_by_text(text).first.wait_for(timeout=90_000)
            _wait_for_charts(page, charts)
            assert page.get_by_text(INTERNAL_ERROR).count() == 0
            assert page.get_by_text("Traceback").count() == 0
            assert not _chart_problems(page), _chart_problems(page)
            _screenshot(page, f"{notebook}-one-session-{width}")
            page.close()
