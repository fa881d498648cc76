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

const ACTIVE = new Set(["queued", "running"]);
const JOBS_REFRESH_MS = 2000;
const RECENT_JOBS = 5;

function job(status) {
  const stage = status.stage ? status.progress?.[status.stage] : null;
  const counts = [];
  if (status.documents) counts.push(`${count(status.documents)} documents`);
  if (status.chunks) counts.push(`${count(status.chunks)} memories`);
  if (status.removed_documents) counts.push(`${count(status.removed_documents)} removed`);
  return h(
    "li",
    { class: "card" },
    h("strong", {}, status.kind),
    " ",
    badge(status.state, status.state === "failed" ? "superseded" : status.state === "succeeded" ? "current" : "count"),
    " ",
    h("code", {}, status.id),
    status.stage ? h("p", {}, `Stage: ${status.stage}`, stage?.total ? [" ", h("progress", { max: stage.total, value: stage.done, "aria-label": `${status.stage} progress` }), ` ${count(stage.done)} / ${count(stage.total)}`] : null) : null,
    counts.length ? h("p", {}, counts.join(", ")) : null,
    status.error ? h("p", { class: "message message-error" }, status.error) : null,
    h("p", { class: "claim-meta" }, "Submitted ", time(status.submitted_at), status.finished_at ? [" · finished ", time(status.finished_at)] : null),
  );
}

function jobList(jobs) {
  const active = jobs.filter((status) => ACTIVE.has(status.state));
  const recent = jobs.filter((status) => !ACTIVE.has(status.state)).slice(-RECENT_JOBS).reverse();
  return [
    active.length ? h("ul", { class: "card-list" }, active.map(job)) : h("p", {}, "No job is running."),
    recent.length ? [h("h3", {}, "Finished"), h("ul", { class: "card-list" }, recent.map(job))] : null,
  ];
}

async function fetchJobs() {
  try {
    return await getJSON("jobs");
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403)) return null;
    throw error;
  }
}

function jobsContent(jobs) {
  return jobs === null ? message("This server runs no jobs, or this key may not see them.") : jobList(jobs);
}

/** While a job runs and the view is open, its progress is fetched again every few seconds. */
function followJobs(container, jobs) {
  if (!jobs?.some((status) => ACTIVE.has(status.state))) return;
  setTimeout(async () => {
    if (!container.isConnected) return;
    let fresh;
    try {
      fresh = await fetchJobs();
    } catch (error) {
      replaceChildren(container, message(`The jobs could not be fetched again: ${error.message}`, "error"));
      return;
    }
    if (!container.isConnected) return;
    replaceChildren(container, jobsContent(fresh));
    followJobs(container, fresh);
  }, JOBS_REFRESH_MS);
}

export async function renderStatus(main) {
  // The jobs come from the writer, which may still be starting: the store's figures do not wait.
  // Settled at once either way, so a refusal that the status request reports is not also an
  // unhandled rejection of this one.
  const jobsRequest = fetchJobs().then(
    (jobs) => ({ jobs }),
    (error) => ({ error }),
  );
  const status = await getJSON("browse/status");
  const jobsBox = h("div", { "aria-live": "polite" }, h("p", {}, "Loading the jobs…"));
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
    section("Jobs", jobsBox),
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
  jobsRequest.then(({ jobs, error }) => {
    if (!jobsBox.isConnected) return;
    if (error) {
      replaceChildren(jobsBox, message(`The jobs could not be fetched: ${error.message}`, "error"));
      return;
    }
    replaceChildren(jobsBox, jobsContent(jobs));
    followJobs(jobsBox, jobs);
  });
  return heading;
}
