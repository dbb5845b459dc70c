"""Every importer's error message is one bounded line, whatever names the file holds (issue 54).

In process, not through the CLI: the CLI flattens whatever it prints (``one_line``), which would hide a message
that carries a raw newline. Each case is a valid file of a text format (``harness.TEXT_SEEDS``) with hostile text
(newlines, terminal escapes, bidirectional overrides, quotes, backslashes, long runs) put where a name, a key or
a value goes, possibly mutated further, and saved under a hostile file name. Loading it gives a graph or a
:class:`PlacelabError` whose message has no control character, no raw line break and at most ``MESSAGE_LIMIT``
characters — anything else (another exception type included) fails.
"""

from __future__ import annotations

import json
import re

import pytest
from harness import MUTATION_KINDS, TEXT_SEEDS, file_name, mutate
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.errors import PlacelabError
from engine.specs import load_graph

#: A message quotes a few user values of at most ``engine.errors.QUOTE_LIMIT`` characters each (escaped, so up
#: to four times longer) around one sentence.
MESSAGE_LIMIT = 1500
#: Raw control characters, DEL, C1 controls, bidirectional overrides and isolates, lone surrogates.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
HOSTILE_CHARS = "\n\r\t\x1b\x07\x00\u202e\u2066'\"\\ a0.-/é"
HOSTILE = st.one_of(
    st.text(alphabet=HOSTILE_CHARS, min_size=1, max_size=12),
    st.sampled_from(["a\nb", "\x1b]0;owned\x07", "evil\u202etxt", "x" * 5000, "\n" * 300, "'\"\\'"]),
)
#: A file name may hold anything but ``/`` and NUL.
FILE_PREFIX = st.text(alphabet="\n\r\t\x1b\u202e 'a", max_size=6)
JSON_FORMATS = ["placelab", "node-link", "dnn-partitioning"]


def _slots(node, out: list) -> list:
    """Every place of a JSON document where a string sits: (container, key or index, is-a-key)."""
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((node, k, True))
            if isinstance(v, str | int | float) or v is None:
                out.append((node, k, False))
            else:
                _slots(v, out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, str | int | float) or v is None:
                out.append((node, i, False))
            else:
                _slots(v, out)
    return out


def poisoned_json(fmt: str, picks: list[tuple[float, str]]) -> bytes:
    doc = json.loads(TEXT_SEEDS[fmt])
    for where, text in picks:
        slots = _slots(doc, [])
        container, key, is_key = slots[int(where * len(slots))]
        if is_key:
            container[text] = container.pop(key)
        else:
            container[key] = text
    return json.dumps(doc).encode()


def poisoned_text(fmt: str, picks: list[tuple[float, str]]) -> bytes:
    """GraphML and DOPPLER's text: hostile text in place of a token (XML-escaped where XML allows it)."""
    data = TEXT_SEEDS[fmt].decode()
    token = re.compile(r'"[^"<>]*"|>[^<>\s][^<>]*<' if fmt == "graphml" else r"[^\s,]+")
    for where, text in picks:
        spans = [m.span() for m in token.finditer(data)]
        s, e = spans[int(where * len(spans))]
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
        data = data[:s] + (f'"{text}"' if data[s] == '"' else f">{text}<" if data[s] == ">" else text) + data[e:]
    return data.encode("utf-8", "surrogatepass")


def assert_one_bounded_line(path) -> None:
    try:
        load_graph(path)
    except PlacelabError as exc:
        msg = str(exc)
        assert msg and not UNSAFE.search(msg), f"control character in {msg[:400]!r}"
        assert len(msg) <= MESSAGE_LIMIT, f"{len(msg)} characters: {msg[:400]!r}"


PICKS = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), HOSTILE), min_size=1, max_size=3)
MUTATIONS = st.lists(st.tuples(st.sampled_from(MUTATION_KINDS), st.floats(0, 1, exclude_max=True),
                               st.floats(0, 1, exclude_max=True), st.binary(max_size=12)), max_size=2)


@pytest.mark.parametrize("fmt", list(TEXT_SEEDS))
@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=PICKS, mutations=MUTATIONS, prefix=FILE_PREFIX)
@example(picks=[(0.0, "a\nb")], mutations=[], prefix="\n")
@example(picks=[(0.53, "evil\u202etxt")], mutations=[], prefix="")  # make fuzz: networkx's own message quoted the key
def test_messages_are_one_bounded_line(tmp_path, fmt, picks, mutations, prefix):
    data = (poisoned_json if fmt in JSON_FORMATS else poisoned_text)(fmt, picks)
    path = tmp_path / f"{prefix}{file_name(fmt)}"
    path.write_bytes(mutate(data, mutations))
    assert_one_bounded_line(path)
