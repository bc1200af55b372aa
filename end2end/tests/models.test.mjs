// End-to-end check of the model picker in Chromium against the release binary: a `--config` file with two scripted
// models that answer differently; the picker lists both, is reachable by keyboard, sends the picked one as `model`,
// and is remembered across reloads. With a single model there is nothing to pick and no picker.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { launchBrowser, makeTempDir, openApp, removeDir, startServer, waitForHydration, watchProblems } from './support.mjs';

const FIRST_ANSWER = 'The first model answers.';
const SECOND_ANSWER = 'The second model answers.';

const picker = '[data-testid="model-picker"]';
const textarea = '[data-testid="composer"] textarea';
const assistantMessages = '[data-testid="transcript"] .message[data-role="assistant"]';

/** Opens the printed URL in a new page of `context`; `answeredFor` waits for a response to a path. */
async function openPage(t, context, server) {
  const page = await context.newPage();
  const answered = [];
  page.on('response', (response) => answered.push(new URL(response.url()).pathname));
  t.after(() => page.close());
  await openApp(page, server);
  return {
    page,
    /** Waits until a response for `pathname` has arrived. */
    async answeredFor(pathname, timeout = 10_000) {
      const deadline = Date.now() + timeout;
      while (!answered.includes(pathname)) {
        assert.ok(Date.now() < deadline, `no response for ${pathname} within ${timeout} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

describe('model picker with two configured models', () => {
  let server;
  let configDir;
  let browser;
  let context;
  let watcher;

  before(async () => {
    configDir = await makeTempDir('chatwire-models-');
    const first = path.join(configDir, 'first.json');
    const second = path.join(configDir, 'second.json');
    await fs.writeFile(first, JSON.stringify({ turns: [{ text: FIRST_ANSWER }] }));
    await fs.writeFile(second, JSON.stringify({ turns: [{ text: SECOND_ANSWER }] }));
    const config = path.join(configDir, 'models.toml');
    await fs.writeFile(
      config,
      [
        '[[model]]',
        'name = "first"',
        'provider = "scripted"',
        `script = ${JSON.stringify(first)}`,
        '',
        '[[model]]',
        'name = "second"',
        'provider = "scripted"',
        `script = ${JSON.stringify(second)}`,
        '',
      ].join('\n'),
    );
    server = await startServer({ args: ['--config', config] });
    browser = await launchBrowser();
    context = browser.context;
    watcher = watchProblems(context);
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await removeDir(configDir);
  }, { timeout: 30_000 });

  test('the picked model answers, is sent as `model`, and is remembered', { timeout: 120_000 }, async (t) => {
    const { page } = await openPage(t, context, server);
    const select = page.locator(picker);
    await select.waitFor({ timeout: 10_000 });
    assert.deepEqual(await select.locator('option').allTextContents(), ['first', 'second']);
    assert.equal(await select.inputValue(), 'first', "the server's default is preselected");
    assert.equal(await select.getAttribute('aria-label'), 'Model');

    // Keyboard: after the message box come Attach, then the picker.
    await page.locator(textarea).focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'attach-button');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'model-picker');
    await select.selectOption('second');

    const sent = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && new URL(req.url()).pathname === '/api/chat') sent.push(req.postDataJSON());
    });
    await page.locator(textarea).fill('Who answers?');
    await page.locator(textarea).press('Enter');
    await page.locator(assistantMessages, { hasText: SECOND_ANSWER }).waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(assistantMessages, { hasText: FIRST_ANSWER }).count(), 0);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].model, 'second', 'the request names the picked model');

    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.locator(picker).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(picker).inputValue(), 'second', 'the pick survives a reload');
    watcher.check();
  });
});

describe('model picker with one model', () => {
  let server;
  let browser;
  let context;
  let watcher;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    context = browser.context;
    watcher = watchProblems(context);
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
  }, { timeout: 30_000 });

  test('there is nothing to pick, so no picker is shown', { timeout: 60_000 }, async (t) => {
    const { page, answeredFor } = await openPage(t, context, server);
    // The list arrives after hydration; once it is in and drawn, the picker must still be absent.
    await answeredFor('/api/models');
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    assert.equal(await page.locator(picker).count(), 0);
    watcher.check();
  });
});
