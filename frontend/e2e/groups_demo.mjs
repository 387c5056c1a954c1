// Screenshots of seed groups on a running platform, for the experiment docs (docs/experiments/*.md):
//   node e2e/groups_demo.mjs URL USER PASSWORD NAME=PATH [NAME=PATH ...]
// opens each PATH (a runs or compare page URL carrying its view state, lib/viewState.ts), waits until the
// groups are drawn (the runs page's n cells, or the compare page's group table) and writes
// docs/img/NAME.png. Not a test: it reads a platform a person ran an experiment on.
import { join } from 'node:path';
import { launchBrowser, ROOT, signedInPage } from './harness.mjs';

const [url, username, password, ...shots] = process.argv.slice(2);
if (!url || !username || !password || shots.length === 0) {
  console.error('usage: node e2e/groups_demo.mjs URL USER PASSWORD NAME=PATH [NAME=PATH ...]');
  process.exit(1);
}
const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password }, { viewport: { width: 1500, height: 900 } });
  for (const shot of shots) {
    const at = shot.indexOf('=');
    const name = shot.slice(0, at);
    const path = shot.slice(at + 1);
    await page.goto(`${url}${path}`);
    await page.locator('[data-testid="group-n"], [data-testid="compare-groups"]').first().waitFor({ timeout: 60_000 });
    await page.waitForTimeout(1500); // charts finish their animation
    const file = join(ROOT, 'docs/img', `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`wrote ${file}`);
  }
} finally {
  await browser.close();
}
