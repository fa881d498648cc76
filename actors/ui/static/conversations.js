// Conversations: the list, one conversation's working turns and running summary, and what
// recall returns for a query.

import { ApiError, getJSON, postJSON } from "./api.js";
import { badge, count, h, message, replaceChildren, section } from "./dom.js";

function conversationHref(id, query) {
  const suffix = query ? `?${new URLSearchParams({ q: query })}` : "";
  return `#/conversations/${encodeURIComponent(id)}${suffix}`;
}

function turn(record) {
  return h(
    "li",
    { class: "turn" },
    h("p", { class: "turn-head" }, h("strong", {}, record.speaker), record.timestamp ? [" ", h("span", { class: "claim-meta" }, record.timestamp)] : null, " ", h("span", { class: "claim-meta" }, `#${record.turn_id}`)),
    h("p", {}, record.text),
  );
}

function recalled(result) {
  return [
    result.summary ? h("p", { class: "summary" }, h("strong", {}, "Summary: "), result.summary) : null,
    result.turns.length
      ? h(
          "ol",
          { class: "card-list" },
          result.turns.map((found) =>
            h(
              "li",
              { class: "card" },
              badge(found.tier),
              " ",
              h("span", { class: "score" }, `score ${found.score.toFixed(3)} · turn #${found.turn_id}`),
              h("p", {}, found.text),
            ),
          ),
        )
      : message("Recall found no turn for this query."),
    h("p", { class: "claim-meta" }, `${count(result.tokens)} tokens`),
  ];
}

function recallForm(id, query) {
  const form = h(
    "form",
    { class: "query-form", "aria-label": "Recall" },
    h("label", { for: "recall-text" }, "Recall for"),
    h("input", { id: "recall-text", name: "q", type: "search", value: query, required: true, autocomplete: "off" }),
    h("button", { type: "submit" }, "Recall"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = conversationHref(id, new FormData(form).get("q").trim());
  });
  return form;
}

async function renderList(main) {
  const list = await getJSON("browse/conversations");
  const heading = h("h1", { tabindex: "-1" }, "Conversations");
  replaceChildren(
    main,
    heading,
    list.length
      ? h(
          "ul",
          { class: "card-list" },
          list.map((item) => h("li", { class: "card" }, h("a", { href: conversationHref(item.conversation_id) }, item.conversation_id), ` — ${count(item.turns)} turns`)),
        )
      : message("This store has no conversation yet."),
  );
  return heading;
}

async function renderOne(main, id, query) {
  const page = await getJSON(`browse/conversations/${encodeURIComponent(id)}`);
  const heading = h("h1", { tabindex: "-1" }, `Conversation ${page.conversation_id}`);
  const results = h("div", { "aria-live": "polite" });
  replaceChildren(
    main,
    h("p", {}, h("a", { href: "#/conversations" }, "All conversations")),
    heading,
    h("p", { class: "memory-meta" }, `${count(page.turns)} turns: ${count(page.working_total)} working, ${count(page.episodic_turns)} episodic, ${count(page.consolidated_turns)} added to the store; ${count(page.evictions)} evictions.`),
    section("Recall", recallForm(page.conversation_id, query), results),
    section("Summary of earlier turns", h("p", { class: "summary" }, page.summary || "Nothing has left the working memory yet.")),
    section(
      `Working turns${page.working_total > page.working.length ? ` (the latest ${page.working.length})` : ""}`,
      page.working.length ? h("ol", { class: "turns" }, page.working.map(turn)) : message("The working memory is empty."),
    ),
  );
  if (query) {
    try {
      replaceChildren(results, recalled(await postJSON(`conversations/${encodeURIComponent(id)}/recall`, { query })));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      replaceChildren(results, message(error.message, "error"));
    }
  }
  return heading;
}

export function renderConversations(main, id, params) {
  return id ? renderOne(main, id, params.get("q") || "") : renderList(main);
}
