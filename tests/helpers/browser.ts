// Debian's Chromium, headless, driven by playwright-core: for the browser tests of `loop serve` and
// for scripts/screenshot.ts. Never a downloaded browser (none can be fetched here): the system's
// /usr/bin/chromium, which .ci/run installs. Each launch gets a fresh profile, removed on close.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

// Names of the page's world, used only inside functions that run in the browser (no DOM types here).
declare const document: any, Image: any;

export const CHROMIUM = "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(o: { javaScript?: boolean; width?: number; height?: number } = {}): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "loop-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    // A fresh profile: playwright passes it as --user-data-dir.
    args: ARGS,
    viewport: { width: o.width ?? 1400, height: o.height ?? 900 },
    javaScriptEnabled: o.javaScript ?? true,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface RegionStats {
  /** Distinct colours in the region. */
  colors: number;
  /** Share of pixels that are not (near) white. */
  inked: number;
  /** Pixels within a small distance of each colour asked for, by its hex. */
  found: Record<string, number>;
}

/**
 * Look at a PNG: decoded by the browser itself (an image drawn on a canvas of a blank page), so no
 * image library is needed. For each region (CSS pixels of the screenshot), its colours and ink.
 */
export async function pngRegions(
  context: BrowserContext,
  png: Buffer,
  regions: { x: number; y: number; w: number; h: number }[],
  colors: string[] = [],
): Promise<{ width: number; height: number; regions: RegionStats[] }> {
  const page: Page = await context.newPage();
  try {
    await page.goto("about:blank");
    return await page.evaluate(
      async ({ b64, regions, colors }) => {
        const img = new Image();
        img.src = `data:image/png;base64,${b64}`;
        await img.decode();
        const canvas = document.createElement("canvas");
        canvas.width = img.width;
        canvas.height = img.height;
        const g = canvas.getContext("2d")!;
        g.drawImage(img, 0, 0);
        const want = colors.map((h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)]);
        const out = regions.map((r) => {
          const x = Math.max(0, Math.floor(r.x));
          const y = Math.max(0, Math.floor(r.y));
          const w = Math.max(1, Math.min(img.width - x, Math.floor(r.w)));
          const h = Math.max(1, Math.min(img.height - y, Math.floor(r.h)));
          const d = g.getImageData(x, y, w, h).data;
          const seen = new Set<number>();
          let inked = 0;
          const found: Record<string, number> = Object.fromEntries(colors.map((c) => [c, 0]));
          for (let i = 0; i < d.length; i += 4) {
            const [R, G, B] = [d[i]!, d[i + 1]!, d[i + 2]!];
            seen.add((R << 16) | (G << 8) | B);
            if (R < 240 || G < 240 || B < 240) inked++;
            want.forEach(([wr, wg, wb], k) => {
              if (Math.abs(R - wr!) + Math.abs(G - wg!) + Math.abs(B - wb!) < 24) found[colors[k]!]!++;
            });
          }
          return { colors: seen.size, inked: inked / (w * h), found };
        });
        return { width: img.width, height: img.height, regions: out };
      },
      { b64: png.toString("base64"), regions, colors },
    );
  } finally {
    await page.close();
  }
}
