// The tree view: the taxonomy as an expandable tree (loaded a directory at a time) beside the
// selected directory's README summary, key terms, subdirectories and memories.

import { getJSON } from "./api.js";
import { badge, breadcrumb, breakable, count, h, memoryHref, plural, replaceChildren, section, titleText, treeHref } from "./dom.js";

const PAGE_SIZE = 100;

// Kept across views, so going back to the tree finds it as it was left.
const pages = new Map(); // directory path -> DirectoryPage (its first page of memories)
let tree = null;

function fetchDirectory(path, offset = 0) {
  const load = () => getJSON("browse/directory", { path, offset, limit: PAGE_SIZE });
  if (offset) return load();
  if (!pages.has(path)) {
    const pending = load();
    pages.set(path, pending);
    pending.catch(() => pages.delete(path)); // a failed load is tried again next time
  }
  return pages.get(path);
}

/** "/a/b" -> ["/", "/a", "/a/b"] */
function ancestry(path) {
  const parts = path.split("/").filter(Boolean);
  return ["/", ...parts.map((_, i) => `/${parts.slice(0, i + 1).join("/")}`)];
}

class Tree {
  constructor() {
    this.items = new Map(); // directory path -> its treeitem element
    this.element = h("ul", { role: "tree", class: "tree", "aria-label": "Store tree" });
    this.element.addEventListener("keydown", (event) => this.onKey(event));
    this.element.addEventListener("click", (event) => this.onClick(event));
  }

  /** Expand every directory down to `path` (their pages load at once) and select it. */
  async reveal(path) {
    const chain = ancestry(path);
    const loaded = await Promise.all(chain.map((step) => fetchDirectory(step)));
    if (!this.items.has("/")) this.fill(this.element, loaded[0], 1);
    for (const step of chain.slice(1)) await this.expand(this.items.get(step));
    this.select(this.items.get(path) || this.element.querySelector("[role=treeitem]"));
    return loaded[loaded.length - 1];
  }

  /** Add a directory page's subdirectories and memories under `group`. */
  fill(group, page, level) {
    if (level === 1 && !this.items.has("/")) this.items.set("/", this.element);
    const entries = [
      ...page.directories.map((entry) => this.directoryItem(entry, level)),
      ...page.files.map((entry) => this.memoryItem(entry, level)),
    ];
    if (page.files_total > page.offset + page.files.length) {
      entries.push(this.moreItem(page, level));
    }
    group.append(...entries);
    this.resetPositions(group);
  }

  resetPositions(group) {
    const siblings = [...group.children].filter((child) => child.getAttribute("role") === "treeitem");
    siblings.forEach((child, index) => {
      child.setAttribute("aria-setsize", siblings.length);
      child.setAttribute("aria-posinset", index + 1);
    });
  }

  directoryItem(entry, level) {
    const labelId = `tree-label-${entry.path.replace(/[^a-z0-9_]/gi, "-")}`;
    const item = h(
      "li",
      {
        role: "treeitem",
        "aria-expanded": entry.directories + (entry.memories ? 1 : 0) ? "false" : null,
        "aria-level": level,
        "aria-selected": "false",
        "aria-labelledby": labelId,
        tabindex: "-1",
        dataset: { path: entry.path },
      },
      h(
        "span",
        { class: "tree-label", id: labelId, title: entry.description || null },
        h("span", { class: "twisty", "aria-hidden": "true" }),
        h("span", { class: "tree-name" }, breakable(entry.name)),
        h("span", { class: "tree-count", "aria-label": plural(entry.memories, "memory", "memories") }, count(entry.memories)),
      ),
    );
    this.items.set(entry.path, item);
    return item;
  }

  memoryItem(entry, level) {
    return h(
      "li",
      {
        role: "treeitem",
        "aria-level": level,
        tabindex: "-1",
        class: "tree-memory",
        dataset: { memory: entry.chunk_id },
      },
      h("a", { href: memoryHref(entry.chunk_id), tabindex: "-1", class: "tree-label" }, titleText(entry.title)),
    );
  }

  moreItem(page, level) {
    const next = page.offset + page.files.length;
    const left = page.files_total - next;
    return h(
      "li",
      { role: "treeitem", "aria-level": level, tabindex: "-1", class: "tree-more", dataset: { more: page.path, offset: next } },
      h("span", { class: "tree-label" }, `Show ${Math.min(left, PAGE_SIZE)} more of ${count(left)}`),
    );
  }

  async expand(item) {
    if (!item || item === this.element || item.getAttribute("aria-expanded") === null) return;
    let group = item.querySelector(":scope > [role=group]");
    if (!group) {
      const page = await fetchDirectory(item.dataset.path);
      if (item.querySelector(":scope > [role=group]")) {
        group = item.querySelector(":scope > [role=group]");
      } else {
        group = h("ul", { role: "group" });
        this.fill(group, page, Number(item.getAttribute("aria-level")) + 1);
        item.append(group);
      }
    }
    item.setAttribute("aria-expanded", "true");
  }

  collapse(item) {
    if (item && item.getAttribute("aria-expanded") === "true") item.setAttribute("aria-expanded", "false");
  }

  async loadMore(item) {
    const page = await fetchDirectory(item.dataset.more, Number(item.dataset.offset));
    const group = item.parentElement;
    const level = Number(item.getAttribute("aria-level"));
    const focusNext = item === document.activeElement;
    item.remove();
    const before = group.children.length;
    this.fill(group, page, level);
    if (focusNext) this.focus(group.children[before]);
  }

