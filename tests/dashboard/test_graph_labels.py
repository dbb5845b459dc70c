"""Captions of the graph explorer (dashboard.figures.graph_labels): natural order, the distinguishing part of
sibling names, and fitting with the count kept whole — widths worked out by hand from Helvetica's advance
widths (1/1000 em) × WIDTH_MARGIN 1.05, so 10.5 px per em at 10 px."""

import pytest

from dashboard.figures.graph_labels import (
    Caption,
    distinguishing_starts,
    fit_caption,
    natural_key,
    sibling_captions,
    text_width,
)


def test_natural_key_reads_digit_runs_as_numbers():
    names = ["op10", "level 10", "2", "op2", "10", "level 9", "1", "op1", "01", "0"]
    assert sorted(names, key=natural_key) == ["0", "01", "1", "2", "10", "level 9", "level 10", "op1", "op2", "op10"]
    assert sorted(["shard10", "shard2", "shard1"]) == ["shard1", "shard10", "shard2"]  # what string order did


def test_text_width_from_helvetica_metrics():
    assert text_width("ij", 10) == pytest.approx((0.222 + 0.222) * 10 * 1.05)
    assert text_width("Wm", 10, bold=True) == pytest.approx((0.944 + 0.889) * 10 * 1.05)
    assert text_width("漢", 10) == pytest.approx(10 * 1.05)  # a wide script: 1 em


def test_distinguishing_part_keeps_whole_numbers():
    names = ["normal_A_block_1", "normal_A_block_10", "normal_A_block_2", "reduction_A_block_reduce_4", "stem_bn1",
             "block", "block_2"]
    # the _1/_10/_2 blocks share "normal_A_block_" (15 characters) — not "normal_A_block_1", which would leave
    # block_1 nothing of its own; reduction… and stem_bn1 share nothing; "block" is all shared with "block_2"
    # (nothing of its own: 0), and block_2 keeps "_2" after the shared "block"
    assert distinguishing_starts(names) == [15, 15, 15, 0, 0, 0, 5]
    assert distinguishing_starts([]) == [] and distinguishing_starts(["only"]) == [0]


# widths at 10 px, regular: " (70)" = .278 + .333 + .556 + .556 + .333 = 2.056 em = 21.588 px; "…" 10.5 px;
# "10" 11.676; tokens of "normal_A_block_": "normal" 3.056 em = 32.088, "_" 5.838, "A" 7.0035, "block" 2.334 em = 24.507
def test_fit_caption_keeps_the_start_the_distinguishing_end_and_the_count():
    whole = "normal_A_block_10"  # with " (70)": 10.893 em = 114.38 px
    assert fit_caption(whole, 115, 10, suffix=" (70)", keep_from=15) == "normal_A_block_10 (70)"
    # 100 px: room for the name 100 - 21.588 - 10.5 = 67.912, the end "10" leaves 56.236 for whole tokens:
    # normal_A_ is 50.77, "block" would make 75.28
    assert fit_caption(whole, 100, 10, suffix=" (70)", keep_from=15) == "normal_A_…10 (70)"
    # 50 px: 17.912 of room, 6.236 after "10": not even "normal"
    assert fit_caption(whole, 50, 10, suffix=" (70)", keep_from=15) == "…10 (70)"
    # 30 px: the count alone is wider than the room for it: the count still whole
    assert fit_caption(whole, 30, 10, suffix=" (70)", keep_from=15) == "… (70)"


def test_fit_caption_without_a_shared_part_keeps_a_closing_number_or_the_last_word():
    # " (4,579)" = 3.446 em = 36.183; room 100 - 36.183 - 10.5 = 53.317; the closing "1" (5.838) leaves 47.479:
    # "nasnet_" 37.359 + "m" 8.7465 = 46.11 fits, + "o" 5.838 does not
    assert fit_caption("nasnet_mobile_1", 100, 10, suffix=" (4,579)") == "nasnet_m…1 (4,579)"
    # " (14)" 21.588, room 67.912; the end: whole tokens within half of it (33.956): "_logits" 30.345, "with" would
    # make 49.01; the start: "softmax" 36.76 of the 37.567 left, "_" would make 42.6
    assert fit_caption("softmax_cross_entropy_with_logits", 100, 10, suffix=" (14)") == "softmax…_logits (14)"


def test_a_distinguishing_part_too_long_for_its_room_is_cut_at_its_end():
    # room 60 - 21.588 - 10.5 = 27.912; "left1_0" is 31.521 wide: its start within 27.912 - 10.5 = 17.412 is
    # "left" (14.007; "1" would make 19.845)
    name = "separable_conv_block_normal_left1_0"
    assert fit_caption(name, 60, 10, suffix=" (12)", keep_from=28) == "…left… (12)"


def test_cut_siblings_sharing_a_part_start_alike():
    # "normal_A_block_1 (1,234)" is 123.13 px, cut at 100: room 53.317, after "1" 47.479: "normal_A" (44.93) — the
    # next "_" makes 50.77. "normal_A_block_10 (70)" alone keeps "normal_A_" (above); beside it, "normal_A" too.
    # "predictions (3)" (6.335 em = 66.5 px) fits whole.
    items = [Caption("normal_A_block_1", " (1,234)", 100, 10), Caption("normal_A_block_10", " (70)", 100, 10),
             Caption("predictions", " (3)", 100, 10)]
    assert sibling_captions(items) == ["normal_A…1 (1,234)", "normal_A…10 (70)", "predictions (3)"]
    # every caption stays within its width, by the same estimate
    assert all(text_width(c, 10) <= 100 for c in sibling_captions(items))


def test_a_cut_start_ends_with_three_or_more_letters_of_a_word_or_none():
    # " (3)" = 1.5 em = 15.75 px; room 80 - 15.75 - 10.5 = 53.75, after "1" (5.838) 47.91: "batch_" (31.521) whole,
    # then of "normalization" "nor" (15.17; "m" would make 23.9)
    assert fit_caption("batch_normalization_1", 80, 10, suffix=" (3)", keep_from=20) == "batch_nor…1 (3)"
    # 70 px: 37.91 after "1", 6.39 left after "batch_": "n" alone is too little to keep
    assert fit_caption("batch_normalization_1", 70, 10, suffix=" (3)", keep_from=20) == "batch_…1 (3)"
