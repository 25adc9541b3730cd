/**
 * A real browser for the console's browser tests: Debian's Chromium, installed by
 * `scripts/chromium.sh install` the first time a test asks for it (as the S3 gateway is), and
 * driven with playwright-core, which downloads nothing. Each launch gets a fresh profile
 * directory, removed when the browser closes, and flags that keep Chromium from reaching any
 * network service of its own (no QUIC, sync, component updates or background requests).
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { tempDir } from "./files";

const SCRIPT = path.resolve(__dirname, "../../../scripts/chromium.sh");

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

let executable: string | null = null;

/** The Chromium binary, installed with apt-get if it is missing. */
export function chromiumPath(): string {
  executable ??= execFileSync("bash", [SCRIPT, "install"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 600_000,
  }).trim();
  return executable;
}

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium with a fresh profile; `close()` stops it and removes the profile. */
export async function launchChromium(): Promise<TestBrowser> {
  const profile = await tempDir("reclaim-chromium-");
  const context = await chromium.launchPersistentContext(profile.path, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1366, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      await profile.remove();
    },
  };
}
