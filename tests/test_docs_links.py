"""The documents hold together: every relative Markdown link resolves, and the README stays a front door.

Checked: README.md, CONTRIBUTING.md and every ``docs/**/*.md``. A link's target must be an existing
file or folder, relative to the linking file; an ``#anchor`` into a Markdown file must name one of
its headings (GitHub's slugs). Links inside code (fenced blocks, inline code) are not links.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 200  # issue #36: a front door, not a lab notebook

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def _prose(text: str) -> str:
    return _CODE.sub("", _FENCE.sub("", text))


def links(path: Path) -> list[str]:
    """The relative link targets of one Markdown file (external links and code left out)."""
    text = _prose(path.read_text(encoding="utf-8"))
    found = _INLINE.findall(text) + _REFDEF.findall(text)
    return [t for t in found if not _EXTERNAL.match(t)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out, seen = set(), {}
    for line in _FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_slugs_follow_github():
    assert slug("Lab notes") == "lab-notes"
    assert slug("§1 Graph file — `placelab.graph/1` (JSON)") == "1-graph-file--placelabgraph1-json"
    assert slug("Why `gen:ffnn` misses the goal") == "why-genffnn-misses-the-goal"


def test_link_parser_skips_code_and_external_links(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("[a](b.md) [c](https://x.org) `[d](e.md)` ![f](g.png)\n```\n[h](i.md)\n```\n[j]: k.md\n")
    assert sorted(links(md)) == ["b.md", "g.png", "k.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc):
    broken = []
    for target in links(doc):
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
        elif not dest.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_readme_is_at_most_200_lines():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; move detail to docs/ (docs/index.md)"


def test_every_doc_is_on_the_map():
    """docs/index.md links every document under docs/ (the map the README points to)."""
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    missing = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").rglob("*.md"))
               if p != index and p.resolve() not in linked]
    assert not missing, f"docs/index.md does not link {', '.join(missing)}"
