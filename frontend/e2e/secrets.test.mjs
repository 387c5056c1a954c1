// Project secrets in the browser, in Debian's chromium against a real `reasonlab up`: a project
// admin opens Settings, gets the API's 422 on the name field, sets a secret with the host it may be sent to
// and sees its name listed with that host and who set it, then edits its hosts alone; the value
// is in no API response the page received, not in the page's DOM, its inputs or its storage; a viewer sees
// the names and hosts read-only with the note; the admin deletes it after a confirmation.
// Screenshots in test-output/e2e/secrets-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const VALUE = `sk-e2e-${Date.now().toString(36)}-never-shown`;
const ADMIN = { username: 'pia', password: 'tangerine-Orbit-4471' };
const VIEWER = { username: 'vic', password: 'marmalade-Comet-9083' };

let platform;
let projectId;
let browser;
let page;
/** every answer of the API the page received: url, status and body (read after the answer is recorded) */
const responses = [];
/** the bodies still being read: an answer is recorded the moment it arrives, its body a moment later (a busy
 *  machine once let the page show a deletion's result before the 204 was recorded) */
const bodiesRead = [];
/** the page's Content-Security-Policy reports (backend/http/security_headers.py; e2e/security.test.mjs walks the other pages) */
const cspViolations = [];

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/login/);
}

/** Where the value shows in the page: its HTML, any input's value, its local and session storage. */
async function valueInPage() {
  return page.evaluate((value) => {
    const where = [];
    if (document.documentElement.outerHTML.includes(value)) where.push('DOM');
    if ([...document.querySelectorAll('input, textarea')].some((i) => i.value.includes(value))) where.push('input');
    for (const [name, store] of [['localStorage', localStorage], ['sessionStorage', sessionStorage]])
      if (Object.values(store).some((v) => String(v).includes(value))) where.push(name);
    return where;
  }, VALUE);
}

async function assertNoResponseHasValue() {
  await Promise.all(bodiesRead);
  const leaks = responses.filter((r) => r.body.includes(VALUE)).map((r) => `${r.status} ${r.url}`);
  assert.deepEqual(leaks, []);
}

