/**
 * Real browsers for the console's browser tests, each behind the same small driver so one test
 * flow runs in both: Debian's Chromium driven by playwright-core (DevTools protocol) and
 * Debian's Firefox ESR driven by puppeteer-core (WebDriver BiDi). Neither library downloads a
 * browser; `scripts/browsers.sh install` puts the Debian package in place the first time a test
 * asks for it (as the S3 gateway is). Each launch gets a fresh profile directory, removed when
 * the browser closes; Chromium gets flags that keep it from reaching any service of its own.
 * Every console error and uncaught page error is collected in `errors`.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import puppeteer, { type Browser as PuppeteerBrowser, type Page as PuppeteerPage } from "puppeteer-core";
import { tempDir } from "./files";

const SCRIPT = path.resolve(__dirname, "../../../scripts/browsers.sh");

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export type BrowserName = "chromium" | "firefox";

const installed = new Map<BrowserName, string>();

/** The browser's binary, installed with apt-get if it is missing. */
export function browserPath(name: BrowserName): string {
  let found = installed.get(name);
  if (!found) {
    found = execFileSync("bash", [SCRIPT, "install", name], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 600_000,
    }).trim();
    installed.set(name, found);
  }
  return found;
}

export interface SessionCookie {
  name: string;
  httpOnly: boolean;
  sameSite: string;
}

/** What the tests do with a page, the same in every browser. */
export interface BrowserDriver {
  name: BrowserName;
  /** Console errors and uncaught page errors, with the page's URL. */
  errors: string[];
  goto(url: string): Promise<void>;
  url(): string;
  fill(selector: string, value: string): Promise<void>;
  click(selector: string): Promise<void>;
  select(selector: string, value: string): Promise<void>;
  waitFor(selector: string, timeoutMs?: number): Promise<void>;
  /** Waits until `expression` (evaluated in the page) is truthy. */
  waitUntil(expression: string, timeoutMs?: number): Promise<void>;
  /** Evaluates `expression` in the page (a string: tests are type-checked without the DOM library). */
  evaluate<T>(expression: string): Promise<T>;
  screenshot(file: string): Promise<void>;
  cookies(): Promise<SessionCookie[]>;
  close(): Promise<void>;
}

async function polled(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function launchBrowser(name: BrowserName): Promise<BrowserDriver> {
  const profile = await tempDir(`reclaim-${name}-`);
  const errors: string[] = [];
  if (name === "chromium") {
    const context: BrowserContext = await chromium.launchPersistentContext(profile.path, {
      executablePath: browserPath("chromium"),
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1366, height: 900 },
    });
    const page: Page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`${page.url()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => errors.push(`${page.url()}: ${e.message}`));
    return {
      name,
      errors,
      goto: async (url) => void (await page.goto(url)),
      url: () => page.url(),
      fill: (s, v) => page.fill(s, v),
      click: (s) => page.click(s),
      select: async (s, v) => void (await page.selectOption(s, v)),
      waitFor: async (s, timeout = 30_000) => void (await page.waitForSelector(s, { timeout })),
      waitUntil: async (e, timeout = 30_000) => void (await page.waitForFunction(e, undefined, { timeout })),
      evaluate: (e) => page.evaluate(e),
      screenshot: async (file) => void (await page.screenshot({ path: file, fullPage: true })),
      cookies: async () => (await context.cookies()).map((c) => ({ ...c, sameSite: c.sameSite })),
      close: async () => {
        await context.close();
        await profile.remove();
      },
    };
  }
  const browser: PuppeteerBrowser = await puppeteer.launch({
    browser: "firefox",
    executablePath: browserPath("firefox"),
    headless: true,
    userDataDir: profile.path,
    defaultViewport: { width: 1366, height: 900 },
  });
  const page: PuppeteerPage = await browser.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`${page.url()}: ${String(e)}`));
  return {
    name,
    errors,
    goto: async (url) => void (await page.goto(url)),
    url: () => page.url(),
    fill: async (s, v) => {
      await page.$eval(s, (el, value) => ((el as unknown as { value: string }).value = value), v);
    },
    click: (s) => page.click(s),
    select: async (s, v) => void (await page.select(s, v)),
    waitFor: async (s, timeout = 30_000) => void (await page.waitForSelector(s, { timeout })),
    waitUntil: async (e, timeout = 30_000) => void (await page.waitForFunction(e, { timeout })),
    evaluate: (e) => page.evaluate(e) as Promise<never>,
    screenshot: async (file) =>
      void (await page.screenshot({ path: file as `${string}.png`, fullPage: true })),
    cookies: async () =>
      (await browser.cookies()).map((c) => ({
        name: c.name,
        httpOnly: c.httpOnly === true,
        sameSite: String(c.sameSite),
      })),
    close: async () => {
      await browser.close();
      await profile.remove();
    },
  };
}

/** Waits until the page's URL satisfies `accept` (after a click that navigates). */
export function waitForUrl(driver: BrowserDriver, accept: (url: URL) => boolean, timeoutMs = 30_000) {
  return polled(() => accept(new URL(driver.url())), `a URL accepted by ${accept.toString()}`, timeoutMs);
}