  select(item) {
    if (!item || item === this.element) return;
    for (const selected of this.element.querySelectorAll("[aria-selected=true]")) {
      selected.setAttribute("aria-selected", "false");
    }
    if (item.dataset.path) item.setAttribute("aria-selected", "true");
    this.focus(item, false);
    item.querySelector(".tree-label")?.scrollIntoView({ block: "nearest" });
  }

  focus(item, move = true) {
    if (!item) return;
    for (const current of this.element.querySelectorAll("[role=treeitem][tabindex='0']")) {
      current.setAttribute("tabindex", "-1");
    }
    item.setAttribute("tabindex", "0");
    if (move) item.focus();
  }

  visibleItems() {
    return [...this.element.querySelectorAll("[role=treeitem]")].filter(
      (item) => !item.parentElement.closest("[aria-expanded=false]"),
    );
  }

  activate(item) {
    if (item.dataset.more) return this.loadMore(item);
    if (item.dataset.memory) {
      location.hash = memoryHref(item.dataset.memory);
      return undefined;
    }
    location.hash = treeHref(item.dataset.path);
    return this.expand(item);
  }

  onClick(event) {
    const item = event.target.closest("[role=treeitem]");
    if (!item || item.dataset.memory) return; // a memory's link navigates by itself
    event.preventDefault();
    this.focus(item);
    if (event.target.closest(".twisty") && item.getAttribute("aria-expanded") === "true") {
      this.collapse(item);
    } else {
      this.activate(item);
    }
  }

  onKey(event) {
    const item = event.target.closest("[role=treeitem]");
    if (!item) return;
    const visible = this.visibleItems();
    const index = visible.indexOf(item);
    const parent = item.parentElement.closest("[role=treeitem]");
    const moves = {
      ArrowDown: () => this.focus(visible[index + 1]),
      ArrowUp: () => this.focus(visible[index - 1]),
      Home: () => this.focus(visible[0]),
      End: () => this.focus(visible[visible.length - 1]),
      ArrowRight: () => {
        if (item.getAttribute("aria-expanded") === "false") this.expand(item);
        else if (item.getAttribute("aria-expanded") === "true") this.focus(item.querySelector("[role=treeitem]"));
      },
      ArrowLeft: () => {
        if (item.getAttribute("aria-expanded") === "true") this.collapse(item);
        else if (parent) this.focus(parent);
      },
      Enter: () => this.activate(item),
      " ": () => this.activate(item),
    };
    const move = moves[event.key];
    if (move) {
      event.preventDefault();
      move();
    }
  }
}

function directoryPanel(page) {
  const heading = h("h1", { tabindex: "-1" }, page.path === "/" ? page.title || "Store" : page.title);
  const memories = h("ul", { class: "card-list" }, page.files.map(memoryCard));
  const panel = h(
    "div",
    { class: "directory-panel" },
    breadcrumb(page.breadcrumb),
    heading,
    h(
      "p",
      { class: "sizes" },
      `${plural(page.memories, "memory", "memories")}`,
      page.directories.length ? ` in ${plural(page.directories.length, "subdirectory", "subdirectories")}` : "",
    ),
    page.summary ? page.summary.split(/\n\n+/).map((paragraph) => h("p", { class: "summary" }, paragraph)) : null,
    page.key_terms.length
      ? h("div", { class: "key-terms" }, h("h2", { class: "inline-heading" }, "Key terms"), h("ul", { class: "chips" }, page.key_terms.map((term) => h("li", {}, term))))
      : null,
    page.directories.length
      ? section("Subdirectories", h("ul", { class: "card-list" }, page.directories.map(directoryCard)))
      : null,
    page.files_total ? section(`Memories (${count(page.files_total)})`, memories) : null,
  );
  if (page.files_total > page.files.length) {
    const more = h("button", { type: "button", class: "more" }, "Show more memories");
    let offset = page.files.length;
    more.addEventListener("click", async () => {
      more.disabled = true;
      const next = await fetchDirectory(page.path, offset);
      memories.append(...next.files.map(memoryCard));
      offset += next.files.length;
      more.disabled = false;
      if (offset >= page.files_total) more.remove();
    });
    panel.append(more);
  }
  return panel;
}

function directoryCard(entry) {
  return h(
    "li",
    { class: "card" },
    h("a", { href: treeHref(entry.path), class: "card-title" }, breakable(`${entry.name}/`)),
    " ",
    badge(plural(entry.memories, "memory", "memories"), "count"),
    entry.description ? h("p", {}, entry.description) : null,
  );
}

function memoryCard(entry) {
  return h(
    "li",
    { class: "card" },
    h("a", { href: memoryHref(entry.chunk_id), class: "card-title" }, titleText(entry.title)),
    entry.tldr ? h("p", {}, entry.tldr) : null,
  );
}

export async function renderTree(main, path) {
  if (!tree) tree = new Tree();
  const panel = h("div", { class: "tree-detail", "aria-live": "polite" });
  const layout = h(
    "div",
    { class: "tree-layout" },
    h("nav", { class: "tree-pane", "aria-label": "Directories" }, tree.element),
    panel,
  );
  replaceChildren(main, layout);
  const page = await tree.reveal(path || "/");
  replaceChildren(panel, directoryPanel(page));
  return panel.querySelector("h1");
}
