// End-to-end checks of the live client in Chromium against the release binary with a slow scripted model:
// streaming, Stop, reload and offline mid-run (no lost or doubled text), steering, and switching sessions.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACTS_DIR, launchBrowser, openApp, startServer, waitForHydration } from './support.mjs';

// Turn 1 streams numbered words slowly (about 10 s), so a test can act mid-run and then check that every word
// arrived exactly once and in order. Turn 2 answers a steered conversation's second model call.
const WORDS = Array.from({ length: 100 }, (_, i) => `word${String(i + 1).padStart(3, '0')}`);
const FULL_ANSWER = WORDS.join(' ');
const STEERED_REPLY = 'Steered reply.';
const SCRIPT = {
  chunkChars: 8,
  delayMs: 80,
  turns: [{ text: FULL_ANSWER }, { text: STEERED_REPLY, delayMs: 5 }],
};

const transcript = '[data-testid="transcript"]';
const assistantMessages = `${transcript} .message[data-role="assistant"]`;
const userMessages = `${transcript} .message[data-role="user"]`;

/** The words of the last assistant message, as shown. */
async function shownWords(page) {
  return page.evaluate((selector) => {
    const messages = document.querySelectorAll(selector);
    const text = messages.length ? messages[messages.length - 1].innerText : '';
    return text.match(/word\d{3}/g) ?? [];
  }, assistantMessages);
}

/** The roles of the transcript's messages, top to bottom. */
function roles(page) {
  return page.locator(`${transcript} .message`).evaluateAll((messages) => messages.map((m) => m.dataset.role));
}

/** Waits until the last assistant message shows at least `count` of the scripted words. */
async function waitForWords(page, count, timeout = 30_000) {
  await page.waitForFunction(
    ([selector, count]) => {
      const messages = document.querySelectorAll(selector);
      const text = messages.length ? messages[messages.length - 1].innerText : '';
      return (text.match(/word\d{3}/g) ?? []).length >= count;
    },
    [assistantMessages, count],
    { timeout },
  );
}

/** Waits until no run is shown: Send is back and the activity line is empty. */
async function waitForIdle(page, timeout = 60_000) {
  await page.getByRole('button', { name: 'Send', exact: true }).waitFor({ timeout });
  await page.waitForFunction(() => document.querySelector('[data-testid="activity"]')?.innerText.trim() === '', null, {
    timeout,
  });
}

/** Types a message and presses Enter. */
async function type(page, text) {
  const input = page.locator('[data-testid="composer"] textarea');
  await input.fill(text);
  await input.press('Enter');
}

/** Sends a prompt and waits until its run has started (the server echoes the prompt into the transcript). */
async function send(page, text) {
  await type(page, text);
  await page.locator(userMessages, { hasText: text }).waitFor({ timeout: 30_000 });
}

