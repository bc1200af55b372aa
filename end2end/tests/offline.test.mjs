// End-to-end check of the installable app in Chromium against the release binary: the page is installable (a
// manifest with icons that load, a service worker that controls it), the worker keeps the shell and the hashed
// assets and nothing of /api, a reload with the server down opens the kept shell saying the server is unreachable,
// and once the server is back on the same address the page recovers by itself: the banner goes, the sessions and
// models load, and a message can be sent again.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, makeTempDir, openApp, removeDir, sendPrompt, startServer, waitForHydration } from './support.mjs';

const ANSWER = 'Answered while the server was up.';
const SCRIPT = { delayMs: 0, turns: [{ text: ANSWER }] };
// The same token for both servers, as a self-hoster who installed the app sets it: a random one per start would
// sign the page out at the restart.
const ARGS = ['--token', 'offline-test-token'];

/** What the worker's caches hold: the paths of every kept request, by cache. */
const keptPaths = (page) =>
  page.evaluate(async () => {
    const kept = {};
    for (const name of await caches.keys()) {
      const requests = await (await caches.open(name)).keys();
      kept[name] = requests.map((request) => new URL(request.url).pathname);
    }
    return kept;
  });

describe('chatwire as an installed app', () => {
  test('installs, opens offline to a clear state, and recovers by itself', { timeout: 120_000 }, async (t) => {
    const dataDir = await makeTempDir('chatwire-data-');
    t.after(() => removeDir(dataDir));
    let server = await startServer({ script: SCRIPT, dataDir, args: ARGS });
    t.after(() => server.stop());
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    // A panic or an uncaught error fails the test; failed requests are expected while the server is down.
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(error.stack || error.message));
    await openApp(page, server);

    const manifestHref = await page.locator('link[rel="manifest"]').getAttribute('href');
    const manifest = await page.evaluate(async (href) => (await fetch(href)).json(), manifestHref);
    assert.equal(manifest.start_url, '/');
    assert.equal(manifest.display, 'standalone');
    const sizes = manifest.icons.map((icon) => icon.sizes);
    assert.ok(sizes.includes('192x192') && sizes.includes('512x512'), `icons of 192 and 512 px: ${sizes}`);
    for (const icon of manifest.icons) {
      const response = await page.request.get(new URL(icon.src, server.origin).href);
      assert.equal(response.status(), 200, `${icon.src} loads`);
      assert.equal(response.headers()['content-type'], icon.type, `${icon.src} is served as ${icon.type}`);
    }

    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
    const cdp = await browser.context.newCDPSession(page);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    assert.deepEqual(installabilityErrors, [], 'Chromium finds the app installable');

    await sendPrompt(page, 'a question before the server goes away');
    await page.locator('[data-testid="transcript"] .message[data-role="assistant"]').getByText(ANSWER).waitFor();
    const sessionPath = new URL(page.url()).pathname;
    assert.match(sessionPath, /^\/s\//);

    const kept = await keptPaths(page);
    const everything = Object.values(kept).flat();
    assert.ok(everything.includes('/'), `the shell is kept: ${JSON.stringify(kept)}`);
    const shellAssets = await page.evaluate(() =>
      [...document.querySelectorAll('link[rel="stylesheet"], link[rel="modulepreload"], link[rel="preload"]')].map(
        (link) => new URL(link.href).pathname,
      ),
    );
    for (const asset of shellAssets) {
      assert.ok(everything.includes(asset), `${asset} is kept: ${JSON.stringify(kept)}`);
    }
    assert.deepEqual(
      everything.filter((path) => path.startsWith('/api/')),
      [],
      'nothing of /api is kept',
    );

    const address = new URL(server.url).host;
    await server.stop();
    await page.goto(`http://${address}/`, { waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.locator('[data-testid="unreachable"]').waitFor({ timeout: 15_000 });
    assert.match(await page.locator('[data-testid="unreachable"]').innerText(), /cannot be reached/);
    assert.equal(await page.locator('.chat__problem').count(), 0, 'no raw network error beside the banner');

    server = await startServer({ script: SCRIPT, dataDir, addr: address, args: ARGS });
    await page.locator('[data-testid="unreachable"]').waitFor({ state: 'detached', timeout: 20_000 });
    const sessionId = sessionPath.slice('/s/'.length);
    await page.locator(`.sidebar__item[data-session-id="${sessionId}"]`).waitFor({ timeout: 10_000 });
    await sendPrompt(page, 'a question once it is back');
    await page
      .locator('[data-testid="transcript"] .message[data-role="assistant"]')
      .getByText(ANSWER)
      .waitFor({ timeout: 30_000 });
    assert.notEqual(new URL(page.url()).pathname, sessionPath, 'a new session, reached without a page load');

    // Down again while the page is open: opening a session fails, and the page recovers the same way.
    await server.stop();
    await page.locator(`.sidebar__item[data-session-id="${sessionId}"] .sidebar__link`).click();
    await page.locator('[data-testid="unreachable"]').waitFor({ timeout: 15_000 });
    server = await startServer({ script: SCRIPT, dataDir, addr: address, args: ARGS });
    await page.locator('[data-testid="unreachable"]').waitFor({ state: 'detached', timeout: 20_000 });
    await page
      .locator('[data-testid="transcript"] .message[data-role="user"]')
      .getByText('a question before the server goes away')
      .waitFor({ timeout: 10_000 });
    assert.deepEqual(pageErrors, [], 'no uncaught error in the page');
  });
});
