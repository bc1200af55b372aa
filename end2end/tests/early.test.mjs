// End-to-end check in Chromium against the release binary: text typed into the server-rendered message box while
// the WASM is still loading is kept when the page comes alive, and can be sent at once.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, serverForSuite, waitForHydration, watchProblems } from './support.mjs';

describe('chatwire before hydration', () => {
  const suite = serverForSuite({ script: { delayMs: 0, turns: [{ text: 'Got it.' }] } });

  test('what is typed before the page is live is kept and sent', { timeout: 60_000 }, async (t) => {
    // The service worker would fetch the WASM itself, out of `page.route`'s reach.
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    const { check } = watchProblems(browser.context);
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    // Hold the WASM back until the text is typed, as a slow network would.
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    await page.route('**/*.wasm', async (route) => {
      await released;
      await route.continue();
    });
    await page.goto(suite.server.url, { waitUntil: 'domcontentloaded' });
    const input = page.locator('[data-testid="composer"] textarea');
    await input.fill('typed while loading');
    assert.equal(await page.locator('.app').getAttribute('data-hydrated'), 'false', 'the page was not live yet');
    release();
    await waitForHydration(page);
    assert.equal(await input.inputValue(), 'typed while loading', 'hydration kept the text');
    const send = page.getByRole('button', { name: 'Send' });
    assert.equal(await send.isEnabled(), true, 'it can be sent');
    await send.click();
    const prompt = page.locator('[data-testid="transcript"] .message[data-role="user"]').last();
    await prompt.getByText('typed while loading').waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="transcript"] .message[data-role="assistant"]').getByText('Got it.').waitFor();
    assert.equal(await input.inputValue(), '', 'the box is empty once sent');
    check();
  });
});