describe('chatwire live client', () => {
  let server;
  let browser;
  let context;

  before(async () => {
    server = await startServer({ script: SCRIPT });
    browser = await launchBrowser();
    context = browser.context;
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
  }, { timeout: 30_000 });

  /**
   * Opens a fresh page on the printed URL and records what goes wrong in it. A failed request counts as a problem unless the
   * client announced that it closed that stream on purpose (the events route tails forever, so the client cuts it
   * off once the run's last frame is in), or the test declared a window in which failures are its own doing
   * (`tolerate`: a reload aborts the streams in flight; going offline fails every request).
   */
  async function openPage(t) {
    const page = await context.newPage();
    const problems = [];
    const closedOnPurpose = new Set();
    let tolerating = null;
    page.on('console', (msg) => {
      const text = msg.text();
      const closed = text.match(/^chatwire: closed (\S+) after the run ended$/);
      if (closed) closedOnPurpose.add(new URL(closed[1], server.origin).href);
      if (msg.type() === 'error' && !tolerating?.test(text)) problems.push(`console error: ${text}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.stack || err.message}`));
    const failures = [];
    page.on('requestfailed', (req) => {
      failures.push({ req, errorText: req.failure()?.errorText, during: tolerating });
    });
    t.after(async () => {
      await page.close();
    });
    // The printed URL carries the token; the server trades it for a cookie and redirects to `/`.
    await openApp(page, server);
    return {
      page,
      /** Runs `action`; console errors matching `expected` and failures of streams in flight are its own doing. */
      async tolerate(expected, action) {
        tolerating = expected;
        try {
          return await action();
        } finally {
          tolerating = null;
        }
      },
      check() {
        for (const { req, errorText, during } of failures) {
          const url = new URL(req.url());
          const announced = errorText === 'net::ERR_ABORTED' && closedOnPurpose.has(url.href);
          const streams = req.method() === 'POST' ? url.pathname === '/api/chat' : /\/events$/.test(url.pathname);
          if (announced || (during && (streams || /ERR_INTERNET_DISCONNECTED/.test(errorText ?? '')))) continue;
          problems.push(`request failed: ${req.method()} ${req.url()} — ${errorText}`);
        }
        assert.deepEqual(problems, [], `browser reported problems:\n${problems.join('\n')}`);
      },
    };
  }

  test('a prompt streams its answer, and Stop ends the run keeping the partial text', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openPage(t);
    await send(page, 'Count for me');
    await page.locator(userMessages).first().waitFor();
    await waitForWords(page, 5);
    assert.match(await page.locator('[data-testid="activity"]').innerText(), /\S/, 'the activity line shows the run');
    // While text streams its dot holds still: a pulse would restyle the page on every animation frame.
    const dotAnimation = await page
      .locator('[data-testid="activity"] .activity__dot')
      .evaluate((dot) => getComputedStyle(dot).animationName);
    assert.equal(dotAnimation, 'none', 'the dot holds still while the answer streams');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitForIdle(page);
    const words = await shownWords(page);
    assert.ok(words.length >= 5 && words.length < WORDS.length, `partial answer kept (${words.length} words)`);
    assert.deepEqual(words, WORDS.slice(0, words.length), 'the partial answer is in order, without repeats');
    // The composer is usable again: a second prompt starts a new run (the script's second turn answers it).
    await send(page, 'Again');
    await page.getByText(STEERED_REPLY).waitFor({ timeout: 30_000 });
    await waitForIdle(page);
    assert.equal(await page.locator(userMessages).count(), 2);
    check();
  });

  test('a reload mid-run continues the same run to its end, without doubled text', { timeout: 120_000 }, async (t) => {
    const { page, tolerate, check } = await openPage(t);
    await send(page, 'Count, I will reload');
    await waitForWords(page, 10);
    const sessionUrl = page.url();
    assert.match(new URL(sessionUrl).pathname, /^\/s\//);
    await tolerate(/net::ERR_/, async () => {
      await page.reload({ waitUntil: 'domcontentloaded' });
      await waitForHydration(page);
    });
    assert.equal(page.url(), sessionUrl, 'the reload opens the same session');
    // The run goes on: Stop is offered while the rest of the answer streams in.
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ timeout: 10_000 });
    await waitForWords(page, 20);
    assert.deepEqual(await roles(page), ['user', 'assistant'], 'the prompt stays above the answer streaming into it');
    await waitForIdle(page);
    assert.deepEqual(await shownWords(page), WORDS, 'every word exactly once, in order');
    assert.equal(await page.locator(userMessages).count(), 1);
    assert.deepEqual(await roles(page), ['user', 'assistant'], 'and above it once the run is done');
    check();
  });

  test('offline mid-run shows Reconnecting and recovers without doubled text', { timeout: 120_000 }, async (t) => {
    const { page, tolerate, check } = await openPage(t);
    await send(page, 'Count, the network will drop');
    await waitForWords(page, 10);
    await tolerate(/net::ERR_/, async () => {
      await context.setOffline(true);
      await page.getByText('Reconnecting…').waitFor({ timeout: 10_000 });
      assert.ok(await page.getByRole('button', { name: 'Stop', exact: true }).isVisible(), 'still shown as running');
      await context.setOffline(false);
      await page.getByText('Reconnecting…').waitFor({ state: 'detached', timeout: 20_000 });
    });
    await waitForIdle(page);
    assert.deepEqual(await shownWords(page), WORDS, 'every word exactly once, in order');
    check();
  });

  test('a steering message is queued, then delivered into the transcript', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openPage(t);
    await send(page, 'Count, I will steer');
    await waitForWords(page, 3);
    await page.getByRole('button', { name: 'Steer', exact: true }).waitFor();
    await type(page, 'Please also say hello');
    await page.locator('[data-testid="queue"]', { hasText: 'Please also say hello' }).waitFor({ timeout: 10_000 });
    await page.locator(userMessages, { hasText: 'Please also say hello' }).waitFor({ timeout: 60_000 });
    await page.getByText(STEERED_REPLY).waitFor({ timeout: 60_000 });
    await waitForIdle(page);
    assert.equal(await page.locator('[data-testid="queue"]').count(), 0, 'the queue is empty after delivery');
    const first = await page.locator(assistantMessages).first().innerText();
    assert.deepEqual(first.match(/word\d{3}/g), WORDS, 'the first answer is whole');
    check();
  });

  test('switching sessions keeps both transcripts; back and forward work', { timeout: 180_000 }, async (t) => {
    const { page, check } = await openPage(t);
    await send(page, 'First session');
    await waitForIdle(page);
    const first = new URL(page.url()).pathname;
    // The page's own links and back/forward change the URL without loading the page again (client::location):
    // a value left on the window survives all of it.
    await page.evaluate(() => { window.__samePage = true; });
    await page.getByTestId('new-chat').click();
    await page.waitForURL((url) => url.pathname === '/');
    // Rows are drawn on animation frames: wait for the empty chat rather than sampling the page once.
    await page.waitForFunction((selector) => document.querySelectorAll(selector).length === 0, userMessages, { timeout: 10_000 });
    await send(page, 'Second session');
    await page.waitForURL((url) => url.pathname !== '/' && url.pathname !== first);
    const second = new URL(page.url()).pathname;
    await waitForIdle(page);

    const item = (pathname) => page.locator(`.sidebar__item[data-session-id="${pathname.slice(3)}"] a.sidebar__link`);
    await item(first).click();
    await page.waitForURL((url) => url.pathname === first);
    await page.locator(userMessages, { hasText: 'First session' }).waitFor();
    assert.equal(await page.locator(userMessages).count(), 1);
    // The answer's row may be drawn a frame after the prompt's: wait for it, then compare it whole.
    await waitForWords(page, WORDS.length, 10_000);
    assert.deepEqual(await shownWords(page), WORDS);

    await page.goBack();
    await page.waitForURL((url) => url.pathname === second);
    await page.locator(userMessages, { hasText: 'Second session' }).waitFor();
    assert.equal(await page.locator(userMessages).count(), 1);
    await waitForWords(page, WORDS.length, 10_000);
    assert.deepEqual(await shownWords(page), WORDS);

    await page.goForward();
    await page.waitForURL((url) => url.pathname === first);
    await page.locator(userMessages, { hasText: 'First session' }).waitFor();
    assert.equal(await page.evaluate(() => window.__samePage), true, 'a click or back/forward reloaded the page');
    check();
  });

  test('a session can be renamed in place and deleted after confirming', { timeout: 120_000 }, async (t) => {
    const { page, tolerate, check } = await openPage(t);
    await send(page, 'Name me');
    await waitForWords(page, 3);
    const id = new URL(page.url()).pathname.slice(3);
    const item = page.locator(`.sidebar__item[data-session-id="${id}"]`);
    // A running session cannot be deleted; the page says why.
    await tolerate(/status of 409/, async () => {
      await item.getByRole('button', { name: /^Delete/ }).click();
      await item.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'stop it before deleting' }).waitFor({ timeout: 10_000 });
    });
    // Esc in the composer stops the run, like the Stop button.
    await page.locator('[data-testid="composer"] textarea').press('Escape');
    await waitForIdle(page);
    assert.ok((await shownWords(page)).length < WORDS.length, 'Esc stopped the run');
    await item.getByRole('button', { name: /^Rename/ }).click();
    const input = item.locator('input.sidebar__rename');
    await input.fill('Renamed session');
    await input.press('Enter');
    await item.locator('.sidebar__title', { hasText: 'Renamed session' }).waitFor();

    await item.getByRole('button', { name: /^Delete/ }).click();
    await item.getByRole('button', { name: 'Cancel' }).click();
    await item.getByRole('button', { name: /^Delete/ }).click();
    await item.getByRole('button', { name: 'Delete', exact: true }).click();
    await item.waitFor({ state: 'detached' });
    await page.waitForURL((url) => url.pathname === '/');
    await fs.mkdir(ARTIFACTS_DIR, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'live-after-delete.png'), fullPage: true });
    check();
  });
});

