// A findings experiment's claim cards (docs/experiments/*.md, "Findings"), screenshotted from the claims
// page of the platform that ran it: after `reasonlab submit examples/findings/PAPER.yaml --wait` against
// `reasonlab up --home HOME --port PORT` (a home of its own, so the page holds that paper's claims only),
// log in, open Claims, wait until every card has its verdict, and write docs/img/findings-PAPER-claims.png;
// the page's cards are printed as text too. Not a test (node --test skips this file name).
//
//   node e2e/findings_screenshot.mjs http://127.0.0.1:PORT admin PASSWORD PAPER
import { join } from 'node:path';
import { demoOutput, launchBrowser, signedInPage } from './harness.mjs';

const [url, username, password, paper] = process.argv.slice(2);
if (!url || !username || !password || !/^[a-z0-9_-]+$/.test(paper ?? '')) {
  console.error('usage: node e2e/findings_screenshot.mjs URL USERNAME PASSWORD PAPER');
  process.exit(2);
}
const { IMG, log } = demoOutput();
const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password }, { viewport: { width: 1440, height: 1000 } });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Claims' }).click();
  await page.waitForURL((u) => new URL(u).pathname === '/claims');
  const verdicts = page.locator('[data-testid$="-verdict"]');
  await verdicts.first().waitFor();
  await page.waitForTimeout(1500); // the cards' figures settle
  log(`${await verdicts.count()} claim cards: ${(await verdicts.allInnerTexts()).join(', ')}`);
  const path = join(IMG, `findings-${paper}-claims.png`);
  await page.screenshot({ path, fullPage: true });
  log(`wrote ${path}`);
} finally {
  await browser.close();
}
