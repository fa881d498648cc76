// Search and ask: a search box with its mode, an ask box, and what came back — hits with their
// paths, or an answer with its citations, confidence, history notes and the agent's steps.

import { ApiError, postJSON } from "./api.js";
import { badge, breakable, h, memoryHref, message, replaceChildren, section, time, titleText, treeHref } from "./dom.js";

const SEARCH_MODES = [
  ["hybrid", "Hybrid (words and meaning)"],
  ["bm25", "BM25 (words)"],
  ["vector", "Vector (meaning)"],
  ["tree", "Tree (READMEs first)"],
  ["research", "Research (plan, search, reflect)"],
];
const ASK_MODES = [
  ["navigate", "Navigate the tree"],
  ["research", "Research (multi-hop)"],
];

/** Where a store path leads: a README to its directory, a memory file or node to its page. */
export function storeLink(path, label = path) {
  const readme = path.match(/^(.*?)\/?README\.md$/);
  const href = readme ? treeHref(`/${readme[1]}`) : memoryHref(path);
  return h("a", { href }, label);
}

/** A cited file as its title, with the directory it is filed in. */
function citation(path) {
  const parts = path.split("/");
  const name = parts.pop();
  const readme = name === "README.md";
  const label = readme ? `${parts[parts.length - 1] || "store"}/ (README)` : titleText(name.replace(/\.md$/, ""));
  return [storeLink(path, label), parts.length ? [" ", h("span", { class: "source" }, breakable(`${parts.join("/")}/`))] : null];
}

function select(id, label, options, chosen) {
  return [
    h("label", { for: id }, label),
    h(
      "select",
      { id, name: "mode" },
      options.map(([value, text]) => h("option", { value, selected: value === chosen }, text)),
    ),
  ];
}

function form(kind, query, mode) {
  const search = kind === "search";
  const id = search ? "search" : "ask";
  const element = h(
    "form",
    { class: "query-form", role: search ? "search" : null, "aria-label": search ? "Search the memory" : "Ask a question" },
    h("label", { for: `${id}-text` }, search ? "Search" : "Question"),
    h("input", {
      id: `${id}-text`,
      name: "q",
      type: search ? "search" : "text",
      value: query,
      required: true,
      autocomplete: "off",
      placeholder: search ? "words or a phrase" : "What would you like to know?",
    }),
    select(`${id}-mode`, "Mode", search ? SEARCH_MODES : ASK_MODES, mode),
    h("button", { type: "submit" }, search ? "Search" : "Ask"),
  );
  element.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(element);
    const params = new URLSearchParams({ q: data.get("q").trim(), mode: data.get("mode") });
    location.hash = `#/${kind}?${params}`;
  });
  return element;
}

function historyNotes(notes) {
  return h(
    "ul",
    { class: "notes" },
    notes.map((note) =>
      h(
        "li",
        {},
        `${note.subject} — ${note.attribute}: `,
        h("strong", {}, note.current_value),
        " replaced ",
        h("del", {}, note.superseded_value),
        " (recorded ",
        time(note.recorded_at),
        " in ",
        storeLink(note.superseded_source),
        "; superseded ",
        time(note.superseded_at),
        " by ",
        storeLink(note.current_source),
        ")",
      ),
    ),
  );
}

function hitList(hits) {
  if (!hits.length) return message("Nothing matched.");
  return h(
    "ol",
    { class: "card-list hits" },
    hits.map((hit) =>
      h(
        "li",
        { class: "card" },
        storeLink(hit.kind === "memory" ? `memory:${hit.chunk_id}` : hit.chunk_path),
        " ",
        badge(hit.kind),
        " ",
        h("span", { class: "score" }, `score ${hit.score.toFixed(3)}`),
        h("p", { class: "snippet" }, hit.text),
        hit.source ? h("p", { class: "source" }, hit.source) : null,
        hit.history.length ? historyNotes(hit.history) : null,
      ),
    ),
  );
}

export function answerView(result) {
  const percent = Math.round(result.confidence * 100);
  return h(
    "div",
    { class: "answer" },
    section(
      "Answer",
      h("p", { class: "answer-text" }, result.answer || "No answer was found in the memory."),
      h(
        "p",
        { class: "confidence" },
        h("label", { for: "confidence" }, "Confidence "),
        h("meter", { id: "confidence", min: 0, max: 1, low: 0.35, high: 0.7, optimum: 1, value: result.confidence }, `${percent}%`),
        ` ${percent}%`,
      ),
    ),
    section(
      "Citations",
      result.sources.length
        ? h("ol", { class: "citations" }, result.sources.map((path) => h("li", {}, citation(path))))
        : h("p", {}, "The answer cites no memory."),
    ),
    result.history.length ? section("History notes", historyNotes(result.history)) : null,
    result.notes ? h("p", { class: "notes-line" }, result.notes) : null,
    result.steps.length
      ? section(
          "Trajectory",
          h(
            "ol",
            { class: "trajectory" },
            result.steps.map((step) =>
              h(
                "li",
                { class: step.number === null ? "decision" : "call" },
                step.number === null ? null : h("span", { class: "step" }, `${step.number}`),
                h("strong", {}, step.action),
                step.target ? [" ", h("code", {}, step.target)] : null,
                step.detail ? ` ${step.detail}` : null,
              ),
            ),
          ),
        )
      : null,
  );
}

export async function renderSearch(main, kind, params) {
  const query = params.get("q") || "";
  const mode = params.get("mode") || (kind === "search" ? "hybrid" : "navigate");
  const results = h("div", { class: "results", "aria-live": "polite", "aria-busy": query ? "true" : "false" });
  const heading = h("h1", { tabindex: "-1" }, "Search and ask");
  replaceChildren(
    main,
    heading,
    h("div", { class: "query-forms" }, form("search", kind === "search" ? query : "", kind === "search" ? mode : "hybrid"), form("ask", kind === "ask" ? query : "", kind === "ask" ? mode : "navigate")),
    results,
  );
  if (!query) return heading;
  replaceChildren(results, message(kind === "search" ? "Searching…" : "Thinking…"));
  try {
    if (kind === "search" && mode !== "research") {
      const hits = await postJSON("search", { query, mode, top_k: 10 });
      replaceChildren(results, h("h2", {}, `Results for “${query}”`), hitList(hits));
    } else {
      const result = await postJSON("query", { question: query, mode: mode === "research" ? "research" : "navigate" });
      replaceChildren(results, answerView(result));
    }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    replaceChildren(results, message(error.message, "error"));
  } finally {
    results.setAttribute("aria-busy", "false");
  }
  return heading;
}
