"""Reasons read as one sentence: joined without doubled punctuation or empty tails.

A unit test of evalspec._scoring.reasons, which it imports: every report's reasons are built
by these two functions (what a scored report shows is checked in tests/test_report_details.py).
"""

from __future__ import annotations

from evalspec._scoring.reasons import join_reasons, with_detail


def test_reasons_join_without_doubled_punctuation_or_empty_tails():
    assert join_reasons(["got 'x'.", "", "missing ['y'];", "  "]) == "got 'x'; missing ['y']"
    assert with_detail("below the warn threshold 0.99", "") == "below the warn threshold 0.99"
    assert with_detail("below", "got 'x'.") == "below: got 'x'"
