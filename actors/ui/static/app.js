// The page's router: every view has a deep link (#/tree/a/b, #/memory/<id>, #/search?q=...,
// #/ask?q=..., #/status, #/conversations/<id>); a 401 from the API brings up the key form.

import { AuthRequired, ApiError, currentKey, setKey } from "./api.js";
import { renderConversations } from "./conversations.js";
import { h, message, replaceChildren } from "./dom.js";
import { renderMemory } from "./memory.js";
import { renderSearch } from "./search.js";
import { renderStatus } from "./status.js";
import { renderTree } from "./tree.js";

const main = document.getElementById("main");
let rendering = 0; // the latest navigation; an older one that finishes late is dropped

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  return { view: parts[0] || "tree", rest: parts.slice(1), params: new URLSearchParams(query) };
}

function route({ view, rest, params }) {
  switch (view) {
    case "tree":
      return (target) => renderTree(target, `/${rest.filter(Boolean).join("/")}`);
    case "memory":
      return (target) => renderMemory(target, rest.join("/"));
    case "search":
    case "ask":
      return (target) => renderSearch(target, view, params);
    case "status":
      return (target) => renderStatus(target);
    case "conversations":
      return (target) => renderConversations(target, rest.join("/"), params);
    default:
      return null;
  }
}

function keyForm(error) {
  const heading = h("h1", { tabindex: "-1" }, "API key needed");
  const form = h(
    "form",
    { class: "key-form", "aria-labelledby": "key-heading" },
    h("p", { id: "key-heading" }, error.rejected ? "The server refused that key. Enter another one." : "This server asks for an API key. A read key is enough to browse."),
    h("label", { for: "api-key" }, "API key"),
    h("input", { id: "api-key", name: "key", type: "password", required: true, autocomplete: "off", spellcheck: "false" }),
    h("button", { type: "submit" }, "Use this key"),
    h("p", { class: "claim-meta" }, "The key is kept in this tab only and sent as “Authorization: Bearer” to this server."),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setKey(new FormData(form).get("key").trim());
    show();
  });
  replaceChildren(main, heading, form);
  form.querySelector("input").focus();
}

function markCurrentView(view) {
  for (const link of document.querySelectorAll("header nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function show() {
  const number = ++rendering;
  forgetKey.hidden = !currentKey();
  const parsed = parseHash();
  markCurrentView(parsed.view === "ask" ? "search" : parsed.view);
  const render = route(parsed);
  const target = document.createElement("div");
  if (!render) {
    replaceChildren(main, h("h1", {}, "Not found"), message(`No view called “${parsed.view}”.`));
    return;
  }
  // Moving through the tree by keyboard re-renders the view: the focus stays on the tree.
  const treeItem = document.activeElement?.closest?.("[role=tree] [role=treeitem]") || null;
  main.setAttribute("aria-busy", "true");
  try {
    replaceChildren(main, target);
    const heading = await render(target);
    if (number !== rendering) return;
    // A user-timing mark per rendered view: bench/ui.py reads the time to first render from it.
    performance.mark("view-rendered", { detail: parsed.view });
    if (treeItem?.isConnected) treeItem.focus();
    else if (heading) heading.focus();
    document.title = `${heading?.textContent || "Memory"} — Memory Bank`;
  } catch (error) {
    if (number !== rendering) return;
    if (error instanceof AuthRequired) keyForm(error);
    else if (error instanceof ApiError) replaceChildren(main, h("h1", { tabindex: "-1" }, error.status === 404 ? "Not found" : "Something went wrong"), message(error.message, "error"));
    else replaceChildren(main, h("h1", {}, "Something went wrong"), message(String(error), "error"));
  } finally {
    main.setAttribute("aria-busy", "false");
  }
}

// The skip link moves the focus; following its href would change the route.
document.getElementById("skip").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});
const forgetKey = document.getElementById("forget-key");
forgetKey.addEventListener("click", () => {
  setKey("");
  show();
});
window.addEventListener("hashchange", show);
show();
