// @ts-check
/** How numbers, bytes and times read on the page. */

const UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes in binary units: `512 B`, `4.0 KiB`, `1.5 GiB`. @param {number} n */
export function bytes(n) {
  if (Math.abs(n) < 1024) return `${n} B`;
  let value = n;
  let unit = "B";
  for (const u of UNITS) {
    if (Math.abs(value) < 1024) break;
    value /= 1024;
    unit = u;
  }
  return `${value.toFixed(1)} ${unit}`;
}

/** @param {number} n */
export function count(n) {
  return n.toLocaleString("en-US");
}

/** An ISO time as `2026-12-10 12:30 UTC`, or a dash. @param {string | null | undefined} iso */
export function time(iso) {
  if (!iso) return "—";
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}
