"""``engine.errors.one_line``: how the CLI and the app show any message (issue 34)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from engine.errors import MAX_LINE, one_line, printable

CUT = re.compile(r" \.\.\. \[([\d,]+) characters cut\] \.\.\. ")


def test_short_messages_are_unchanged_but_for_whitespace():
    assert one_line("op 'a' -> 'b'") == "op 'a' -> 'b'"
    assert one_line("first\n  second\tthird\r\n") == "first second third"
    assert one_line("x" * MAX_LINE) == "x" * MAX_LINE


def test_control_characters_are_escaped():
    assert one_line("a\x1b]0;title\x07\x1b[31mred\x7f\x9b") == "a\\x1b]0;title\\x07\\x1b[31mred\\x7f\\x9b"
    assert one_line("evil\u202etxt.exe \udcff") == "evil\\u202etxt.exe \\udcff"
    assert one_line("é — ✓ 中文") == "é — ✓ 中文"  # ordinary text is left alone


def test_long_messages_keep_start_and_end_and_say_how_much_was_cut():
    text = "START " + "m" * 1_000_000 + " END"
    line = one_line(text)
    assert len(line) <= MAX_LINE
    assert line.startswith("START mmm") and line.endswith("mmm END")
    head, tail = CUT.split(line)[0], CUT.split(line)[2]
    assert int(CUT.search(line).group(1).replace(",", "")) == len(text) - len(head) - len(tail)
    assert len(head) > len(tail)  # the start says what went wrong: it gets more room


def test_escapes_count_against_the_limit_and_are_never_split():
    line = one_line("\x1b" * 1000)
    assert len(line) <= MAX_LINE and "characters cut" in line
    assert re.fullmatch(r"(\\x1b)+", CUT.split(line)[0]) and re.fullmatch(r"(\\x1b)+", CUT.split(line)[2])
    assert len(one_line("y" * 5000, 80)) <= 80


@given(st.text(max_size=2000), st.integers(60, 400))
def test_any_text_becomes_one_bounded_printable_line(text, limit):
    line = one_line(text, limit)
    assert len(line) <= limit
    assert not any(ch.isspace() and ch != " " for ch in line)
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F or 0xD800 <= ord(ch) <= 0xDFFF for ch in line)


def test_printable_keeps_lines_and_tabs():
    assert printable("name\x1b[2J\n\tnext\x07") == "name\\x1b[2J\n\tnext\\x07"
