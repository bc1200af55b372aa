// End-to-end check, in Chromium against the release binary, that runs of every session notify (issue 40, item 3):
// with session A on screen, session B's runs (started from elsewhere) asking and finishing (visible tab) and asking
// again (hidden tab) each give one system notification titled after B, "(1) " in the tab title and a dot on B's row in the sidebar, which
// stay until B is opened. The page learns of B from the activity feed (`GET /api/activity`), not from B's stream.
//
// Visibility and notifications are emulated as in notify.test.mjs (headless Chromium keeps every page visible and
// shows notifications no one can see from outside): an init script makes `document.hidden` switchable and records
// each `Notification` the page makes through the real API.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, sendPrompt, startServer } from './support.mjs';

const INIT = () => {
  let hidden = false;
  const proto = Document.prototype;
  Object.defineProperty(proto, 'hidden', { configurable: true, get: () => hidden });
  Object.defineProperty(proto, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
  window.__setHidden = (value) => {
    hidden = value;
    document.dispatchEvent(new Event('visibilitychange', { bubbles: true }));
  };
  const Real = window.Notification;
  window.__notifications = [];
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notifications.push({ title, body: options?.body, tag: options?.tag });
    }
  };
};

const notifications = (page) => page.evaluate(() => window.__notifications);
const setHidden = (page, hidden) => page.evaluate((hidden) => window.__setHidden(hidden), hidden);
const sendButton = (page) => page.getByRole('button', { name: 'Send' });
const row = (page, id) => page.locator(`.sidebar__item[data-session-id="${id}"]`);
const mark = (page, id) => row(page, id).getByRole('img', { name: 'New activity' });
const sessionOf = (page) => new URL(page.url()).pathname.split('/').at(-1);

/** Chromium with the permission granted, the init script, the setting on, and the activity feed open. */
async function openNotifyingChat(t, server) {
  const { context, page, check } = await openChat(t, server);
  await context.grantPermissions(['notifications'], { origin: server.origin });
  await context.addInitScript(INIT);
  const feed = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/activity', { timeout: 30_000 });
  await page.reload({ waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached' });
  await page.locator('[data-testid="notify-setting"]').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="notify-setting"]').checked);
  assert.equal((await feed).status(), 200);
  return { page, check };
}

/** Calls the API from the page (its cookie, its origin), as another tab of this browser would. */
function api(page, method, path, body) {
  return page.evaluate(
    async ({ method, path, body }) => {
      const response = await fetch(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      // A send's answer is its run's stream: the run goes on in the server whether or not anyone reads it.
      return path === '/api/chat' ? null : response.json();
    },
    { method, path, body },
  );
}

/** The id of the question session `id` waits on. */
async function pendingQuestion(page, id) {
  const detail = await page.evaluate(async (id) => (await fetch(`/api/sessions/${id}`)).json(), id);
  const parts = [...detail.messages, detail.pending].filter(Boolean).flatMap((m) => m.parts);
  const asking = parts.find((p) => p.type === 'tool-Question' && p.state === 'input-available');
  assert.ok(asking, `session ${id} waits on a question: ${JSON.stringify(detail)}`);
  return asking.toolCallId;
}

describe('notifications of every session', () => {
  let server;

  before(async () => {
    // The k-th model call of a session plays turn k, wrapping: each run asks, then answers once it has the answer.
    server = await startServer({
      script: {
        turns: [
          {
            text: 'One question.',
            toolCalls: [
              {
                name: 'question',
                arguments: { question: 'Which colour?', options: [{ id: 'red', label: 'Red' }, { id: 'blue', label: 'Blue' }] },
              },
            ],
          },
          { text: 'All set.' },
        ],
      },
    });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
  }, { timeout: 30_000 });

  test('with A on screen, B finishing and B asking (tab hidden) notify and mark B until it is opened', { timeout: 180_000 }, async (t) => {
    const { page, check } = await openNotifyingChat(t, server);
    const asking = page.locator('.question.tool--input-available');

    // Session A, looked at throughout: its question and its end notify nothing.
    await sendPrompt(page, 'Session A');
    await asking.getByRole('button', { name: 'Blue' }).click();
    await page.getByText('All set.').waitFor({ timeout: 30_000 });
    await sendButton(page).waitFor();
    const a = sessionOf(page);

    assert.deepEqual(await notifications(page), [], 'nothing while the session is looked at');

    // Session B is made and run from elsewhere (as another tab would) while A is on screen: the sidebar lists it
    // once its run starts, and its question notifies.
    const { session } = await api(page, 'POST', '/api/sessions', {});
    const b = session.sessionId;
    await api(page, 'POST', '/api/chat', { sessionId: b, message: 'Session B' });
    await page.waitForFunction(() => window.__notifications.length >= 1, null, { timeout: 30_000 });
    await mark(page, b).waitFor();
    assert.equal(await row(page, b).getAttribute('data-unseen'), 'true');
    assert.equal(await mark(page, a).isVisible(), false, "A's row, on screen, is not marked");
    assert.equal(await page.title(), '(1) chatwire');

    // B is answered elsewhere and finishes, still with A on screen.
    await api(page, 'POST', '/api/chat/question', {
      sessionId: b,
      toolCallId: await pendingQuestion(page, b),
      answer: { kind: 'single', selectedIds: ['blue'] },
    });
    await page.waitForFunction(() => window.__notifications.length >= 2, null, { timeout: 30_000 });
    assert.deepEqual(await notifications(page), [
      { title: 'Session B', body: 'The agent asks: Which colour?', tag: `chatwire-${b}` },
      { title: 'Session B', body: 'The answer is complete.', tag: `chatwire-${b}` },
    ]);
    assert.equal(await page.title(), '(2) chatwire');
    assert.equal(sessionOf(page), a, 'A stays on screen');

    // Opening B takes the mark off.
    await row(page, b).locator('.sidebar__link').click();
    await page.waitForURL(`**/s/${b}`);
    await mark(page, b).waitFor({ state: 'hidden' });
    assert.equal(await row(page, b).getAttribute('data-unseen'), null);
    await page.waitForFunction(() => document.title === 'chatwire');

    // Hidden, with A on screen: B's next run (started from elsewhere) asks.
    await row(page, a).locator('.sidebar__link').click();
    await page.waitForURL(`**/s/${a}`);
    await setHidden(page, true);
    await api(page, 'POST', '/api/chat', { sessionId: b, message: 'Again' });
    await page.waitForFunction(() => window.__notifications.length >= 3, null, { timeout: 30_000 });
    const [, , asked] = await notifications(page);
    assert.deepEqual(asked, { title: 'Session B', body: 'The agent asks: Which colour?', tag: `chatwire-${b}` });
    await mark(page, b).waitFor();
    assert.equal(await page.title(), '(1) chatwire');

    // Visible again on A: B is still not seen.
    await setHidden(page, false);
    await page.waitForFunction(() => document.title === '(1) chatwire');
    assert.equal(await mark(page, b).isVisible(), true, "B's mark stays until B is opened");

    // Opened: the mark goes, and B shows the question it waits on.
    await row(page, b).locator('.sidebar__link').click();
    await page.waitForURL(`**/s/${b}`);
    await mark(page, b).waitFor({ state: 'hidden' });
    await page.waitForFunction(() => document.title === 'chatwire');
    await asking.waitFor({ timeout: 30_000 });
    assert.equal((await notifications(page)).length, 3, 'opening B makes no new one');
    check();
  });
});
