// evidex web page, the people who run it: feedback on every answer, and the Operators tab.
// As in app.js, every piece of data is rendered with textContent (never innerHTML): questions,
// notes, quotes, source ids and error messages are untrusted text.
// app.js tells this file what happens through three events on document: "evidex:session" (signed
// in; detail.admin), "evidex:signout", and "evidex:answer" (detail.trace_id, detail.status).
// The tab is shown to admin keys only; what it lists comes from admin-only endpoints (403
// otherwise), each confined by the server to the key's own tenant.
"use strict";

(() => {
  const KEY = "evidex.apiKey";
  const $ = (id) => document.getElementById(id);

  function el(tag, opts = {}, ...children) {
    const node = document.createElement(tag);
    if (opts.cls) node.className = opts.cls;
    if (opts.text !== undefined && opts.text !== null) node.textContent = String(opts.text);
    for (const [k, v] of Object.entries(opts.attrs || {})) node.setAttribute(k, String(v));
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  async function call(method, path, body) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new Error("not signed in");
    const init = { method, headers: { "Authorization": "Bearer " + key } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try { resp = await fetch(path, init); } catch (_) { throw new Error("The server cannot be reached."); }
    let data = null;
    try { data = await resp.json(); } catch (_) { data = null; }
    if (resp.status === 429) throw new Error(`Too many requests; try again in ${resp.headers.get("Retry-After") || "a few"} seconds.`);
    if (!resp.ok) {
      const d = data && data.detail;
      throw new Error(typeof d === "string" ? d : Array.isArray(d) ? d.map((x) => x && x.msg).join("; ") : "the request failed");
    }
    return data;
  }

  // -- feedback under each answer ---------------------------------------------------------------
  function feedbackBox(traceId) {
    const box = el("div", { cls: "feedback", attrs: { role: "group", "aria-label": "Was this answer helpful?" } });
    const note = el("input", { attrs: { type: "text", maxlength: 1000, id: "feedback-note",
      "aria-label": "Note (optional)", placeholder: "Optional note for the team" } });
    const status = el("p", { cls: "notice", attrs: { id: "feedback-status", role: "status" } });
    const buttons = [["helpful", "Helpful"], ["not_helpful", "Not helpful"]].map(([rating, label]) => {
      const b = el("button", { cls: "secondary", text: label,
        attrs: { type: "button", "data-rating": rating, id: "feedback-" + rating.replace("_", "-") } });
      b.addEventListener("click", async () => {
        for (const x of buttons) x.disabled = true;
        status.textContent = "Sending…";
        const body = { trace_id: traceId, rating };
        if (note.value.trim()) body.note = note.value.trim();
        try {
          await call("POST", "/v1/feedback", body);
          status.textContent = `Thank you: recorded as ${label.toLowerCase()}.`;
          status.setAttribute("data-recorded", rating);
          note.disabled = true;
        } catch (err) {
          for (const x of buttons) x.disabled = false;
          status.textContent = `Not recorded: ${err.message}`;
        }
      });
      return b;
    });
    box.append(el("span", { text: "Was this helpful?" }), ...buttons, note, status);
    return box;
  }

  document.addEventListener("evidex:answer", (ev) => {
    const traceId = ev.detail && ev.detail.trace_id;
    if (typeof traceId === "string" && /^[0-9a-f]{32}$/.test(traceId)) $("answer").append(feedbackBox(traceId));
  });

  // -- the Operators tab --------------------------------------------------------------------------
  const VIEWS = ["ask", "search"];

  function hideOps() {
    $("ops").hidden = true;
    $("view-ops").setAttribute("aria-pressed", "false");
  }
  function showOps() {
    for (const v of VIEWS) {
      $(v).hidden = true;
      $("view-" + v).setAttribute("aria-pressed", "false");
    }
    $("passage").hidden = true;
    $("ops").hidden = false;
    $("view-ops").setAttribute("aria-pressed", "true");
    load();
  }
  function clearOps() {
    for (const part of document.querySelectorAll("#ops .ops-body")) part.replaceChildren();
    $("ops-tenant").textContent = "";
  }
  document.addEventListener("evidex:session", (ev) => {
    const admin = !!(ev.detail && ev.detail.admin);
    $("view-ops").hidden = !admin;
    if (!admin) { hideOps(); clearOps(); }
  });
  document.addEventListener("evidex:signout", () => { $("view-ops").hidden = true; hideOps(); clearOps(); });
  $("view-ops").addEventListener("click", showOps);
  for (const v of VIEWS) $("view-" + v).addEventListener("click", hideOps);
  $("ops-refresh").addEventListener("click", load);

  function table(headers, rows) {
    const t = el("table", { cls: "ops" });
    t.append(el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { text: h, attrs: { scope: "col" } })))));
    const body = el("tbody");
    for (const cells of rows) body.append(el("tr", {}, ...cells.map((c) => c instanceof Node ? el("td", {}, c) : el("td", { text: c }))));
    t.append(body);
    return t;
  }
  function empty(text) { return el("p", { cls: "notice", text, attrs: { "data-empty": "true" } }); }
  function when(iso) { return iso ? String(iso).replace("T", " ").replace(/(:\d\d)?\+00:00$/, " UTC") : "—"; }

  function counts(c) {
    const keys = ["added", "superseded", "removed", "unchanged", "errors"];
    const parts = keys.filter((k) => c && c[k] !== undefined).map((k) => `${k} ${c[k]}`);
    for (const [k, v] of Object.entries(c || {})) if (!keys.includes(k) && v) parts.push(`${k} ${v}`);
    return parts.join(", ") || "no changes";
  }
  function run(r, what) {
    if (!r) return el("span", { cls: "notice", text: `no ${what} recorded` });
    const s = el("div");
    s.append(el("span", { cls: r.ok ? "state-ok" : "state-bad", text: r.ok ? "ok" : `${r.problems} problem(s)` }),
      ` ${when(r.ended_at)}`, el("br"), counts(r.counts));
    if (r.first_problem) s.append(el("br"), el("span", { cls: "state-bad", text: r.first_problem }));
    return s;
  }

  // Who was told about the source's latest findings: one line per route the notice went on.
  function findings(f) {
    const parts = ["new", "changed", "removed"].filter((k) => f && f[k]).map((k) => `${f[k]} ${k}`);
    if (f && f.conflicts) parts.push(`${f.conflicts} conflict(s)`);
    return parts.join(", ") || "findings";
  }
  function told(notices) {
    const d = el("div", { cls: "owner-told" });
    if (!notices || !notices.length) {
      d.append(el("span", { cls: "notice", text: "owner not told of anything yet" }));
      return d;
    }
    d.append(el("span", { text: `Told ${notices[0].owner} of ${findings(notices[0].findings)}:` }));
    for (const n of notices) {
      const line = el("div", { attrs: { "data-delivered": n.delivered ? "yes" : "no" } });
      line.append(`${n.route} ${when(n.sent_at)} `, el("span", {
        cls: n.delivered ? "state-ok" : "state-bad", text: n.delivered ? "delivered" : "not delivered" }));
      if (!n.delivered && n.error) line.append(el("br"), el("span", { cls: "state-bad", text: n.error }));
      d.append(line);
    }
    return d;
  }
  // A drift check that found the source changed since its last sync: the source is stale.
  function drift(s) {
    const d = el("div");
    const c = (s.last_drift && s.last_drift.counts) || {};
    const changes = (c.new || 0) + (c.changed || 0) + (c.removed || 0);
    if (changes) {
      d.append(el("strong", { cls: "state-bad", text: `stale: ${changes} change(s) since the last sync`,
        attrs: { "data-stale": "true" } }), el("br"));
    }
    d.append(run(s.last_drift, "drift check"), told(s.owner_told));
    return d;
  }

  function renderSources(box, data) {
    if (!data.sources.length) return box.append(empty("No sources are configured or recorded for this tenant."));
    box.append(table(["Source", "Owner", "Last sync", "Next sync", "Last drift check, owner told", "Next drift check"],
      data.sources.map((s) => [
        el("span", { text: `${s.id}${s.type ? ` (${s.type})` : ""}`, attrs: { "data-source": s.id } }),
        s.owner || "—", run(s.last_sync, "sync"),
        s.next_sync ? `${when(s.next_sync)} (${s.sync_schedule})` : "on request only",
        drift(s),
        s.next_drift_check ? `${when(s.next_drift_check)} (${s.drift_schedule})` : "—"])));
  }

  function side(s) {
    const d = el("div", { cls: "conflict-side" });
    d.append(el("div", { cls: "meta", text: `${s.document_id}, version ${s.version}, passage ${s.passage}` }));
    d.append(el("blockquote", { text: s.sentence === null ? "(a document this key may not read)" : s.sentence }));
    d.append(el("div", {}, "States: ", el("strong", { text: s.value })));
    return d;
  }
  function renderConflicts(box, data) {
    if (!data.conflicts.length) return box.append(empty("No open conflicts."));
    for (const c of data.conflicts) {
      const item = el("div", { cls: "conflict", attrs: { "data-conflict": c.id } });
      item.append(el("div", { cls: "meta", text: `#${c.id} · ${c.kind}` +
        (c.subject.length ? ` · about: ${c.subject.join(", ")}` : "") + ` · found ${when(c.detected_at)}` }));
      item.append(el("div", { cls: "conflict-sides" }, ...c.sides.map(side)));
      box.append(item);
    }
  }
  function renderHandoffs(box, data) {
    if (!data.handoffs.length) return box.append(empty("No question was sent to a person."));
    box.append(table(["When", "Question", "Reference", "Delivered"], data.handoffs.map((h) => [
      when(h.sent_at), h.question, h.reference,
      el("span", { cls: h.delivered ? "state-ok" : "state-bad", text: h.delivered ? "yes" : "no" })])));
  }
  function renderCitations(box, data) {
    if (!data.citations.length) {
      return box.append(empty(`Every passage cited by the last ${data.answers_read} answers still resolves.`));
    }
    box.append(table(["Document", "Cited version", "Now", "Why", "Answers", "Last cited"], data.citations.map((c) => [
      c.document_id, c.cited_version, c.current_version || "—",
      c.why === "removed" ? "document removed" : "document changed", String(c.answers), when(c.last_cited)])));
  }
  function renderFeedback(box, data) {
    if (!data.feedback.length) return box.append(empty("No feedback yet."));
    box.append(table(["When", "Rating", "Question", "Answer", "Note"], data.feedback.map((f) => [
      when(f.given_at),
      el("span", { cls: f.rating === "helpful" ? "state-ok" : "state-bad", text: f.rating.replace("_", " ") }),
      f.answer ? f.answer.question : "—",
      f.answer ? (f.answer.status === "declined" ? `declined (${f.answer.reason})` : "answered") : "—",
      f.note || ""])));
    box.append(el("p", { cls: "hint", text: "As draft evaluation cases: evidex feedback export --since DATE " +
      "--tenant TENANT --like CASEFILE (or --ingest FOLDER) --out cases.yaml" }));
  }

  function pct(v) { return v === null || v === undefined ? "—" : `${Math.round(v * 1000) / 10} %`; }
  // A gate check at least some share (kind "min") is a rate; at most some count ("max") a count.
  function figure(v, kind) { return kind === "min" ? pct(v) : v === null || v === undefined ? "—" : String(v); }
  function renderEvaluation(box, data) {
    if (!data.evaluations.length) {
      return box.append(empty("No evaluation recorded: evidex eval --cases FILE --record TENANT records one."));
    }
    const e = data.evaluations[0];
    const head = el("p", { cls: "meta", attrs: { "data-passed": e.passed ? "yes" : "no" } });
    head.append(el("span", { cls: e.passed ? "state-ok" : "state-bad", text: e.passed ? "gate passed" : "gate failed" }),
      ` · ${e.name} · ran ${when(e.started_at)} to ${when(e.ended_at)}`);
    const t = e.totals || {};
    head.append(el("br"), `${t.passed} of ${t.cases} cases passed; answerable cited ${pct(t.answerable_rate)}; ` +
      `unanswerable declined ${pct(t.unanswerable_declined_rate)}; access violations ${t.access_violations}`);
    box.append(head);
    box.append(el("h4", { text: "Gate" }), table(["Check", "Value", "Limit", "Result"], (e.gate || []).map((c) => [
      c.name, figure(c.value, c.kind), `${c.kind === "max" ? "at most" : "at least"} ${figure(c.limit, c.kind)}`,
      el("span", { cls: c.passed ? "state-ok" : "state-bad", text: c.passed ? "pass" : "fail" })])));
    const cats = Object.entries(e.categories || {});
    box.append(el("h4", { text: "Per category" }), table(
      ["Category", "Cases", "Passed", "Answerable cited", "Unanswerable declined"], cats.map(([name, f]) => [
        name, String(f.cases), String(f.passed),
        f.answerable ? `${f.answerable_cited}/${f.answerable} (${pct(f.answerable_rate)})` : "—",
        f.unanswerable ? `${f.unanswerable_declined}/${f.unanswerable} (${pct(f.unanswerable_declined_rate)})` : "—"])));
  }

  const PARTS = [
    ["ops-sources", "/v1/ops/sources", renderSources],
    ["ops-conflicts", "/v1/conflicts?status=open", renderConflicts],
    ["ops-handoffs", "/v1/ops/handoffs", renderHandoffs],
    ["ops-citations", "/v1/ops/citations", renderCitations],
    ["ops-feedback", "/v1/feedback?limit=50", renderFeedback],
    ["ops-evaluation", "/v1/ops/evaluations?limit=1", renderEvaluation],
  ];

  async function load() {
    try {
      const session = await call("GET", "/v1/session");
      $("ops-tenant").textContent = `tenant ${session.tenant}`;
    } catch (_) { /* each part says what failed */ }
    await Promise.all(PARTS.map(async ([id, path, render]) => {
      const box = $(id).querySelector(".ops-body");
      box.replaceChildren(el("p", { cls: "notice", text: "Loading…" }));
      try {
        const data = await call("GET", path);
        box.replaceChildren();
        render(box, data);
        box.setAttribute("data-loaded", "true");
      } catch (err) {
        box.replaceChildren(el("p", { cls: "error", text: err.message, attrs: { role: "alert" } }));
      }
    }));
  }
})();
