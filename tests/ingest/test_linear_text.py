"""Text paths in linear time (issue 45, findings 2, 7 and 8).

Sentence splitting rescanned the text before every boundary (a passage of ". " took 17 s at
32 KB); answer-type, span and marker patterns retried long runs from each of their characters
("x-" * 4000 took 4.9 s in the URL pattern); punctuation-only text passed the word limits.

Where the work can be counted it is (the characters the boundary checks search); a regular
expression's steps cannot be, so those tests give inputs where quadratic work is minutes and
linear work milliseconds, and bound the process's CPU time (not wall-clock time: another
process on the machine does not count) a hundredfold above what linear work takes. The time
ratios per doubling are measured in benchmarks/linear_text.py."""

from __future__ import annotations

import pytest

from evidex.ingest import check_text, sentence_spans, split_text
from evidex.model import DocumentError


def test_sentence_boundaries_are_unchanged_by_the_bounds() -> None:
    """The bounded searches find what the whole prefix did."""
    text = ("Am 3. Januar 2027 öffnen wir. Im 19. Jahrhundert war es so. Er war aged 68. The end.\n"
            "1. Sign in [1]\n2. Open it [2][3]   \nSee e.g. the box. Done! [4] Next? Yes.")
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Am 3. Januar 2027 öffnen wir.", "Im 19. Jahrhundert war es so.", "Er war aged 68.", "The end.",
        "1.", "Sign in [1]", "2.", "Open it [2][3]", "See e.g. the box.", "Done! [4]", "Next?", "Yes."]


def test_punctuation_only_text_is_bounded_like_words() -> None:
    """Finding 7: 25 KB of ". " (no words) passed every word bound and took 35 s to embed;
    marks count as tokens now, and characters are bounded too."""
    with pytest.raises(DocumentError, match=r"more than 15,000 words and marks .*_MAX_TOKENS_PER_PASSAGE"):
        split_text(". " * 20_000, "paragraph")
    with pytest.raises(DocumentError, match="EVIDEX_MAX_TOKENS_PER_PASSAGE"):
        check_text("**- " * 50_000)
    with pytest.raises(DocumentError, match=r"more than 200,000 characters .*EVIDEX_MAX_CHARS_PER_PASSAGE"):
        split_text("a" * 200_001, "document")
    with pytest.raises(DocumentError, match="EVIDEX_MAX_CHARS_PER_PASSAGE"):
        check_text("a" * 200_001)
    assert len(split_text("Within 30 days. " * 1_000, "paragraph")) == 1  # 4,000 tokens: fine


def test_the_token_and_character_bounds_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDEX_MAX_TOKENS_PER_PASSAGE", "100")
    with pytest.raises(DocumentError, match="more than 100 words and marks"):
        split_text("a, " * 60, "paragraph")
    monkeypatch.setenv("EVIDEX_MAX_CHARS_PER_PASSAGE", "50")
    with pytest.raises(DocumentError, match="more than 50 characters"):
        split_text("word " * 11, "paragraph")


