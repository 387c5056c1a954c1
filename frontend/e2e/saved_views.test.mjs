// Saved views in the browser, in Debian's chromium against a real `reasonlab up`: one
// member searches the experiments list (the search lands in the URL's q), saves the view under a name and
// sees it in the sidebar; another member opens the view's URL (/views/<id>) and sees the same state (the
// same URL, the same search, the same experiments), with no rename or delete for a view not theirs.
// Screenshots in test-output/e2e/saved-views-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const MEG = { username: 'meg', password: 'tangerine-Orbit-4471' };
const MAX = { username: 'max', password: 'marmalade-Comet-9083' };
const NAMES = ['carma lambda 0.2', 'sraven k4', 'carma baseline', 'skillmix 2 experts'];

let platform;
let projectId;
let browser;
let page;
let viewId;

/** The experiments the list shows, by name. */
async function shownNames() {
  return page.locator('table[aria-label="experiments"] tbody tr td:nth-child(3)').allInnerTexts();
}

describe('saved views', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    projectId = (await platform.api('/projects')).find((p) => p.name === 'default').id;
    for (const name of NAMES) await platform.api('/experiments', { method: 'POST', body: { name, kind: 'diagnostic', spec: {} } });
    platform.cli('user', 'create', MEG.username, '--password', MEG.password, '--role', 'member');
    platform.cli('user', 'create', MAX.username, '--password', MAX.password, '--role', 'member');
    browser = await launchBrowser();
    page = await openPage(browser);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('a member searches, sees the search in the URL, saves the view and finds it in the sidebar', async () => {
    await signIn(page, platform.url, MEG, { named: true });
    await page.getByTestId('experiments-search').fill('carma');
    await page.waitForURL((u) => new URL(u).searchParams.get('q') === 'carma');
    await page.getByTestId('experiments-shown').filter({ hasText: '2 shown' }).waitFor();
    assert.deepEqual((await shownNames()).sort(), ['carma baseline', 'carma lambda 0.2']);

    await page.getByTestId('save-view').click();
    await page.getByTestId('view-name').fill('carma runs');
    await page.getByTestId('view-name-submit').click();
    await page.getByTestId('view-saved').filter({ hasText: 'Saved as carma runs' }).waitFor();
    const sidebar = page.getByRole('navigation', { name: 'Saved views' });
    const link = sidebar.getByRole('link', { name: 'carma runs' });
    await link.waitFor();
    viewId = Number(/^\/views\/(\d+)$/.exec(await link.getAttribute('href'))[1]);
    assert.ok(viewId > 0);
    assert.equal(await sidebar.getByRole('button', { name: 'Actions for view carma runs' }).count(), 1);
    await screenshot(page, 'saved-views-saved');

    const stored = await platform.api(`/projects/${projectId}/views/${viewId}`);
    assert.equal(stored.author, 'meg');
    assert.equal(stored.page, 'experiments');
    assert.equal(stored.state.query, 'carma');
  });

  it("another member opens the view's URL and sees the same state", async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login/);
    await signIn(page, platform.url, MAX, { named: true });
    assert.equal(await page.getByTestId('experiments-search').inputValue(), '');
    await page.goto(`${platform.url}/views/${viewId}`);
    await page.waitForURL((u) => new URL(u).pathname === '/experiments' && new URL(u).search === '?q=carma');
    assert.equal(await page.getByTestId('experiments-search').inputValue(), 'carma');
    await page.getByTestId('experiments-shown').filter({ hasText: '2 shown' }).waitFor();
    assert.deepEqual((await shownNames()).sort(), ['carma baseline', 'carma lambda 0.2']);
    const sidebar = page.getByRole('navigation', { name: 'Saved views' });
    await sidebar.getByRole('link', { name: 'carma runs' }).waitFor();
    assert.equal(await sidebar.getByRole('button', { name: 'Actions for view carma runs' }).count(), 0);
    await screenshot(page, 'saved-views-other-member');

    // the unsaved state's URL reproduces it too: a search typed here, opened afresh from its URL
    await page.getByTestId('experiments-search').fill('sraven');
    await page.waitForURL((u) => new URL(u).searchParams.get('q') === 'sraven');
    const url = page.url();
    await page.goto(`${platform.url}/`);
    await page.goto(url);
    assert.equal(await page.getByTestId('experiments-search').inputValue(), 'sraven');
    await page.getByTestId('experiments-shown').filter({ hasText: '1 shown' }).waitFor();
    assert.deepEqual(await shownNames(), ['sraven k4']);
  });
});
