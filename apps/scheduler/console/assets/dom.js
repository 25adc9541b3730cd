// @ts-check
/** Building elements without innerHTML: every text is a text node, so nothing the API returns is markup. */

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | ((event: Event) => void) | undefined>} [attrs]
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.replace(/^on/, ""), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "object" ? child : String(child));
  }
  return el;
}

/**
 * A table from a header row and rows of cells (strings, numbers or elements).
 * @param {(string | { text: string, num?: boolean })[]} head
 * @param {(Node | string | number | { text: string | number | Node, num?: boolean, attrs?: Record<string, string> })[][]} rows
 * @param {Record<string, string>} [attrs]
 */
export function table(head, rows, attrs = {}) {
  const th = head.map((c) =>
    typeof c === "string" ? h("th", {}, c) : h("th", { class: c.num ? "num" : undefined }, c.text),
  );
  const tr = rows.map((row) =>
    h(
      "tr",
      {},
      ...row.map((cell) => {
        if (cell instanceof Node || typeof cell !== "object") return h("td", {}, cell);
        return h("td", { class: cell.num ? "num" : undefined, ...cell.attrs }, cell.text);
      }),
    ),
  );
  return h("table", attrs, h("thead", {}, h("tr", {}, ...th)), h("tbody", {}, ...tr));
}

/** @param {HTMLElement} el @param {...(Node | string)} children */
export function replace(el, ...children) {
  el.replaceChildren(...children);
}
