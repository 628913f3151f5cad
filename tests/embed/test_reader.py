"""The shipped reader (``evidex.embed.E5Reader``): its weights are the ones its manifest
describes, a missing or altered file is a one-line error, a span's score never depends on the
spans read beside it, and the real model reads which sentence states the answer."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import evidex.embed
from evidex.embed import E5Reader, ReaderUnavailableError, get_reader, span_text

#: The reader's weights and their manifest, as the package ships them (get_reader() loads these).
READER_DATA = Path(evidex.embed.__file__).parent / "data" / "reader"
WEIGHTS, MANIFEST = READER_DATA / "reader.npz", READER_DATA / "manifest.json"

pytestmark = pytest.mark.slow


def test_the_shipped_weights_are_the_ones_the_manifest_describes() -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert hashlib.sha256(WEIGHTS.read_bytes()).hexdigest() == manifest["weights"]["sha256"]
    # The manifest says how to rebuild them and from what, under which licences.
    assert "training/reader.py" in manifest["training"]["command"]
    assert isinstance(manifest["training"]["seed"], int)
    assert {"shop", "squad2", "covidqa"} <= set(manifest["data"])
    assert "CC BY-NC" in manifest["data"]["not_used_for_training"]
    assert isinstance(manifest["decision"]["threshold"], float)
    assert WEIGHTS.stat().st_size <= 25 * 2**20


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    w, m = tmp_path / "reader.npz", tmp_path / "manifest.json"
    shutil.copy(WEIGHTS, w)
    shutil.copy(MANIFEST, m)
    return w, m


def test_missing_weights_are_a_one_line_error(tmp_path: Path) -> None:
    w, m = _copy(tmp_path)
    w.unlink()
    with pytest.raises(ReaderUnavailableError, match="weights are missing") as e:
        E5Reader(w, m).score("Where is my order?", ["passage: x"])
    assert "\n" not in str(e.value) and "make reader" in str(e.value)


def test_altered_weights_are_refused_before_they_are_read(tmp_path: Path) -> None:
    w, m = _copy(tmp_path)
    data = bytearray(w.read_bytes())
    data[len(data) // 2] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(ReaderUnavailableError, match="sha256") as e:
        E5Reader(w, m).score("Where is my order?", ["passage: x"])
    assert "\n" not in str(e.value)


def test_a_missing_manifest_is_a_one_line_error(tmp_path: Path) -> None:
    w, m = _copy(tmp_path)
    m.unlink()
    with pytest.raises(ReaderUnavailableError, match="manifest is missing"):
        E5Reader(w, m).threshold  # noqa: B018


def test_a_spans_score_does_not_depend_on_its_neighbours() -> None:
    reader = get_reader()
    a = span_text("You can return items within 30 days of delivery.", ["Returns"])
    b = span_text("Our stores open at 9:00 on weekdays.", ["Stores"])
    alone = reader.score("How long do I have to return an item?", [a])
    both = reader.score("How long do I have to return an item?", [b, a, b])
    assert alone[0] == both[1] and both[0] == both[2]


@pytest.mark.parametrize(("question", "answer", "near"), [
    ("How long do I have to return an item?",
     "You can return unworn items within 30 days of delivery.",
     "Returned items must be unworn and in their original packaging."),
    ("Wie lange dauert der Versand nach Österreich?",
     "Nach Österreich dauert der Standardversand 3 bis 5 Werktage.",
     "Nach Österreich liefern wir mit DHL."),
    ("What is the boiling point of water at sea level?",
     "At sea level, water boils at 100 degrees Celsius.",
     "Water is a chemical compound of hydrogen and oxygen."),
])
def test_the_reader_scores_the_sentence_that_states_the_answer_above_one_on_topic(
        question: str, answer: str, near: str) -> None:
    got = get_reader().score(question, [span_text(answer, []), span_text(near, [])])
    assert got[0] > got[1]
    assert np.isfinite(got).all()
