// The memory view: a memory's text, where it came from, the raw text behind it, its neighbours
// in the Query Graph, and for each of its claims the values given over time.

import { getJSON } from "./api.js";
import { badge, breadcrumb, breakable, h, jumpLink, memoryHref, replaceChildren, section, time, titleText } from "./dom.js";

function memoryLink(ref, label) {
  return ref ? h("a", { href: memoryHref(ref) }, label) : label;
}

/** A memory's text: paragraphs, a Markdown heading line shown as a heading. */
function paragraphs(text) {
  return text.split(/\n\n+/).map((paragraph) => {
    const heading = paragraph.match(/^#{1,6}\s+(.*)$/);
    return heading ? h("p", { class: "text-heading" }, heading[1]) : h("p", {}, paragraph);
  });
}

function replacedBy(claims, value) {
  const later = claims.values.find((other) => other.node_id === value.superseded_by && other !== value);
  if (!later) return memoryLink(value.superseded_by, "a later memory");
  return [h("strong", {}, later.value), " in ", memoryLink(later.path || later.node_id, titleText(later.title))];
}

function timeline(claims) {
  const heading = `${claims.subject} — ${claims.attribute}`;
  return h(
    "article",
    { class: "timeline" },
    h("h3", {}, heading, claims.open ? [" ", badge("disputed")] : null),
    h(
      "ol",
      { class: "timeline-values" },
      claims.values.map((value) =>
        h(
          "li",
          { class: `claim claim-${value.state}` },
          h("p", { class: "claim-value" }, h("strong", {}, value.value), " ", badge(value.state)),
          value.sentence ? h("blockquote", {}, value.sentence) : null,
          h(
            "p",
            { class: "claim-meta" },
            "Recorded ",
            time(value.recorded_at),
            " in ",
            memoryLink(value.path || value.node_id, titleText(value.title) || value.node_id),
            value.source ? [" (", h("span", { class: "source" }, value.source), ")"] : null,
          ),
          value.state === "superseded"
            ? h(
                "p",
                { class: "claim-meta" },
                "Superseded ",
                value.superseded_at ? time(value.superseded_at) : "",
                value.superseded_by ? [" by ", replacedBy(claims, value)] : null,
              )
            : null,
        ),
      ),
    ),
  );
}

function neighbours(list) {
  return h(
    "ul",
    { class: "card-list" },
    list.map((neighbour) =>
      h(
        "li",
        { class: "card" },
        memoryLink(neighbour.path || neighbour.id, titleText(neighbour.title)),
        " ",
        badge(neighbour.relation),
        neighbour.status !== "current" ? [" ", badge(neighbour.status)] : null,
        neighbour.summary ? h("p", {}, neighbour.summary) : null,
      ),
    ),
  );
}

function frontmatter(fields) {
  return h(
    "dl",
    { class: "fields" },
    Object.entries(fields).map(([name, value]) => [
      h("dt", {}, name),
      h("dd", {}, Array.isArray(value) ? value.join(", ") : String(value)),
    ]),
  );
}

function source(page) {
  const origin = page.document;
  if (!origin) return h("p", {}, page.frontmatter.source || "—");
  return h(
    "dl",
    { class: "fields" },
    h("dt", {}, "Document"),
    h("dd", {}, origin.title),
    h("dt", {}, "File"),
    h("dd", { class: "source" }, origin.source),
    h("dt", {}, "Kind"),
    h("dd", {}, origin.kind),
    page.position !== null ? [h("dt", {}, "Chunk"), h("dd", {}, `#${page.position + 1} of the document`)] : null,
    page.section ? [h("dt", {}, "Section"), h("dd", {}, page.section)] : null,
  );
}

function rawText(page) {
  const blocks = [];
  if (page.raw_text) {
    blocks.push(h("details", { class: "raw" }, h("summary", {}, "The chunk this memory was made from"), h("pre", {}, page.raw_text)));
  }
  for (const entry of page.entries) {
    blocks.push(
      h(
        "details",
        { class: "raw" },
        h("summary", {}, "Interaction entry ", time(new Date(entry.timestamp * 1000).toISOString())),
        h("pre", {}, entry.text),
      ),
    );
  }
  return blocks.length ? blocks : h("p", {}, "No raw text is kept for this memory.");
}

function history(entries) {
  return h(
    "ol",
    { class: "history" },
    entries.map((entry) =>
      h(
        "li",
        {},
        time(new Date(entry.at * 1000).toISOString()),
        " ",
        h("strong", {}, entry.event),
        entry.detail ? `: ${entry.detail}` : "",
        entry.summary ? h("p", {}, entry.summary) : null,
      ),
    ),
  );
}

function currency(page) {
  const own = page.timelines.flatMap((claims) => claims.values.filter((value) => value.node_id === page.id));
  const superseded = own.filter((value) => value.state === "superseded");
  const disputed = own.filter((value) => value.state === "disputed");
  const notes = [];
  if (superseded.length) notes.push(`${superseded.length === 1 ? "One of its claims was" : `${superseded.length} of its claims were`} superseded by a later memory.`);
  if (disputed.length) notes.push(`${disputed.length === 1 ? "One of its claims is" : `${disputed.length} of its claims are`} disputed by another memory.`);
  return notes.length ? h("p", { class: "currency-note" }, notes.join(" "), " ", jumpLink("section-claims-over-time", "See the claims over time.")) : null;
}

/** The line under the title: kind and status, file, when recorded, what replaced it. */
function meta(page) {
  const parts = [
    page.kind === "session" ? badge("session memory", "count") : null,
    page.status !== "current" ? badge(page.status) : null,
    page.path ? h("code", {}, breakable(page.path)) : null,
    page.recorded_at ? ["Recorded ", time(page.recorded_at)] : null,
    page.superseded_by ? ["Replaced by ", memoryLink(page.superseded_by, "a later memory")] : null,
  ].filter(Boolean);
  return parts.flatMap((part, index) => (index ? [" · ", part] : [part]));
}

export function memoryPage(page) {
  const title = page.kind === "memory" ? titleText(page.title) : page.title;
  return h(
    "article",
    { class: "memory" },
    page.breadcrumb.length ? breadcrumb(page.breadcrumb, title) : null,
    h("h1", { tabindex: "-1" }, title),
    h("p", { class: "memory-meta" }, meta(page)),
    currency(page),
    page.tldr ? h("p", { class: "tldr" }, page.tldr) : null,
    page.keywords.length ? h("ul", { class: "chips", "aria-label": "Keywords" }, page.keywords.map((word) => h("li", {}, word))) : null,
    section("Memory", h("div", { class: "memory-text" }, paragraphs(page.text))),
    page.timelines.length ? section("Claims over time", page.timelines.map(timeline)) : null,
    section("Related memories", page.neighbours.length ? neighbours(page.neighbours) : h("p", {}, "The Query Graph links no other memory to this one.")),
    section("Source", source(page)),
    section("Raw text", rawText(page)),
    section("Frontmatter", frontmatter(page.frontmatter)),
    page.history.length ? section("History", history(page.history)) : null,
  );
}

export async function renderMemory(main, ref) {
  const page = await getJSON("browse/memory", { ref });
  replaceChildren(main, memoryPage(page));
  return main.querySelector("h1");
}
