// What the first use of each of ICU's services (number and date formatting, collation) costs a page, in
// Debian's chromium with the CPU slowed down PERF_CPU_SLOWDOWN times (default 4, as `make perf` at 4x):
// each line on three fresh pages (a context each), the first call and the mean of 100 calls after, beside
// the ICU-free way src/lib/plainFormat.ts writes a count. Not part of `make test`: `npm run perf:icu`.
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../e2e/harness.mjs';

const SLOWDOWN = Number(process.env.PERF_CPU_SLOWDOWN ?? 4);
const CASES = {
  "(1234567).toLocaleString('en-US')": () => (1234567).toLocaleString('en-US'),
  '(1234567).toLocaleString()': () => (1234567).toLocaleString(),
  "new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' })": () =>
    new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' }).compare('a2', 'a10'),
  "'a2'.localeCompare('a10', undefined, { numeric: true })": () => 'a2'.localeCompare('a10', undefined, { numeric: true }),
  'new Date().toLocaleDateString()': () => new Date().toLocaleDateString(),
  'the count grouped by a regular expression (plainFormat.ts)': () => String(1234567).replace(/\B(?=(\d{3})+(?!\d))/g, ','),
};

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
try {
  console.log(`first use, then each use after, in ms (the browser's CPU slowed down ${SLOWDOWN}x), three fresh pages:`);
  for (const [name, fn] of Object.entries(CASES)) {
    const loads = [];
    for (let i = 0; i < 3; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      if (SLOWDOWN !== 1) await cdp.send('Emulation.setCPUThrottlingRate', { rate: SLOWDOWN });
      await page.goto('about:blank');
      const body = fn.toString();
      loads.push(
        await page.evaluate(`(() => {
          const f = ${body};
          const t0 = performance.now();
          f();
          const first = performance.now() - t0;
          const t1 = performance.now();
          for (let i = 0; i < 100; i++) f();
          return [first, (performance.now() - t1) / 100];
        })()`),
      );
      await context.close();
    }
    console.log(`${name}: ${loads.map(([first, after]) => `${first.toFixed(1)} / ${after.toFixed(2)}`).join(', ')}`);
  }
} finally {
  await browser.close();
}
