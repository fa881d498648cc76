// The store at a glance: sizes, versions (one per commit), reorganizations, the Query Graph's
// open conflicts, and the jobs running on the server.

import { ApiError, getJSON } from "./api.js";
import { badge, count, h, memoryHref, message, plural, replaceChildren, section, time } from "./dom.js";

function figure(label, value) {
  return h("div", { class: "figure" }, h("dt", {}, label), h("dd", {}, count(value)));
}

function versionsTable(versions) {
  return h(
    "div",
    { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Versions" },
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, ["Version", "Published", "Documents", "Chunks", "Directories"].map((name) => h("th", { scope: "col" }, name)))),
      h(
        "tbody",
        {},
        versions.map((version) =>
          h(
            "tr",
            {},
            h("th", { scope: "row" }, `#${version.number} `, h("code", {}, version.store_version.slice(0, 8)), version.live ? [" ", badge("live")] : null),
            h("td", {}, time(version.published_at, true)),
            h("td", { class: "number" }, count(version.documents)),
            h("td", { class: "number" }, count(version.chunks)),
            h("td", { class: "number" }, count(version.directories)),
          ),
        ),
      ),
    ),
  );
}

function conflictList(conflicts) {
  return h(
    "ul",
    { class: "card-list" },
    conflicts.map((conflict) =>
      h(
        "li",
        { class: "card" },
        h("strong", {}, `${conflict.subject} — ${conflict.attribute}`),
        ": ",
        h("a", { href: memoryHref(conflict.older) }, conflict.older_value),
        " or ",
        h("a", { href: memoryHref(conflict.newer) }, conflict.newer_value),
        h("p", { class: "claim-meta" }, "Found ", time(conflict.detected_at)),
      ),
    ),
  );
}

function jobList(jobs) {
  if (!jobs.length) return h("p", {}, "No job is running.");
  return h(
    "ul",
    { class: "card-list" },
    jobs.map((job) => {
      const done = job.progress?.done ?? null;
      const total = job.progress?.total ?? null;
      return h(
        "li",
        { class: "card" },
        h("strong", {}, job.kind || "job"),
        " ",
        badge(job.status || "running"),
        " ",
        h("code", {}, job.job_id || job.id || ""),
        total ? [" ", h("progress", { max: total, value: done ?? 0, "aria-label": "Progress" }), ` ${count(done)} / ${count(total)}`] : null,
        job.stage ? h("p", {}, job.stage) : null,
      );
    }),
  );
}

async function jobsSection() {
  try {
    return jobList(await getJSON("jobs"));
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403)) {
      return message(error.status === 404 ? "This server runs no jobs." : "This key may not see jobs.");
    }
    throw error;
  }
}

export async function renderStatus(main) {
  const [status, jobs] = await Promise.all([getJSON("browse/status"), jobsSection()]);
  const heading = h("h1", { tabindex: "-1" }, "Store at a glance");
  const edges = Object.entries(status.graph_edges).map(([relation, n]) => `${count(n)} ${relation}`).join(", ");
  replaceChildren(
    main,
    heading,
    h(
      "p",
      { class: "memory-meta" },
      "Version ",
      h("code", {}, status.store_version),
      " · updated ",
      time(status.updated_at),
      ` · ${status.backend} backend, ${status.embedding_model}`,
    ),
    h(
      "dl",
      { class: "figures" },
      figure("Documents", status.documents),
      figure("Chunks", status.chunks),
      figure("Directories", status.directories),
      figure("Versions", status.versions.length),
      figure("Graph nodes", status.graph_nodes),
      figure("Open conflicts", status.conflicts_open),
    ),
    section("Running jobs", jobs),
    section("Versions", versionsTable(status.versions)),
    section(
      "Query Graph",
      h("p", {}, `${edges || "no links"}; ${plural(status.conflicts_resolved, "conflict", "conflicts")} resolved, ${count(status.conflicts_open)} open; ${plural(status.sessions, "session", "sessions")} (${count(status.open_sessions)} open).`),
      status.open_conflicts.length ? conflictList(status.open_conflicts) : null,
    ),
    status.reorganizations.length
      ? section(
          "Reorganizations",
          h(
            "ul",
            { class: "card-list" },
            status.reorganizations.map((operation) =>
              h("li", { class: "card" }, time(operation.at), ` — ${operation.reason}: ${count(operation.moved)} memories moved, ${count(operation.new_directories)} new directories`),
            ),
          ),
        )
      : null,
  );
  return heading;
}
