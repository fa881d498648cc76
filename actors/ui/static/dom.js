// Small DOM helpers. Text always goes in as text nodes, never as HTML: memories are data.

/**
 * h("a", {href: "#/x", class: "link"}, "text", child, [more children])
 * Attributes starting with "on" are event listeners; null/undefined/false values are skipped.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function replaceChildren(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

/** "2026-03-14T10:00:00Z" as the reader's local date and time; "" stays "". */
export function when(iso, seconds = false) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: seconds ? "medium" : "short" });
}

export function time(iso, seconds = false) {
  return iso ? h("time", { datetime: iso }, when(iso, seconds)) : "";
}

/** A store name or path that may wrap after "_" and "/" rather than inside a word. */
export function breakable(text) {
  return String(text)
    .split(/(?<=[_/])/)
    .flatMap((part, index) => (index ? [document.createElement("wbr"), part] : [part]));
}

/** A memory's title as its file is named ("acme_ceo_change") in words ("Acme ceo change"). */
export function titleText(title) {
  const words = (title || "").replace(/_/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : "";
}

/** A number with thousands separators. */
export function count(value) {
  return Number(value || 0).toLocaleString();
}

export function plural(value, one, many) {
  return `${count(value)} ${value === 1 ? one : many}`;
}

/** The hash link of a directory, "/a/b" -> "#/tree/a/b". */
export function treeHref(path) {
  const parts = (path || "/").split("/").filter(Boolean).map(encodeURIComponent);
  return `#/tree/${parts.join("/")}`;
}

/** The hash link of a memory, by chunk id or store-relative file path. */
export function memoryHref(ref) {
  return `#/memory/${encodeURIComponent(ref)}`;
}

export function badge(text, kind = text) {
  return h("span", { class: `badge badge-${kind}` }, text);
}

export function breadcrumb(crumbs, currentLabel) {
  const items = crumbs.map((crumb, index) => {
    const label = crumb.path === "/" ? "store" : breakable(crumb.name);
    const last = index === crumbs.length - 1 && !currentLabel;
    return h(
      "li",
      {},
      last ? h("span", { "aria-current": "page" }, label) : h("a", { href: treeHref(crumb.path) }, label),
    );
  });
  if (currentLabel) items.push(h("li", {}, h("span", { "aria-current": "page" }, currentLabel)));
  return h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("ol", {}, items));
}

/** A link to a part of the page: it scrolls there without changing the route in the hash. */
export function jumpLink(targetId, label) {
  return h(
    "a",
    {
      href: `#${targetId}`,
      onClick: (event) => {
        event.preventDefault();
        const target = document.getElementById(targetId);
        target?.scrollIntoView();
        target?.setAttribute("tabindex", "-1");
        target?.focus({ preventScroll: true });
      },
    },
    label,
  );
}

export function message(text, kind = "note") {
  return h("p", { class: `message message-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function section(title, ...content) {
  const id = `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), content);
}
