// Project datasets in the browser, in Debian's chromium against a real `reasonlab up` whose datasets may
// hold at most 4096 bytes: a project admin opens Settings > Datasets, gets the API's 422 on the Name field,
// uploads a small JSONL through the file picker (the name defaults to the file's) and sees it listed with
// its size; the API holds the very bytes (its sha256 is the file's); a file over the limit gets the API's
// 413 on the File field; a member gets the form and Replace but no Delete on the admin's dataset; a viewer
// sees the list and the spec line, no form, no Replace and no Delete; the admin deletes it after a
// confirmation. Screenshots in test-output/e2e/datasets-*.png.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const LIMIT = 4096;
const ADMIN = { username: 'pia', password: 'tangerine-Orbit-4471' };
const MEMBER = { username: 'mia', password: 'clementine-Nova-2290' };
const VIEWER = { username: 'vic', password: 'marmalade-Comet-9083' };
const JSONL = '{"input": "2+2", "output": "4"}\n{"input": "3+4", "output": "7"}\n';

let platform;
let projectId;
let browser;
let page;
/** the page's dataset requests the API answered: method, url, status */
const answers = [];

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/login/);
}

async function openDatasets() {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  await page.waitForURL(/\/settings\/secrets$/);
  await page.getByRole('tab', { name: 'Datasets' }).click();
  await page.waitForURL(/\/settings\/datasets$/);
  await page.getByTestId('project-datasets').waitFor();
}

async function fieldError(input) {
  const ids = ((await input.getAttribute('aria-describedby')) ?? '').split(' ').filter(Boolean);
  const texts = await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).innerText().catch(() => '')));
  return texts.join(' | ');
}

const row = (name) => page.locator(`[data-testid="dataset-row"][data-name="${name}"]`);

describe('project datasets', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0, env: { REASONLAB_DATASET_MAX_BYTES: String(LIMIT) } });
    projectId = (await platform.api('/projects')).find((p) => p.name === 'default').id;
    platform.cli('user', 'create', ADMIN.username, '--password', ADMIN.password, '--role', 'admin');
    platform.cli('user', 'create', MEMBER.username, '--password', MEMBER.password, '--role', 'member');
    platform.cli('user', 'create', VIEWER.username, '--password', VIEWER.password, '--role', 'viewer');
    browser = await launchBrowser();
    page = await openPage(browser);
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.includes('/datasets')) answers.push({ method: r.request().method(), url: r.url(), status: r.status() });
    });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it("a project admin gets the API's 422 on the name, uploads a JSONL through the page and sees it listed with its size", async () => {
    allowErrors(page, /status of 422/, 'the test uploads under a bad name on purpose: the API answers 422');
    await signIn(page, platform.url, ADMIN, { named: true });
    await openDatasets();
    await page.getByTestId('datasets-empty').waitFor();

    const file = page.getByLabel('File');
    const name = page.getByLabel('Name');
    await file.setInputFiles({ name: 'train.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(JSONL) });
    assert.equal(await name.inputValue(), 'train.jsonl');

    await name.fill('my train.jsonl');
    await page.getByTestId('upload-dataset').click();
    await page.locator('input[aria-invalid="true"]').first().waitFor();
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    assert.match(await fieldError(name), /should match pattern/);
    assert.ok(answers.some((a) => a.method === 'PUT' && a.status === 422));
    await screenshot(page, 'datasets-422');

    await name.fill('train.jsonl');
    assert.notEqual(await name.getAttribute('aria-invalid'), 'true');
    await page.getByTestId('upload-dataset').click();
    await row('train.jsonl').waitFor();
    assert.equal(await row('train.jsonl').getByTestId('dataset-size').innerText(), `${JSONL.length} B`);
    assert.match(await row('train.jsonl').innerText(), /pia/);
    assert.equal(await name.inputValue(), '');

    // the API holds the file's own bytes: its size and checksum are the file's
    const sha256 = createHash('sha256').update(JSONL).digest('hex');
    const listed = await platform.api(`/projects/${projectId}/datasets`);
    assert.deepEqual(listed.map((d) => [d.name, d.size, d.sha256, d.uploaded_by]), [['train.jsonl', JSONL.length, sha256, 'pia']]);
    assert.match(await row('train.jsonl').innerText(), new RegExp(sha256.slice(0, 12)));
    assert.equal(await page.getByTestId('dataset-spec-line').locator('code').innerText(), 'data.path: dataset:train.jsonl');
    await page.mouse.move(0, 0);
    await screenshot(page, 'datasets-admin');
  });

  it("a file over the server's limit gets its 413 on the File field", async () => {
    allowErrors(page, /status of 413/, "the test uploads a file over the server's limit on purpose: the API answers 413");
    await page.getByLabel('File').setInputFiles({ name: 'big.jsonl', mimeType: 'application/jsonl', buffer: Buffer.alloc(LIMIT + 1, 'x') });
    await page.getByTestId('upload-dataset').click();
    const file = page.getByLabel('File');
    await page.locator('input[type="file"][aria-invalid="true"]').waitFor();
    assert.match(await fieldError(file), new RegExp(`at most ${LIMIT} bytes`));
    assert.ok(answers.some((a) => a.method === 'PUT' && a.status === 413));
    assert.equal(await page.locator('[data-testid="dataset-row"]').count(), 1);
    await screenshot(page, 'datasets-413');
  });

  it("a member gets the form and Replace, but no Delete on the admin's dataset", async () => {
    await signOut();
    await signIn(page, platform.url, MEMBER, { named: true });
    await page.goto(`${platform.url}/settings/datasets`);
    await row('train.jsonl').waitFor();
    // the role comes with /auth/me, which may answer after the list: the form shows once it is known
    await page.getByTestId('dataset-form').waitFor();
    assert.equal(await page.getByRole('button', { name: 'replace train.jsonl' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'delete train.jsonl' }).count(), 0);
  });

  it('a viewer sees the list and the spec line; no form, no Replace and no Delete', async () => {
    await signOut();
    await signIn(page, platform.url, VIEWER, { named: true });
    await page.goto(`${platform.url}/settings/datasets`);
    await row('train.jsonl').waitFor();
    // what is absent is judged once the role is known (/auth/me may answer after the list)
    await page.getByTestId('settings-role').filter({ hasText: 'you: viewer' }).waitFor();
    assert.match(await page.getByTestId('datasets-read-only').innerText(), /Project members and admins upload them/);
    assert.equal(await page.getByTestId('dataset-form').count(), 0);
    assert.equal(await page.getByRole('button', { name: /^(delete|replace) / }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'copy the spec line' }).count(), 1);
    await screenshot(page, 'datasets-viewer');
  });

  it('the admin deletes it, after a confirmation', async () => {
    await signOut();
    await signIn(page, platform.url, ADMIN, { named: true });
    await page.goto(`${platform.url}/settings/datasets`);
    await row('train.jsonl').waitFor();

    await page.getByRole('button', { name: 'delete train.jsonl' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete dataset train.jsonl?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await row('train.jsonl').count(), 1);

    await page.getByRole('button', { name: 'delete train.jsonl' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByTestId('datasets-empty').waitFor();
    assert.deepEqual(await platform.api(`/projects/${projectId}/datasets`), []);
    assert.ok(answers.some((a) => a.method === 'DELETE' && a.status === 204));
  });
});