describe('project secrets', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    // asked before the CLI: execFileSync blocks the event loop, and fetch's idle connection, closed by the
    // server meanwhile, would be reused before node saw it close ("other side closed")
    projectId = (await platform.api('/projects')).find((p) => p.name === 'default').id;
    platform.cli('user', 'create', ADMIN.username, '--password', ADMIN.password, '--role', 'admin');
    platform.cli('user', 'create', VIEWER.username, '--password', VIEWER.password, '--role', 'viewer');
    browser = await launchBrowser();
    page = await openPage(browser);
    page.on('console', (m) => /Content Security Policy/i.test(m.text()) && cspViolations.push(m.text()));
    page.on('response', async (r) => {
      if (!new URL(r.url()).pathname.startsWith('/api/')) return;
      const answer = { url: r.url(), status: r.status(), body: '' };
      responses.push(answer);
      bodiesRead.push(r.text().then((b) => (answer.body = b), () => {})); // a 204 has none
    });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it("a project admin sees the API's 422 on the name, then sets a secret and sees its name listed, never its value", async () => {
    allowErrors(page, /status of 422/, 'the test sends a bad secret name on purpose: the API answers 422');
    await signIn(page, platform.url, ADMIN, { named: true });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL(/\/settings\/secrets$/);
    await page.getByRole('heading', { name: 'Settings of default' }).waitFor();
    await page.getByTestId('secrets-empty').waitFor();

    const name = page.getByLabel('Name');
    const value = page.getByLabel('Value');
    assert.equal(await value.getAttribute('type'), 'password');
    await name.fill('1-bad-name');
    await value.fill(VALUE);
    await page.getByTestId('save-secret').click();
    await page.locator('input[aria-invalid="true"]').first().waitFor();
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    const describedBy = (await name.getAttribute('aria-describedby')).split(' ');
    const messages = await Promise.all(describedBy.map((id) => page.locator(`[id="${id}"]`).innerText().catch(() => '')));
    assert.ok(messages.some((m) => /should match pattern/.test(m)), messages.join(' | '));
    await screenshot(page, 'secrets-422');

    await name.fill('OPENAI_API_KEY');
    await page.getByTestId('secret-form').getByLabel('Sent only to').fill('api.openai.com');
    await page.getByTestId('save-secret').click();
    const row = page.locator('[data-testid="secret-row"][data-name="OPENAI_API_KEY"]');
    await row.waitFor();
    assert.match(await row.innerText(), /OPENAI_API_KEY\s+api\.openai\.com\s+pia\s+\d+s ago/);
    assert.equal(await value.inputValue(), '');
    assert.equal(await name.inputValue(), '');
    assert.equal(await name.getAttribute('aria-invalid'), 'false');
    await page.mouse.move(0, 0);
    await screenshot(page, 'secrets-admin');

    assert.deepEqual(await valueInPage(), []);
    assert.ok(responses.some((r) => r.url.endsWith('/secrets/OPENAI_API_KEY') && r.status === 200));
    await assertNoResponseHasValue();
    const listed = await platform.api(`/projects/${projectId}/secrets`);
    assert.deepEqual(listed.map((s) => [s.name, s.hosts, s.updated_by]), [['OPENAI_API_KEY', ['api.openai.com'], 'pia']]);
    assert.ok(!JSON.stringify(listed).includes(VALUE));

    // its hosts alone, without the value: a bad entry is the API's 422 on the field, then saved
    await page.getByRole('button', { name: 'hosts of OPENAI_API_KEY' }).click();
    const dialog = page.getByTestId('secret-hosts-form');
    await dialog.waitFor();
    const hosts = dialog.getByLabel('Sent only to');
    await hosts.fill('api.openai.com\nftp://files.example.com/');
    await dialog.getByRole('button', { name: 'Save hosts' }).click();
    await dialog.locator('textarea[aria-invalid="true"]').waitFor();
    assert.match(await dialog.innerText(), /host 2: .*http and https/);
    await hosts.fill('api.openai.com\nhttps://proxy.example.com/openai');
    await dialog.getByRole('button', { name: 'Save hosts' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row.getByText('https://proxy.example.com/openai').waitFor();
    await screenshot(page, 'secrets-hosts');
    const edited = await platform.api(`/projects/${projectId}/secrets`);
    assert.deepEqual(edited[0].hosts, ['api.openai.com', 'https://proxy.example.com/openai']);
    assert.ok(!responses.some((r) => r.url.includes('/secrets/') && r.status === 200 && r.body.includes(VALUE)));
  });

  it('a viewer sees the names read-only, with the note', async () => {
    await signOut();
    await signIn(page, platform.url, VIEWER, { named: true });
    await page.goto(`${platform.url}/settings`);
    await page.waitForURL(/\/settings\/secrets$/);
    await page.locator('[data-testid="secret-row"][data-name="OPENAI_API_KEY"]').waitFor();
    assert.match(await page.getByTestId('secrets-read-only').innerText(), /Only project admins set secrets.*api_key_secret: NAME/);
    assert.equal(await page.getByTestId('secret-form').count(), 0);
    assert.equal(await page.getByRole('button', { name: /delete|replace|hosts of/i }).count(), 0);
    assert.match(await page.locator('[data-testid="secret-row"][data-name="OPENAI_API_KEY"]').innerText(), /proxy\.example\.com/);
    await screenshot(page, 'secrets-viewer');
    assert.deepEqual(await valueInPage(), []);
  });

  it('the admin deletes it, after a confirmation', async () => {
    await signOut();
    await signIn(page, platform.url, ADMIN, { named: true });
    await page.goto(`${platform.url}/settings/secrets`);
    const row = page.locator('[data-testid="secret-row"][data-name="OPENAI_API_KEY"]');
    await row.waitFor();

    await page.getByRole('button', { name: 'delete OPENAI_API_KEY' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete secret OPENAI_API_KEY?' });
    await dialog.waitFor();
    await page.waitForTimeout(400); // the dialog's opening transition
    await screenshot(page, 'secrets-delete-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await row.count(), 1);

    await page.getByRole('button', { name: 'delete OPENAI_API_KEY' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByTestId('secrets-empty').waitFor();
    assert.deepEqual(await platform.api(`/projects/${projectId}/secrets`), []);
    assert.ok(responses.some((r) => r.url.endsWith('/secrets/OPENAI_API_KEY') && r.status === 204));
    await assertNoResponseHasValue();
    assert.deepEqual(await valueInPage(), []);
    assert.deepEqual(cspViolations, []);
  });
});
