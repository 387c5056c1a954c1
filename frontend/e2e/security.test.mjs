// The dashboard under the API's security headers (backend/http/security_headers.py; docs/operations.md, Security), in
// Debian's chromium against a real `reasonlab up`: every page renders with no Content-Security-Policy
// violation, and a page of another origin cannot read the API (no CORS unless configured).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, newExperimentForm, screenshot, signIn, startPlatform } from './harness.mjs';

const RUN_TIMEOUT = 120_000;
let platform;
let browser;
let page;
const violations = [];

async function waitForRun(runId) {
  const deadline = Date.now() + RUN_TIMEOUT;
  for (;;) {
    const run = await platform.api(`/runs/${runId}`);
    if (['succeeded', 'failed', 'cancelled'].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

describe('security headers', { timeout: 600_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    // chromium reports each blocked script, style, image or connection on the console ("Refused to ...
    // because it violates the following Content Security Policy directive"); the event catches the rest
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
    });
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`),
      );
    });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('serves the dashboard and the API with the security headers', async () => {
    for (const path of ['/', '/runs/1', '/api/v1/health']) {
      const r = await fetch(`${platform.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(r.headers.get('x-frame-options'), 'DENY', path);
      assert.equal(r.headers.get('referrer-policy'), 'no-referrer', path);
      assert.match(r.headers.get('content-security-policy'), /frame-ancestors 'none'/, path);
    }
    const csp = (await fetch(`${platform.url}/`)).headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'(;|$)/);
  });

  it('renders every page with no CSP violation', async () => {
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'csp run', kind: 'diagnostic', spec: { train: { steps: 30, step_delay: 0.01, checkpoint_every: 10 } } },
    });
    const runId = exp.runs[0].id;
    await waitForRun(runId);

    await signIn(page, platform.url, platform.admin);
    await page.getByRole('heading', { name: /Experiments in default/ }).waitFor();

    await newExperimentForm(page, platform.url);

    await page.goto(`${platform.url}/experiments/${exp.id}`);
    await page.getByTestId('experiment-name').filter({ hasText: 'csp run' }).waitFor();

    await page.goto(`${platform.url}/runs/${runId}`);
    const chart = page.getByTestId('metric-chart-loss');
    await chart.waitFor();
    const canvas = chart.locator('canvas').first();
    await canvas.waitFor();
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2); // the chart's HTML tooltip
    await page.waitForTimeout(500);
    await screenshot(page, 'security-run-under-csp');
    await page.getByRole('tab', { name: /Results/ }).click();
    await page.getByTestId('result-diagnostic').waitFor();
    await page.getByRole('tab', { name: 'Logs' }).click();
    await page.waitForTimeout(300);

    await page.goto(`${platform.url}/compare?runs=${runId}`);
    await page.waitForTimeout(1000);
    await page.goto(`${platform.url}/activity`);
    await page.waitForTimeout(500);
    await page.goto(`${platform.url}/no/such/page`);
    await page.waitForTimeout(500);

    assert.deepEqual(violations, []);
  });

  it('gives a page of another origin no read of the API', async () => {
    const other = await browser.context.newPage();
    const why = 'a page of another origin fetches the API on purpose: chromium blocks it and says so';
    allowErrors(other, /has been blocked by CORS policy/, why);
    allowErrors(other, /Failed to load resource: net::ERR_FAILED/, why);
    await other.goto('about:blank');
    const outcome = await other.evaluate(async (url) => {
      try {
        const r = await fetch(`${url}/api/v1/health`);
        return `read ${r.status}`;
      } catch (e) {
        return `blocked: ${e.name}`;
      }
    }, platform.url);
    assert.equal(outcome, 'blocked: TypeError');
    await other.close();
  });
});
