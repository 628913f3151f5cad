"""The demo's questions (``make run``: examples/shop, default model) asked of two checkouts.

    .venv/bin/python benchmarks/answers_demo.py --old /tmp/base-answers/src [--new src]

Each checkout builds the store exactly as ``make run`` does (its own CLI, ``PYTHONPATH=<src>``,
stores under ``benchmarks/.work/answers-demo/``) and answers, as the demo's customer (tenant
acme, group customers, public passages), the questions the answers issue was reported with.
Prints both answers per question (Markdown).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHOP = ROOT / "examples" / "shop"
QUESTIONS = (
    "Can I return a worn jacket?",
    "What does ERR-401 mean?",
    "Returns and refunds FAQ",
    "Do my points ever expire?",
    "How long do I have to return an item?",
    "Kann ich eine getragene Jacke zurückgeben?",
    "Wie lange habe ich Zeit, etwas zurückzuschicken?",
    "What's the weather going to be like in the Harz this weekend?",
    "Who won the 2014 football world cup?",
)
#: ``make run``'s ingest steps.
INGEST = (
    ["versions", "--tenant", "acme", "--split", "heading"],
    ["site", "--tenant", "acme", "--groups", "customers,staff", "--visibility", "public",
     "--language", "en", "--split", "heading"],
    ["staff", "--tenant", "acme", "--groups", "staff", "--visibility", "internal", "--language", "en",
     "--split", "heading"],
    ["other-tenant", "--tenant", "globex", "--split", "heading"],
)


def cli(src: str, db: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()))
    proc = subprocess.run([sys.executable, "-c", "from evidex.cli import main; main()", "--db", str(db),
                           *args], env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="src/ of the old checkout")
    ap.add_argument("--new", default=str(ROOT / "src"), help="src/ of the new checkout")
    args = ap.parse_args()
    work = HERE / ".work" / "answers-demo"
    work.mkdir(parents=True, exist_ok=True)
    dbs = {}
    for label, src in (("old", args.old), ("new", args.new)):
        db = work / f"{label}.db"
        for p in work.glob(f"{label}.db*"):
            p.unlink()
        for step in INGEST:
            cli(src, db, "ingest", str(SHOP / step[0]), *step[1:])
        dbs[label] = (src, db)
    for q in QUESTIONS:
        print(f"\n**{q}**\n")
        for label, (src, db) in dbs.items():
            out = json.loads(cli(src, db, "ask", q, "--tenant", "acme", "--groups", "customers",
                                 "--visibilities", "public", "--json"))
            cited = ", ".join(f"[{c['n']}] {c['document_id']}" for c in out.get("citations", []))
            text = out["text"] if out["status"] == "answered" else f"declined ({out.get('reason')})"
            print(f"- {label}: {text}" + (f" ({cited})" if cited else ""))


if __name__ == "__main__":
    main()
