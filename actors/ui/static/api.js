// The HTTP API as the page uses it: same origin, the key (if any) as "Authorization: Bearer".
// The key stays in this tab's sessionStorage: it is gone when the tab closes.

const KEY_ITEM = "memory-bank-key";

export class AuthRequired extends Error {
  constructor(rejected) {
    super(rejected ? "The server refused this key." : "This server needs an API key.");
    this.rejected = rejected;
  }
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail && typeof body.detail === "string" ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function currentKey() {
  return sessionStorage.getItem(KEY_ITEM) || "";
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY_ITEM, key);
  else sessionStorage.removeItem(KEY_ITEM);
}

async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  const key = currentKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  // The path is relative to the page (/ui/), so the API is one level up.
  const response = await fetch(new URL(`../${path.replace(/^\//, "")}`, document.baseURI), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  if (response.status === 401) throw new AuthRequired(Boolean(key));
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

export function getJSON(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, value);
  }
  const suffix = params.toString() ? `?${params}` : "";
  return call("GET", `${path}${suffix}`);
}

export function postJSON(path, body) {
  return call("POST", path, body);
}
