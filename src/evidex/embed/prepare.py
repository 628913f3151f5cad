"""Build what an embedder derives from its packaged weights, ahead of the first use.

    python -m evidex.embed.prepare [MODEL_ID ...]

With no argument, prepares the default embedder. ``make install`` runs it so the first ingest
or query does not pay for building the int8 graph of multilingual-e5-small; without it, the first
embedding builds the graph itself.
"""

from __future__ import annotations

import sys

from evidex.embed import DEFAULT_EMBEDDER, get_embedder


def prepare(model_id: str) -> None:
    """Load ``model_id`` once (building any derived file) and check it embeds."""
    vectors = get_embedder(model_id).embed_queries(["evidex prepare"])
    if vectors.shape != (1, get_embedder(model_id).dimension):
        raise RuntimeError(f"{model_id} returned shape {vectors.shape}")


def main(argv: list[str] | None = None) -> int:
    for model_id in (argv if argv is not None else sys.argv[1:]) or [DEFAULT_EMBEDDER]:
        prepare(model_id)
        print(f"evidex: {model_id} ready", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
