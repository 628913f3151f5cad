"""A first morning at the demo shop, done the way its users and operators would do it, so that every
section of the page's Operators tab has something in it once `make run` has started.

`make run` runs this in the background once the service answers:

    python examples/demo_activity.py --url http://127.0.0.1:8000 --key evidex-demo-customer \
        --site http://127.0.0.1:8765 --evidex .venv/bin/evidex --db evidex.db \
        --config examples/knowledge.config.yaml

1. **A handoff.** The demo customer asks a question the shop's pages do not answer ("Do you sell
   kayaks?"): the answer is declined with a trace id, and the customer presses *Ask a person*,
   i.e. ``POST /v1/handoff`` with the question and that trace id, as the page does. It goes
   through the service's configured route to the demo inbox (examples/inbox_server.py), which
   prints it, and the service records it for the handoff queue.
2. **A stale source.** The help centre team publishes an edit to a page (``POST /publish`` on the
   example site: examples/shop/site-edits/), so the help centre has changed since its sync.
3. **A drift check** (``evidex drift --record``): it finds that change, and the owners are told
   of their findings (the help centre's change and the demo's conflict: the Hamburg store page
   and its flyer disagree about Sunday opening hours, found by the sync) at the demo inbox; the
   check and who was told are recorded.
4. **An evaluation** (``evidex eval --cases examples/eval/cases.yaml --record acme``): the shipped
   case set run in a temporary store, its summary recorded for tenant acme.

Nothing is written to the store by hand: every record comes from the path it would take in use.
Prints one line per step; exits 1 with a one-line message when a step fails. Standard library
only, like the other helpers of `make run`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

QUESTION = "Do you sell kayaks?"
EXAMPLES = Path(__file__).resolve().parent


def _post(url: str, body: dict[str, Any] | None = None, key: str | None = None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=json.dumps(body or {}).encode("utf-8"), method="POST",
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        raw = response.read()
    return dict(json.loads(raw)) if raw.startswith(b"{") else {}


def handoff(url: str, key: str) -> str:
    """Step 1: the declined question handed to a person; its reference."""
    answer = _post(f"{url}/v1/answer", {"question": QUESTION}, key)
    if answer.get("status") != "declined" or not answer.get("handoff_available"):
        raise RuntimeError(f"{QUESTION!r} was {answer.get('status')}, not declined with a handoff offered")
    trace = answer["trace_id"]
    sent = _post(f"{url}/v1/handoff", {
        "question": QUESTION, "trace_ids": [trace],
        "conversation": [{"role": "user", "text": QUESTION},
                         {"role": "evidex", "status": "declined", "trace_id": trace}]}, key)
    return str(sent["reference"])


def evidex(args: argparse.Namespace, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([args.evidex, "--db", args.db, *command], capture_output=True, text=True,
                          timeout=1800, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("url", "key", "site", "evidex", "db", "config"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    try:
        reference = handoff(args.url.rstrip("/"), args.key)
        print(f"demo activity: the customer was declined {QUESTION!r} and asked a person ({reference})")
        _post(f"{args.site.rstrip('/')}/publish")
        checked = evidex(args, "--config", args.config, "drift", "--record")
        if checked.returncode not in (0, 1):  # 1: something drifted, as it should have
            raise RuntimeError(f"the drift check failed: {(checked.stderr or checked.stdout).strip()[:300]}")
        told = [ln for ln in checked.stderr.splitlines() if ln.startswith("notify ")]
        print(f"demo activity: the help centre published an edit; a drift check found it ({'; '.join(told)})")
        evaluated = evidex(args, "eval", "--cases", str(EXAMPLES / "eval" / "cases.yaml"), "--root",
                           str(EXAMPLES), "--record", "acme")
        if evaluated.returncode not in (0, 1):  # 1: the gate failed, which the report says
            raise RuntimeError(f"the evaluation failed: {evaluated.stderr.strip()[:300]}")
        print("demo activity: the shipped case set was evaluated and recorded; every section of the "
              "Operators tab has content now")
    except (OSError, KeyError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"demo activity: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
