"use strict";
// The Hindsight console: every call carries the token in an Authorization header (no cookies), and
// every value from memory is put on the page as text, never as markup.
(function () {
  const KEY = "hindsight.console.token";
  const $ = (id) => document.getElementById(id);
  let current = "banks";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "onclick" || name === "onsubmit") node[name] = value;
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function validity(f) {
    const from = (f.valid_from || "").slice(0, 10);
    const end = (from || "?") + " to " + (f.valid_to || "").slice(0, 10);
    if (f.superseded_by) return end + " (superseded by " + f.superseded_by + ")";
    return f.valid_to ? end + " (invalidated)" : (from ? "current, since " + from : "current");
  }

  function table(headers, rows, rowClass) {
    return el("table", {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((cells, i) => el("tr", { class: rowClass ? rowClass(i) : null },
        cells.map((c) => el("td", {}, c))))));
  }

  function status(text, isError) {
    $("status").textContent = text || "";
    $("status").className = isError ? "error" : "";
  }

  async function api(path, body) {
    const headers = { Authorization: "Bearer " + sessionStorage.getItem(KEY) };
    const init = { headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const reply = await fetch("/console/api/" + path, init);
    const data = await reply.json().catch(() => ({ error: reply.statusText }));
    if (!reply.ok) {
      const error = new Error(data.error || ("HTTP " + reply.status));
      error.status = reply.status;
      throw error;
    }
    return data;
  }

  const bank = () => $("bank").value;
  const bankPath = (view, params) => {
    const query = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v !== "" && v !== undefined));
    return "banks/" + encodeURIComponent(bank()) + "/" + view + (query.toString() ? "?" + query : "");
  };
  const when = (meta) => (meta && meta.time ? meta.time.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "");
  const tags = (meta) => ((meta && meta.tags) || []).map((t) => el("span", { class: "tag" }, t));
  const fixed = (n, digits) => (typeof n === "number" ? n.toFixed(digits === undefined ? 3 : digits) : "");

  function show(...nodes) {
    $("view").replaceChildren(...nodes);
  }

  function filterForm(fields, onSubmit) {
    const form = el("form", { class: "filters" });
    for (const [name, label, type] of fields) {
      const input = type === "source"
        ? el("select", { name }, ["", "user", "agent", "tool", "external"].map((s) => el("option", { value: s }, s || "any")))
        : el("input", { name, type: type || "text", "aria-label": label });
      form.append(el("label", {}, label, input));
    }
    form.append(el("button", { type: "submit" }, "Apply"));
    form.onsubmit = (event) => {
      event.preventDefault();
      const values = {};
      for (const item of form.elements) {
        if (!item.name) continue;
        values[item.name] = item.type === "checkbox" ? (item.checked ? "1" : "") : item.value;
      }
      status("loading…");
      Promise.resolve(onSubmit(values)).then(() => status(""), (error) => status(error.message, true));
    };
    return form;
  }

  async function act(action, body, question) {
    if (!window.confirm(question)) return false;
    try {
      const result = await api(bankPath(action), body);
      status(action + ": " + JSON.stringify(result));
      return true;
    } catch (error) {
      status(action + " failed: " + error.message, true);
      return false;
    }
  }

  const views = {
    async banks() {
      const data = await api("banks");
      const rows = [];
      for (const id of data.banks) {
        const c = await api("banks/" + encodeURIComponent(id) + "/counts");
        rows.push([id, c.episodic.turns, c.episodic.turns_with_archived, c.episodic.episodes,
          c.semantic.entities, c.semantic.open_reviews, c.reflect.lessons, c.outbox.waiting,
          c.outbox.dead_letters]);
      }
      show(el("h2", {}, "Banks"),
        table(["bank", "turns (episodic)", "with archived", "episodes (episodic)", "entities (semantic)",
          "open reviews (semantic)", "lessons (reflect)", "outbox waiting", "dead letters (outbox)"], rows));
    },

    async timeline() {
      const list = el("div", { id: "timeline-list" });
      const load = async (values) => {
        const data = await api(bankPath("timeline", values));
        const turns = data.turns;
        list.replaceChildren(el("p", { class: "muted" }, turns.length + " turns"), table(
          ["time", "session", "speaker", "text", "source", "agent", "tags", ""],
          turns.map((t) => [when(t.meta), t.session_id || "", t.speaker || (t.role || "").replace("ROLE_", "").toLowerCase(), t.text,
            ((t.meta && t.meta.source) || "").replace("SOURCE_", "").toLowerCase(), (t.meta && t.meta.agent) || "", tags(t.meta),
            t.archived
              ? el("button", { type: "button", onclick: async () => {
                if (await act("restore", { ids: [t.id], reason: "restored from the console" }, "Restore this turn?")) load(values);
              } }, "Restore")
              : el("span", {},
                el("button", { type: "button", onclick: async () => {
                  if (await act("invalidate", { ids: [t.id], reason: "no longer holds (console)" }, "Mark this turn as no longer true? It stays in history; recall shows it as outdated.")) load(values);
                } }, "No longer true"),
                el("button", { type: "button", class: "danger", onclick: async () => {
                  if (await act("forget", { ids: [t.id], reason: "forgotten from the console" }, "Forget this turn? It is archived and leaves recall.")) load(values);
                } }, "Forget"))]),
          (i) => (turns[i].archived ? "archived" : null)));
      };
      const form = filterForm([["q", "search"], ["session", "session"], ["tag", "tag"], ["agent", "agent"], ["source", "source", "source"],
        ["from", "from", "datetime-local"], ["to", "to", "datetime-local"], ["archived", "archived too", "checkbox"]], load);
      show(el("h2", {}, "Timeline"), form, list);
      await load({});
    },

    async episodes() {
      const data = await api(bankPath("episodes"));
      show(el("h2", {}, "Episodes"), table(["recorded", "session", "situation", "action", "outcome", "lesson", "result"],
        data.episodes.map((e) => [(e.recorded_at || "").replace("T", " "), e.session_id || "", e.situation || "",
          e.action || "", e.outcome || "", e.lesson || "", (e.result || "").replace("OUTCOME_", "").toLowerCase()])));
    },

    async facts() {
      const list = el("div", { id: "facts-list" });
      const load = async (values) => {
        const data = await api(bankPath("facts", values));
        list.replaceChildren(table(["subject", "attribute", "value", "valid from", "state", "confidence", ""],
          data.facts.map((f) => {
            const chain = el("div", {});
            return [f.subject || "", f.attribute || "", el("div", {}, f.value || f.text, chain),
              (f.valid_from || "").replace("T", " "),
              validity(f), fixed(f.confidence, 2),
              el("button", { type: "button", onclick: async () => {
                const h = await api(bankPath("history", { record: f.id }));
                chain.replaceChildren(el("ol", { class: "history" }, h.records.map((r) =>
                  el("li", {}, r.value || r.text, " ", el("span", { class: "muted" },
                    validity(r))))));
              } }, "History")];
          })));
      };
      show(el("h2", {}, "Facts"), filterForm([["q", "about"]], load), list);
      await load({});
    },

    async entities() {
      const page = el("div", { id: "entity-page" });
      const open = async (name) => {
        const data = await api(bankPath("entity", { name }));
        const e = data.entity || {};
        page.replaceChildren(el("div", { class: "card" }, el("h3", {}, e.name + " (" + (e.type || "other") + ")"),
          el("p", { class: "muted" }, "aliases: " + (e.aliases || []).join(", ") + " · mentions: " + (e.mention_count || 0)),
          el("h3", {}, "Facts"), el("ul", {}, (data.facts || []).map((f) => el("li", {}, (f.attribute || "") + ": " + (f.value || f.text),
            el("span", { class: "muted" }, " " + validity(f))))),
          el("h3", {}, "Relations"), el("ul", {}, (e.relations || []).map((r) => el("li", {}, r.type + " → " + r.target))),
          el("h3", {}, "Mentions"), el("ul", {}, (data.mentions || []).map((t) => el("li", {}, t.text)))));
      };
      const load = async (values) => {
        const data = await api(bankPath("entities", values));
        list.replaceChildren(table(["name", "type", "mentions", "last seen"], data.entities.map((e) => [
          el("a", { href: "#", onclick: (event) => { event.preventDefault(); open(e.name); } }, e.name),
          e.type || "", e.mention_count || 0, (e.last_seen || "").replace("T", " ")])));
      };
      const list = el("div", {});
      show(el("h2", {}, "Entities"), filterForm([["prefix", "name starts with"]], load), list, page);
      await load({});
    },

    async lessons() {
      const data = await api(bankPath("lessons"));
      show(el("h2", {}, "Lessons"), table(["situation", "lesson", "confidence", "hits", "last hit", "weight (decay)"],
        data.lessons.map((l) => [l.situation || "", l.lesson || "", fixed(l.confidence, 2), l.hit_count || 0,
          (l.last_hit_at || "").replace("T", " "), fixed(l.weight === undefined ? 0 : l.weight, 2)])));
    },

    async reviews() {
      const data = await api(bankPath("reviews"));
      const decide = (item, decision) => async () => {
        const body = { review_id: item.id, decision, reason: decision + "d from the console" };
        if (await act("review", body, decision[0].toUpperCase() + decision.slice(1) + " this change?")) views.reviews();
      };
      const release = (item, decision) => async () => {
        const body = { ids: [item.turn.id], decision, reason: decision + "d from the console" };
        if (await act("quarantine", body, decision === "approve" ? "Release this turn into memory?"
          : "Keep this turn out for good?")) views.reviews();
      };
      show(el("h2", {}, "Review queue"),
        data.reviews.length === 0 ? el("p", { class: "muted", id: "queue-empty" }, "Nothing waits for review.") : "",
        table(["subject / attribute", "current", "candidate", "reason", "queued", ""], data.reviews.map((r) => [
          (r.current.subject || "") + " · " + (r.current.attribute || ""), r.current.value || r.current.text,
          r.candidate.value || r.candidate.text, r.reason, (r.created_at || "").replace("T", " "),
          el("span", {}, el("button", { type: "button", onclick: decide(r, "approve") }, "Approve"), " ",
            el("button", { type: "button", class: "danger", onclick: decide(r, "reject") }, "Reject"))])),
        el("h2", {}, "Held back by screening"),
        !data.quarantine_visible ? el("p", { class: "muted" }, "Held-back turns are shown to an admin credential.")
          : data.quarantined.length === 0 ? el("p", { class: "muted", id: "held-empty" }, "No turn is held back.")
          : table(["turn", "source", "found", "reason", "held", ""], data.quarantined.map((q) => [
            q.turn.text, ((q.turn.meta || {}).source || "").replace("SOURCE_", "").toLowerCase(),
            (q.screening || {}).kind || "", (q.screening || {}).reason || "", (q.quarantined_at || "").replace("T", " "),
            el("span", {}, el("button", { type: "button", onclick: release(q, "approve") }, "Approve"), " ",
              el("button", { type: "button", class: "danger", onclick: release(q, "reject") }, "Reject"))])));
    },

    async explain() {
      const out = el("div", { id: "explain-out" });
      const run = async (values) => {
        if (!values.q) return;
        const x = await api(bankPath("explain", values));
        const a = x.analysis;
        out.replaceChildren(
          el("div", { class: "card" }, el("h3", {}, "Query"),
            el("p", {}, "keywords: " + a.keywords.join(", ") + " · entities: " + (a.entities.join(", ") || "none") +
              " · time: " + (a.time_expression || "none") + (a.time_use ? " (" + a.time_use + ")" : "") +
              " · phrasings: " + a.rewrites.length)),
          el("h3", {}, "Each layer's candidates"),
          el("div", { class: "layers" }, x.layers.map((layer) => el("div", { class: "card layer", "data-layer": layer.layer },
            el("h3", {}, layer.layer + (layer.ok ? "" : " — " + layer.error) + " · " + layer.candidates.length + " in " + layer.elapsed_ms + " ms"),
            el("ol", {}, layer.candidates.slice(0, 10).map((c) => el("li", {}, fixed(c.score) + " " + c.kind + ": " + c.text.slice(0, 120))))))),
          el("h3", {}, "Fusion (" + x.fusion.method + ") and adjustments"),
          el("p", { class: "muted" }, "weights: recency " + x.adjustments.recency_weight + " (half-life " +
            x.adjustments.recency_half_life_days + " d), importance " + x.adjustments.importance_weight + ", confidence " +
            x.adjustments.confidence_weight + ", trust " + x.adjustments.trust_weight + ", time boost " + x.adjustments.time_boost +
            " · rerank: " + (x.rerank.on ? "head " + x.rerank.head : "off")),
          table(["#", "memory", "from layers (rank, score)", "recency", "importance", "confidence", "trust", "time boost", "score"],
            x.memories.map((m) => [m.position, m.kind + ": " + m.text.slice(0, 160),
              m.layers.map((l) => l.layer + " #" + l.rank + " " + fixed(l.score)).join(", "),
              fixed(m.factors.recency), fixed(m.factors.importance), fixed(m.factors.confidence), fixed(m.factors.trust),
              m.time_boosted ? "yes" : "", fixed(m.score)])),
          el("h3", {}, "Assembled context (" + x.context.tokens + " tokens)"), el("pre", {}, x.context.text));
      };
      show(el("h2", {}, "Recall explainer"), filterForm([["q", "query"]], run), out);
    },

    async purge() {
      const input = el("input", { id: "purge-confirm", "aria-label": "type the bank id" });
      show(el("h2", {}, "Purge bank"),
        el("p", {}, "Deletes every turn, episode, fact and lesson of ", el("b", {}, bank()), " for good, in every layer."),
        el("label", {}, "Type the bank id to confirm: ", input), " ",
        el("button", { type: "button", class: "danger", onclick: async () => {
          if (input.value !== bank()) { status("the confirmation does not match the bank id", true); return; }
          await act("purge", { confirm: input.value, reason: "purged from the console" }, "Purge " + bank() + " for good?");
        } }, "Purge"));
    },
  };

  async function open(view) {
    current = view;
    for (const button of document.querySelectorAll("#tabs button")) {
      button.classList.toggle("active", button.dataset.view === view);
    }
    if (view !== "banks" && !bank()) { show(el("p", { class: "muted" }, "No bank to show.")); return; }
    status("loading…");
    try {
      await views[view]();
      status("");
    } catch (error) {
      show(el("p", { class: "error" }, error.message));
      status(error.status === 401 ? "sign in again" : "", true);
    }
  }

  async function start() {
    const token = sessionStorage.getItem(KEY);
    if (!token) { $("signin").hidden = false; $("tabs").hidden = true; return; }
    try {
      const data = await api("banks");
      $("who").textContent = data.caller + (data.admin ? " (admin)" : "");
      $("bank").replaceChildren(...data.banks.map((b) => el("option", { value: b }, b)));
      $("signin").hidden = true;
      $("tabs").hidden = false;
      await open(current);
    } catch (error) {
      sessionStorage.removeItem(KEY);
      $("signin").hidden = false;
      $("signin-error").textContent = error.message;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-button").onclick = () => { sessionStorage.setItem(KEY, $("token").value.trim()); start(); };
    $("token").addEventListener("keydown", (event) => { if (event.key === "Enter") $("signin-button").click(); });
    $("signout").onclick = () => { sessionStorage.removeItem(KEY); location.reload(); };
    $("bank").onchange = () => open(current);
    for (const button of document.querySelectorAll("#tabs button")) button.onclick = () => open(button.dataset.view);
    start();
  });
})();
