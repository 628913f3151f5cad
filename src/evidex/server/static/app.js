// evidex web page: plain JavaScript, no build step.
// Every piece of data is rendered with textContent (never innerHTML): answers, passages, titles and
// error messages are untrusted text. Source Markdown (headings, emphasis, lists) is shown formatted
// by building elements around text nodes, so raw HTML in a source stays literal text. Links are
// made only for http(s) URLs on the server's allowlist.
// The API key lives in sessionStorage (this tab only) and travels as a bearer credential.
"use strict";

(() => {
  const KEY = "evidex.apiKey";
  const config = JSON.parse(document.getElementById("evidex-config").textContent || "{}");
  const allowedHosts = new Set((config.allowedLinkHosts || []).map((h) => String(h).toLowerCase()));
  const $ = (id) => document.getElementById(id);

  const REASONS = {
    no_evidence: "No passage in the documents available to you matches this question. " +
      "This describes the collection you can access, not the world: the answer may exist elsewhere.",
    weak_evidence: "The passages available to you do not clearly cover this question, so no answer is given.",
    invalid_model_output: "The generated answer did not meet the citation rules and was withheld.",
    context_budget: "Not even the best passage fitted into the model's context.",
    generator_error: "The answer generator could not be reached.",
    no_answer_in_sources: "The passages found do not contain an answer to this question.",
    not_stated: "The passages found are about this question, but none of them states what it asks for.",
    timeout: "The answer check did not finish in time; here is related reading.",
    tool_unavailable: "A live lookup this question needs did not give a usable answer just now, " +
      "so nothing is answered from older or stored data instead.",
    tool_needs_sign_in: "This lookup needs a signed-in customer; the key you use does not carry " +
      "the identity it needs.",
  };
  const BADGES = {
    current: ["current", "badge-current"],
    source_changed: ["source changed", "badge-changed"],
    quote_mismatch: ["source changed", "badge-changed"],
    unavailable: ["unavailable", "badge-unavailable"],
  };

  // -- small DOM helpers (text only) ------------------------------------------------------------
  function el(tag, opts = {}, ...children) {
    const node = document.createElement(tag);
    if (opts.cls) node.className = opts.cls;
    if (opts.text !== undefined) node.textContent = String(opts.text);
    for (const [k, v] of Object.entries(opts.attrs || {})) node.setAttribute(k, String(v));
    for (const c of children) if (c) node.append(c);
    return node;
  }
  function clear(node) { node.replaceChildren(); }

  // -- Markdown from sources, as elements around text nodes ---------------------------------------
  // Passages keep their source's Markdown. Each line is read for a heading ("## Worn items") or a
  // list item ("- ", "1. "), and inside it for **strong**, *emphasis* / _emphasis_ and `code`.
  // The markup characters are left out; every shown character keeps its offset in the original
  // text, so a cited span given by offsets is marked exactly.
  // A mark's content holds no mark of its own kind ("**" in **strong**, "*" in *em*): each
  // opening scans to the next mark at most, so a line of "**- " renders in one pass, not one
  // pass per mark.
  const INLINE = /\*\*(?=\S)((?:(?!\*\*).)+?)(?<=\S)\*\*|__(?=\S)((?:(?!__).)+?)(?<=\S)__|(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=[^\s*])\*(?![\w*])|(?<![\w_])_(?=[^\s_])([^_]+?)(?<=[^\s_])_(?![\w_])|`([^`]+)`/g;
  const STYLE_OF_GROUP = [null, "strong", "strong", "em", "em", "code"];

  // A table row ("| Repair | Price |") and its delimiter row ("|---|---|").
  const TABLE_ROW = /^[ \t]*\|.*\|[ \t]*$/;
  const TABLE_RULE = /^[ \t]*\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*$/;
  const CELL_GAP = " · ";

  // Runs of text[from, end) with its inline marks (**strong**, *em*, `code`) left out.
  function inlineRuns(runs, text, from, end, block) {
    const body = text.slice(from, end);
    let pos = 0;
    for (const m of body.matchAll(INLINE)) {
      const g = m.findIndex((v, i) => i > 0 && v !== undefined);
      const inner = m[g];
      const open = m[0].indexOf(inner);
      if (m.index > pos) runs.push({ a: from + pos, b: from + m.index, style: block });
      runs.push({ a: from + m.index + open, b: from + m.index + open + inner.length,
        style: block || STYLE_OF_GROUP[g] });
      pos = m.index + m[0].length;
    }
    if (body.length > pos) runs.push({ a: from + pos, b: end, style: block });
  }

  // Runs [{a, b, style, text?}] covering what is shown of text; a run with ``text`` shows that
  // text instead of text.slice(a, b) (a list item's bullet, a table's cell gap; "" hides).
  // A table is shown row by row, cells apart, without its pipes and delimiter row.
  function markdownRuns(text) {
    const runs = [];
    let start = 0;
    for (const line of text.split("\n")) {
      const end = start + line.length;
      const last = end >= text.length;
      if (TABLE_RULE.test(line)) {  // hidden with its newline: no empty line in the table
        runs.push({ a: start, b: last ? end : end + 1, style: null, text: "" });
        start = end + 1;
        continue;
      }
      if (TABLE_ROW.test(line)) {
        const pipes = [...line.matchAll(/\|/g)].map((m) => start + m.index);
        pipes.forEach((p, i) => {
          const outer = i === 0 || i === pipes.length - 1;
          runs.push({ a: p, b: p + 1, style: null, text: outer ? "" : CELL_GAP });
          if (i + 1 < pipes.length) {
            let [a, b] = [p + 1, pipes[i + 1]];
            while (a < b && /\s/.test(text[a])) a++;
            while (b > a && /\s/.test(text[b - 1])) b--;
            if (a > p + 1) runs.push({ a: p + 1, b: a, style: null, text: "" });
            inlineRuns(runs, text, a, b, null);
            if (pipes[i + 1] > b) runs.push({ a: b, b: pipes[i + 1], style: null, text: "" });
          }
        });
        if (pipes[0] > start) runs.push({ a: start, b: pipes[0], style: null, text: "" });
        if (end > pipes[pipes.length - 1] + 1) runs.push({ a: pipes[pipes.length - 1] + 1, b: end, style: null, text: "" });
        runs.sort((x, y) => x.a - y.a);
      } else {
        let from = start;
        let block = null;
        const heading = /^#{1,6}[ \t]+/.exec(line);
        const bullet = /^([ \t]*)[-*+][ \t]+/.exec(line);
        if (heading) { from = start + heading[0].length; block = "strong"; }
        else if (bullet) {
          runs.push({ a: start, b: start + bullet[0].length, style: null, text: bullet[1] + "• " });
          from = start + bullet[0].length;
        }
        inlineRuns(runs, text, from, end, block);
      }
      if (!last) runs.push({ a: end, b: end + 1, style: null });  // the newline
      start = end + 1;
    }
    return runs;
  }

  // The text as Markdown, with [a, b) spans (offsets into the text) inside <mark>.
  function markdown(text, spans = []) {
    const cuts = new Set();
    for (const [a, b] of spans) { cuts.add(a); cuts.add(b); }
    const marked = (i) => spans.some(([a, b]) => a <= i && i < b);
    const frag = document.createDocumentFragment();
    let markNode = null;
    for (const run of markdownRuns(text)) {
      const points = [run.a, ...[...cuts].filter((c) => c > run.a && c < run.b).sort((x, y) => x - y), run.b];
      for (let i = 0; i + 1 < points.length; i++) {
        const [a, b] = [points[i], points[i + 1]];
        if (a === b && run.text === undefined) continue;
        const shown = run.text !== undefined ? (i === 0 ? run.text : "") : text.slice(a, b);
        if (!shown) continue;
        const node = run.style ? el(run.style, { cls: run.style === "strong" ? "md-h" : "", text: shown })
          : document.createTextNode(shown);
        if (marked(a)) {
          if (!markNode) { markNode = el("mark"); frag.append(markNode); }
          markNode.append(node);
        } else {
          markNode = null;
          frag.append(node);
        }
      }
    }
    return frag;
  }

  // A section path, title or heading as plain text: markup left out (never shown as "## Worn items").
  function plain(text) {
    return markdownRuns(String(text || "")).map((r) => r.text !== undefined ? r.text : String(text).slice(r.a, r.b))
      .join("").trim();
  }
  function sectionPath(parts) { return (parts || []).map(plain).filter(Boolean).join(" › "); }

  function safeLink(url) {
    if (typeof url !== "string") return null;
    try {
      const u = new URL(url);
      if ((u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password &&
          allowedHosts.has(u.host.toLowerCase())) return u.href;
    } catch (_) { /* not a URL: shown as text */ }
    return null;
  }

  // -- API --------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  function detailText(detail) {
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) return detail.map((d) => (d && d.msg) ? String(d.msg) : "invalid input").join("; ");
    return "the request failed";
  }

  async function api(method, path, body) {
    const key = sessionStorage.getItem(KEY);
    if (!key) { showSignIn("Please sign in."); throw new ApiError(401, "not signed in"); }
    const init = { method, headers: { "Authorization": "Bearer " + key } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try { resp = await fetch(path, init); } catch (_) { throw new ApiError(0, "The server cannot be reached."); }
    let data = null;
    try { data = await resp.json(); } catch (_) { data = null; }
    if (resp.status === 401) {
      sessionStorage.removeItem(KEY);
      showSignIn("The key was not accepted. Please sign in with a key this server knows.");
      throw new ApiError(401, "not signed in");
    }
    if (resp.status === 429) {
      const wait = resp.headers.get("Retry-After") || "a few";
      throw new ApiError(429, `Too many requests; try again in ${wait} seconds.`);
    }
    if (!resp.ok) throw new ApiError(resp.status, detailText(data && data.detail));
    return data;
  }

  function showError(target, err) {
    if (err instanceof ApiError && err.status === 401) return;
    clear(target);
    target.append(el("p", { cls: "error", text: err.message || "Something went wrong.", attrs: { role: "alert" } }));
  }

  // -- session ----------------------------------------------------------------------------------
  function showSignIn(message) {
    document.dispatchEvent(new CustomEvent("evidex:signout"));
    $("app").hidden = true;
    $("session").hidden = true;
    $("signin").hidden = false;
    const e = $("signin-error");
    e.textContent = message || "";
    e.hidden = !message;
    $("api-key").focus();
  }
  function showApp(session) {
    $("signin").hidden = true;
    $("app").hidden = false;
    $("session").hidden = false;
    // Whom the key signs in as: its configured name and tenant (GET /v1/session), never the key.
    // The session's name is its log label ("key:demo-customer", "jwt:..."): shown without the kind.
    const who = session && (String(session.name || "").replace(/^[a-z]+:/, "") || "an unnamed key");
    $("session-label").textContent = who ? `Signed in as ${who} (${session.tenant})` : "Signed in";
    $("question").focus();
    // ops.js: the Operators tab for admin keys (it asks the server again; this only shows the tab).
    document.dispatchEvent(new CustomEvent("evidex:session", { detail: { admin: !!(session && session.admin) } }));
  }
  // In the demo only (`make run` sets EVIDEX_DEMO_KEY, and the server suggests it only when the
  // configuration knows it): which key to sign in with.
  if (config.demo && config.demo.key) {
    const hint = $("demo-hint");
    hint.append("Local demo: sign in with the key ", el("code", { text: config.demo.key }),
      ` (${config.demo.name || "a demo key"}, tenant ${config.demo.tenant}).`);
    hint.hidden = false;
  }
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = $("api-key").value.trim();
    if (!key) return;
    $("api-key").value = "";
    signIn(key);
  });
  // A key is checked when it is typed (GET /v1/session), so a mistyped one never shows as signed in.
  async function signIn(key) {
    sessionStorage.setItem(KEY, key);
    let session;
    try {
      session = await api("GET", "/v1/session");
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;  // api() showed the sign-in form
      sessionStorage.removeItem(KEY);
      showSignIn(err.message || "The key could not be checked.");
      return;
    }
    showApp(session);
  }
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    clear($("answer")); clear($("hits")); closePassage();
    showSignIn("");
  });

  // -- views ------------------------------------------------------------------------------------
  function selectView(name) {
    for (const v of ["ask", "search"]) {
      $(v).hidden = v !== name;
      $("view-" + v).setAttribute("aria-pressed", String(v === name));
    }
    closePassage();
    $(name === "ask" ? "question" : "query").focus();
  }
  $("view-ask").addEventListener("click", () => selectView("ask"));
  $("view-search").addEventListener("click", () => selectView("search"));

  // -- answers ----------------------------------------------------------------------------------
  const MARKER = /\[(\d{1,3})\]/g;

  // Sentences of the answer that carry marker n, without their markers: what to highlight.
  function sentencesFor(answerText, n) {
    const out = [];
    const parts = answerText.split(/(?<=\])\s+/);
    for (const p of parts) {
      const refs = [...p.matchAll(MARKER)].map((m) => Number(m[1]));
      if (refs.includes(n)) {
        const s = p.replace(MARKER, "").trim();
        if (s) out.push(s);
      }
    }
    return out;
  }

  function citationOnly(c) {
    const keys = c.kind === "live"
      ? ["kind", "tool", "title", "parameters", "actor_parameters", "fetched_at", "content_sha256", "quote",
        "source_url"]
      : ["kind", "document_id", "version", "content_sha256", "passage", "quote", "start", "end",
        "heading_path", "anchor", "title", "source_url"];
    const out = {};
    for (const k of keys) if (c[k] !== undefined) out[k] = c[k];
    return out;
  }

  function chip(n, citation, highlights) {
    const label = `Source ${n}: ${plain(citation.title) || citation.document_id}`;
    const b = el("button", { cls: "chip", text: `[${n}]`,
      attrs: { type: "button", "aria-label": label, "aria-expanded": "false", "aria-controls": "passage" } });
    b.addEventListener("click", () => openPassage(citation, highlights, b));
    return b;
  }

  // -- handoff to a person ------------------------------------------------------------------------
  // This tab's conversation: the asker's questions and evidex's replies by status and trace id
  // only (never answer text, which quotes passages the person handed to may not be allowed to see).
  const conversation = [];

  function handoffButton(question) {
    const wrap = el("div", { cls: "handoff-send" });
    const b = el("button", { cls: "handoff-button", text: "Ask a person",
      attrs: { type: "button", id: "handoff-button" } });
    const status = el("p", { cls: "notice", attrs: { id: "handoff-status", role: "status" } });
    b.addEventListener("click", async () => {
      b.disabled = true;
      status.textContent = "Sending…";
      const traces = conversation.filter((t) => t.trace_id).map((t) => t.trace_id);
      try {
        const res = await api("POST", "/v1/handoff", { question, conversation, trace_ids: traces });
        b.textContent = "Sent";
        status.textContent = `Sent. Your reference: ${res.reference}`;
        status.setAttribute("data-reference", res.reference);
      } catch (err) {
        b.disabled = false;
        status.textContent = `Not sent: ${err.message}`;
      }
    });
    wrap.append(b, status);
    return wrap;
  }

  function remember(question, ans) {
    conversation.push({ role: "user", text: question });
    conversation.push({ role: "evidex", status: ans.status, trace_id: ans.trace_id || null });
    if (conversation.length > 50) conversation.splice(0, conversation.length - 50);
  }

  function renderAnswer(ans, question) {
    const box = $("answer");
    clear(box);
    if (ans.status === "declined") {
      const d = el("div", { cls: "declined", attrs: { "data-status": "declined" } });
      d.append(el("p", { cls: "answer-text", text: ans.text }));
      d.append(el("p", { cls: "reason", text: REASONS[ans.reason] || "The question was not answered.",
        attrs: { "data-reason": ans.reason || "" } }));
      if (ans.handoff) d.append(el("p", { cls: "handoff", text: ans.handoff }));
      if (ans.handoff_available) d.append(handoffButton(question));
      appendUntrustedNotice(d, ans.trace);
      appendRelated(d, ans.related);
      box.append(d);
      return;
    }
    const shown = numberedAsShown(ans);
    const byN = new Map(shown.citations.map((c) => [c.n, c]));
    const p = el("p", { cls: "answer-text", attrs: { "data-status": "answered" } });
    let last = 0;
    for (const m of shown.text.matchAll(MARKER)) {
      p.append(markdown(shown.text.slice(last, m.index)));
      const n = Number(m[1]);
      const c = byN.get(n);
      p.append(c ? chip(n, c, sentencesFor(shown.text, n)) : document.createTextNode(m[0]));
      last = m.index + m[0].length;
    }
    p.append(markdown(shown.text.slice(last)));
    box.append(p);
    // One line per source: its chip, then what it is, said once ("[1] Returns policy › Worn
    // items"; a heading path that starts with the title does not repeat it).
    const list = el("ul", { cls: "sources", attrs: { "aria-label": "Sources" } });
    for (const c of shown.citations) {
      const li = el("li", { attrs: { "data-n": c.n } });
      li.append(chip(c.n, c, sentencesFor(shown.text, c.n)), " ", el("span", { text: sourceLine(c) }));
      list.append(li);
    }
    box.append(el("h3", { text: "Sources" }), list);
    appendUntrustedNotice(box, ans.trace);
  }

  function sourceLine(c) {
    const title = plain(c.title) || c.document_id || c.tool || "source";
    if (c.kind === "live") return `${title} — live lookup, ${c.fetched_at}`;
    const path = (c.heading_path || []).map(plain).filter(Boolean);
    if (path.length && path[0] === title) path.shift();
    return path.length ? `${title} › ${path.join(" › ")}` : title;
  }

  // The answer's sources numbered 1..k in the order the answer shows them, without gaps: a source
  // left out (flagged untrusted, over the context budget) keeps its number in the API's answer,
  // and "[2]" with no [1] reads as a missing source. The left-out one is described in words.
  function numberedAsShown(ans) {
    const order = [];
    const known = new Set(ans.citations.map((c) => c.n));
    for (const m of ans.text.matchAll(MARKER)) {
      const n = Number(m[1]);
      if (known.has(n) && !order.includes(n)) order.push(n);
    }
    for (const c of ans.citations) if (!order.includes(c.n)) order.push(c.n);
    const shownN = new Map(order.map((n, i) => [n, i + 1]));
    const text = ans.text.replace(MARKER, (m, d) => shownN.has(Number(d)) ? `[${shownN.get(Number(d))}]` : m);
    const citations = ans.citations.map((c) => ({ ...c, n: shownN.get(c.n) })).sort((a, b) => a.n - b.n);
    return { text, citations };
  }

  // Passages shown beside a declined answer (the answer's ``related``, when the server sends
  // it): never an answer, only where the reader might look.
  function appendRelated(target, related) {
    if (!Array.isArray(related) || !related.length) return;
    const sec = el("section", { cls: "related", attrs: { "aria-label": "Related passages (not an answer)" } });
    sec.append(el("h3", { text: "Not an answer: passages that may be related" }));
    const ul = el("ul");
    for (const r of related.slice(0, 3)) {
      const li = el("li", { cls: "related-item" });
      li.append(el("strong", { text: sourceLine(r) }));
      const open = el("button", { cls: "secondary", text: "Open passage",
        attrs: { type: "button", "aria-controls": "passage", "aria-expanded": "false" } });
      const c = citationOnly(r);
      open.addEventListener("click", () => openPassage(c, [], open));
      li.append(" ", open);
      ul.append(li);
    }
    sec.append(ul);
    target.append(sec);
  }

  function appendUntrustedNotice(target, trace) {
    const dropped = ((trace && trace.dropped) || []).filter((d) => d.why === "flagged_untrusted");
    if (dropped.length) {
      const one = dropped.length === 1;
      target.append(el("p", { cls: "notice", attrs: { "data-left-out": dropped.length },
        text: `${one ? "One matching source was" : `${dropped.length} matching sources were`} left out: ` +
              `${one ? "it contains" : "they contain"} instruction-like text, so ${one ? "it is" : "they are"} ` +
              "not used for answers (search shows it marked untrusted)." }));
    }
  }

  $("ask-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("question").value.trim();
    if (!q) return;
    closePassage();
    const box = $("answer");
    clear(box);
    box.append(el("p", { cls: "notice", text: "Answering…" }));
    try {
      const ans = await api("POST", "/v1/answer", { question: q });
      renderAnswer(ans, q);
      remember(q, ans);
      // ops.js: the feedback buttons under the answer, which name it by its trace id.
      document.dispatchEvent(new CustomEvent("evidex:answer", { detail: { trace_id: ans.trace_id, status: ans.status } }));
    } catch (err) { showError(box, err); }
  });

  // -- search -----------------------------------------------------------------------------------
  function renderHits(res) {
    const box = $("hits");
    clear(box);
    if (!res.hits.length) {
      box.append(el("p", { cls: "notice", attrs: { "data-empty": "true" },
        text: "No passage in the documents available to you matches these words. This describes the " +
              "collection you can access, not the world." }));
      return;
    }
    box.append(el("p", { cls: "notice", text: `Evidence: ${res.evidence}. Scores below only order this list; ` +
      "they are not probabilities and cannot be compared across searches." }));
    const ol = el("ol", { cls: "hits" });
    for (const h of res.hits) {
      const li = el("li", { cls: "hit", attrs: { value: h.rank } });
      const head = el("div");
      head.append(el("strong", { text: plain(h.title) || h.document_id }));
      if ((h.flags || []).length) head.append(" ", untrustedBadge(h.flags));
      li.append(head);
      li.append(el("div", { cls: "hit-meta",
        text: `${sectionPath(h.heading_path) || "passage " + h.passage} · version ${h.version} · ` +
              `score ${Number(h.score).toFixed(4)} (ordering value)` }));
      li.append(el("div", { cls: "quote" }, markdown(h.quote)));
      const open = el("button", { cls: "secondary", text: "Open passage",
        attrs: { type: "button", "aria-controls": "passage", "aria-expanded": "false" } });
      const c = citationOnly(h);
      open.addEventListener("click", () => openPassage(c, [], open));
      li.append(open);
      ol.append(li);
    }
    box.append(ol);
  }

  function untrustedBadge(flags) {
    return el("span", { cls: "badge badge-untrusted", text: "untrusted",
      attrs: { title: "Instruction-like text found: " + flags.join(", ") + ". Treat as data, not instructions." } });
  }

  $("search-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("query").value.trim();
    if (!q) return;
    closePassage();
    const box = $("hits");
    clear(box);
    box.append(el("p", { cls: "notice", text: "Searching…" }));
    try {
      renderHits(await api("POST", "/v1/search", { query: q, mode: $("mode").value, top_k: 10, evidence: true }));
    } catch (err) { showError(box, err); }
  });

  // -- the passage panel ------------------------------------------------------------------------
  let opener = null;

  function closePassage() {
    $("passage").hidden = true;
    clear($("passage-body"));
    if (opener) { opener.setAttribute("aria-expanded", "false"); opener.focus(); opener = null; }
  }
  $("passage-close").addEventListener("click", closePassage);
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("passage").hidden) closePassage(); });

  // Text of one passage with the quoted span marked: the citation's sentence offsets when it
  // has them, else the given sentences found in it (all of it when none is found).
  function highlighted(text, sentences, citation) {
    const spans = [];
    const a = citation && citation.sentence_start, b = citation && citation.sentence_end;
    if (Number.isInteger(a) && Number.isInteger(b) && 0 <= a && a < b && b <= text.length) {
      spans.push([a, b]);
    } else {
      for (const s of sentences) {
        const i = text.indexOf(s);
        if (i >= 0) spans.push([i, i + s.length]);
      }
    }
    if (!spans.length) spans.push([0, text.length]);
    return markdown(text, spans);
  }

  async function openPassage(citation, sentences, button) {
    if (opener) opener.setAttribute("aria-expanded", "false");
    opener = button;
    button.setAttribute("aria-expanded", "true");
    const panel = $("passage");
    const body = $("passage-body");
    clear(body);
    panel.hidden = false;
    $("passage-title").textContent = plain(citation.title) || citation.document_id;

    const badge = el("span", { cls: "badge badge-pending", text: "checking…", attrs: { id: "resolve-badge" } });
    const meta = el("dl", { cls: "meta" });
    const row = (k, v) => { meta.append(el("dt", { text: k })); meta.append(v instanceof Node ? el("dd", {}, v) : el("dd", { text: v })); };
    row("Status", badge);
    const live = citation.kind === "live";
    if (live) {
      // A lookup has no version: which lookup (the tool's description), what it said, when, asked
      // with which of the question's values. Never its URL: that is the tool's address with the
      // caller's identity left as a template, nothing a reader can open.
      row("Kind", "live lookup");
      row("Lookup", plain(citation.title) || citation.tool);
      row("Fetched", citation.fetched_at);
      const params = Object.entries(citation.parameters || {}).map(([k, v]) => `${k} = ${v}`);
      row("Asked with", params.join(", ") || "no parameters");
      if ((citation.actor_parameters || []).length) {
        row("Your identity", `${citation.actor_parameters.join(", ")} (from your sign-in, not shown)`);
      }
    } else {
      row("Section", sectionPath(citation.heading_path) || `passage ${citation.passage}`);
      row("Version", citation.version);
    }
    row("Fingerprint", String(citation.content_sha256 || "").slice(0, 12));
    const href = live ? null : safeLink(citation.source_url);
    if (href) {
      row("Source", el("a", { text: href, attrs: { href, rel: "noopener noreferrer nofollow", target: "_blank" } }));
    } else if (citation.source_url && !live) {
      row("Source", `${citation.source_url} (not linked: host not on the allowlist)`);
    }
    body.append(meta);
    const section = el("div", { cls: "section-text", attrs: { "aria-label": "Section text" } });
    body.append(section);
    panel.focus();

    // The badge: does the citation still hold now, for this key?
    api("POST", "/v1/resolve", citationOnly(citation)).then((r) => {
      const [text, cls] = BADGES[r.ok ? "current" : r.reason] || ["unavailable", "badge-unavailable"];
      badge.textContent = text;
      badge.className = "badge " + cls;
      badge.setAttribute("data-state", r.ok ? "current" : r.reason);
      if (!r.ok && r.detail) badge.title = r.detail;
    }).catch((err) => { badge.textContent = "not checked"; badge.title = err.message || ""; });

    if (live) {
      section.append(el("span", { cls: "cited" }, highlighted(citation.quote, sentences)));
      return;
    }
    // The section: every passage of the document under the cited heading, the cited one marked.
    let passages = null;
    try {
      const doc = await api("GET", "/v1/documents/" + encodeURIComponent(citation.document_id));
      if (doc.version === citation.version) passages = doc.passages;
    } catch (_) { passages = null; }
    const key = JSON.stringify(citation.heading_path || []);
    const inSection = passages ? passages.filter((p) => JSON.stringify(p.heading_path) === key) : [];
    if (!inSection.some((p) => p.passage === citation.passage)) {
      section.append(el("span", { cls: "cited" }, highlighted(citation.quote, sentences, citation)));
      return;
    }
    inSection.forEach((p, i) => {
      if (i) section.append("\n\n");
      const part = el("span", { cls: p.passage === citation.passage ? "cited" : "" });
      if (p.passage === citation.passage) {
        if ((p.flags || []).length) part.append(untrustedBadge(p.flags), " ");
        part.append(highlighted(p.quote, sentences, p.quote === citation.quote ? citation : null));
      } else {
        part.append(markdown(p.quote));
      }
      section.append(part);
    });
  }

  // -- start ------------------------------------------------------------------------------------
  // A reload keeps the tab's key: it is checked again, and says again whom it signs in as.
  if (sessionStorage.getItem(KEY)) signIn(sessionStorage.getItem(KEY)); else showSignIn("");
})();
