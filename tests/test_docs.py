"""The documents a reader is sent to exist: every reference a source file makes to a document
names a file of the repository and a section its headings hold; the README and the docs link
only to files that exist and quote no figure tied to one host or one commit (the generated
benchmark page, which names its machine, excepted)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".venv", ".git", "node_modules", "out", "build", "dist"}
# References to documents that are not in the repository (the project's design notes and the
# captured sources the specification cites by name).
FOREIGN = re.compile(
    r"\b[Ss]eed 0\d\d\b|\bDESIGN\b|\breference §|\bref §|\banchors(?:\.md| §)|\.\./shared/(?:DESIGN|reference|seeds)"
    r"|\b[Ss]eed Phase\b|\bREADME \"|\breference/signet"
)
# `docs/<name>.md` followed by its sections: `§3.2`, `§3.1-§3.9`, `§4.4, §6`, `§9.7, §9.8`.
DOC_REF = re.compile(r"docs/([\w.-]+\.md)((?:[\s,\-–]*(?:and\s+)?§\d+(?:\.\d+)*)*)")
SECTION = re.compile(r"§(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
GENERATED = {"benchmarks.md"}
PINNED = re.compile(
    r"on this machine|this host|the slower host|a faster one|a busier hour|\bidle,"
    r"|\bat [0-9a-f]{7}\b|\d ms on\b|\d s on\b|\bhere, where\b",
    re.IGNORECASE,
)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _python_files() -> list[Path]:
    """Every source file of the repository but this one, whose examples must not resolve."""
    return [
        p
        for p in sorted(ROOT.rglob("*.py"))
        if not SKIP.intersection(p.relative_to(ROOT).parts[:-1]) and p != Path(__file__)
    ]


def _markdown() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def sections(doc: Path) -> set[str]:
    """The numbered sections of a Markdown file: `## 3. Title` -> "3", `### 3.2 Title` -> "3.2"."""
    return set(HEADING.findall(doc.read_text(encoding="utf-8")))


def broken_references(text: str) -> list[str]:
    """Every document reference of `text` that does not resolve inside the repository."""
    out = [f"{m.group(0)!r}: not a document of the repository" for m in FOREIGN.finditer(text)]
    for m in DOC_REF.finditer(text):
        doc = ROOT / "docs" / m.group(1)
        if not doc.is_file():
            out.append(f"docs/{m.group(1)}: no such file")
            continue
        missing = [s for s in SECTION.findall(m.group(2)) if s not in sections(doc)]
        out += [f"docs/{m.group(1)} §{s}: no such section" for s in missing]
    return out


def test_the_checks_catch_what_they_are_for() -> None:
    assert broken_references("see seed 000 Phase 5 and DESIGN §6")
    assert broken_references("(reference §3)") and broken_references('README "Labels"')
    assert broken_references("docs/specification.md §99.1")
    assert broken_references("docs/no-such-page.md §1")
    assert not broken_references("docs/specification.md §3.2, §4.4 and docs/concepts.md\n §4.1")
    assert PINNED.search("p50 4.9 s at 38ae312") and PINNED.search("29 ms on a slow box")
    assert not PINNED.search("a 2,000-character budget at session start")


def test_every_document_reference_in_the_code_resolves() -> None:
    files = _python_files()
    assert len(files) > 100
    broken = [
        f"{p.relative_to(ROOT)}: {b}"
        for p in files
        for b in broken_references(p.read_text(encoding="utf-8"))
    ]
    assert not broken, "\n".join(broken)


def test_the_code_cites_the_specification_by_section() -> None:
    cited = {
        (m.group(1), s)
        for p in _python_files()
        for m in DOC_REF.finditer(p.read_text(encoding="utf-8"))
        for s in SECTION.findall(m.group(2))
    }
    assert len({s for doc, s in cited if doc == "specification.md"}) >= 30


@pytest.mark.parametrize("doc", _markdown(), ids=lambda p: p.name)
def test_the_docs_link_to_files_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    missing = [t for t in targets if not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to missing files: {missing}"
    assert not broken_references(text)


@pytest.mark.parametrize(
    "doc", [d for d in _markdown() if d.name not in GENERATED], ids=lambda p: p.name
)
def test_no_figure_is_tied_to_a_host_or_a_commit(doc: Path) -> None:
    lines = doc.read_text(encoding="utf-8").splitlines()
    pinned = [f"{doc.name}:{i}: {line}" for i, line in enumerate(lines, 1) if PINNED.search(line)]
    assert not pinned, "\n".join(pinned)


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