// Plan mode: turn 1 writes the plan with todo_write, turn 2 sums it up; the conversation's next calls replay them.
const PLAN_SCRIPT = {
  chunkChars: 40,
  delayMs: 5,
  turns: [
    {
      text: 'Here is the plan.',
      toolCalls: [
        {
          name: 'todo_write',
          arguments: {
            todos: [
              { text: 'Read the code', status: 'pending' },
              { text: 'Write the fix', status: 'pending' },
            ],
          },
        },
      ],
    },
    { text: 'Plan summed up.' },
  ],
};

describe('chatwire plan mode', () => {
  let server;
  let browser;
  let context;

  before(async () => {
    server = await startServer({ script: PLAN_SCRIPT });
    browser = await launchBrowser();
    context = browser.context;
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
  }, { timeout: 30_000 });

  test('Plan mode sends mode "plan"; Execute and Refine answer a plan that waits for a decision', { timeout: 120_000 }, async (t) => {
    const page = await context.newPage();
    t.after(() => page.close());
    const problems = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => msg.type() === 'error' && problems.push(`console error: ${msg.text()}`));
    const bodies = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && new URL(req.url()).pathname === '/api/chat') bodies.push(JSON.parse(req.postData()));
    });
    await openApp(page, server);

    await page.getByRole('radio', { name: 'Plan' }).check();
    await send(page, 'Plan the fix');
    const decision = page.getByTestId('plan-decision');
    await decision.waitFor({ timeout: 30_000 });
    assert.equal(bodies.at(-1).mode, 'plan');
    assert.deepEqual(await decision.locator('li').allInnerTexts(), ['Read the code', 'Write the fix']);

    // Refine sends the message box's text as the requested change, still in plan mode.
    await page.locator('[data-testid="composer"] textarea').fill('Add a test step');
    await decision.getByRole('button', { name: 'Refine' }).click();
    // The scripted runs are quick: wait for the run's prompt in the transcript rather than for the card to blink.
    await page.waitForFunction((selector) => document.querySelectorAll(selector).length === 2, userMessages);
    assert.deepEqual([bodies.at(-1).planAction, bodies.at(-1).mode, bodies.at(-1).message], ['refine', 'plan', 'Add a test step']);
    await waitForIdle(page);
    await decision.waitFor({ timeout: 30_000 });
    // The session's detail carries the plan: a reload still offers the decision.
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await decision.waitFor({ timeout: 30_000 });

    await decision.getByRole('button', { name: 'Execute' }).click();
    await page.locator(userMessages, { hasText: 'Execute the plan.' }).waitFor({ timeout: 30_000 });
    assert.deepEqual([bodies.at(-1).planAction, bodies.at(-1).mode], ['execute', 'agent']);
    await waitForIdle(page);
    assert.equal(await decision.count(), 0, 'an executed plan asks for no decision');
    assert.ok(await page.getByRole('radio', { name: 'Agent' }).isChecked(), 'Execute switches the composer to Agent');
    assert.deepEqual(problems, []);
  });
});
