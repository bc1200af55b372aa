// End-to-end check of the notifications in Chromium against the release binary, with the notification permission
// granted to the page's origin. A run that finishes, fails or waits for an approval or an answer while the tab is
// hidden gives one system notification, "(1) " in front of the tab title and a dot on the favicon; they clear when
// the tab is visible again; a visible tab gets none of it; clicking the notification opens its session.
//
// Headless Chromium reports every page as visible (a page behind another, a minimized window and focus emulation
// change nothing: all stay "visible", and no visibilitychange fires), so an init script makes `document.hidden` and
// `document.visibilityState` switchable and fires `visibilitychange` as the browser would. Real notifications are
// shown (their `show` event fires) but cannot be seen from outside the page, so the same script wraps the real
// `Notification` constructor to record each one made; the page still makes it through the real API.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { openChat, sendPrompt, startServer } from './support.mjs';

const ANSWER = 'Here is the answer you were waiting for, written slowly.';

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
      window.__notifications.push({ title, body: options?.body, tag: options?.tag, notification: this });
    }
  };
};

const notifications = (page) =>
  page.evaluate(() => window.__notifications.map(({ title, body, tag }) => ({ title, body, tag })));
// The page's own icon, which it carries as a `data:` URL (no request of its own while the page loads).
const PLAIN_ICON = `data:image/svg+xml,${fs.readFileSync(new URL('../../public/favicon.svg', import.meta.url), 'utf8').trim().replaceAll('%', '%25').replaceAll('#', '%23').replaceAll('<', '%3C').replaceAll('>', '%3E').replaceAll('"', "'")}`;
const favicon = (page) => page.evaluate(() => document.querySelector("link[rel~='icon']").getAttribute('href'));
const setHidden = (page, hidden) => page.evaluate((hidden) => window.__setHidden(hidden), hidden);
const answerText = (page) => page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();

/** A fresh Chromium with the permission granted and the init script, the app open and the setting turned on. */
async function openNotifyingChat(t, server) {
  const { context, page, check } = await openChat(t, server);
  await context.grantPermissions(['notifications'], { origin: server.origin });
  await context.addInitScript(INIT);
  await page.reload({ waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached' });
  const setting = page.locator('[data-testid="notify-setting"]');
  assert.equal(await setting.isChecked(), false, 'off until the user turns it on');
  // Not `check()`: the box shows the setting in effect, which follows the click once the permission is there.
  await setting.click();
  await page.waitForFunction(() => document.querySelector('[data-testid="notify-setting"]').checked);
  return { page, check };
}

/**
 * Waits until `count` notifications were made and then for `shown`, what the page draws once it has taken the last
 * frame that could notify (Send back after the run's end, a card that waits for the user): frames are looked at as
 * they arrive, before they are drawn, so any further notification would have been made by then.
 */
async function waitForNotifications(page, count, shown) {
  await page.waitForFunction((count) => window.__notifications.length >= count, count, { timeout: 30_000 });
  await shown.waitFor({ timeout: 30_000 });
  return notifications(page);
}

const sendButton = (page) => page.getByRole('button', { name: 'Send' });

describe('notifications: a run that finishes or fails', () => {
  let server;
  let failing;

  before(async () => {
    server = await startServer({ script: { chunkChars: 3, delayMs: 60, turns: [{ text: ANSWER }] } });
    failing = await startServer({
      script: { turns: [{ text: 'never shown', fail: { status: 400, message: 'The model refused', times: 99 } }] },
    });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await failing?.stop();
  }, { timeout: 30_000 });

  test('a finished run while hidden: one notification, "(1) " and the dot until seen; nothing while visible', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openNotifyingChat(t, server);
    assert.equal(await page.title(), 'chatwire');
    assert.equal(await favicon(page), PLAIN_ICON);

    // Visible: the run ends with nothing of the sort.
    await sendPrompt(page, 'First, while I watch');
    await answerText(page).getByText(ANSWER).waitFor({ timeout: 30_000 });
    // Send is back once the run's last frame is drawn, and each frame is looked at before it is drawn.
    await sendButton(page).waitFor();
    assert.equal(await page.title(), 'chatwire');
    assert.deepEqual(await notifications(page), [], 'no notification while the tab is visible');
    const sessionId = new URL(page.url()).pathname.split('/').at(-1);

    // Hidden: the run's end notifies once, and the title and icon say so.
    await sendPrompt(page, 'Second, while I am away');
    await page.locator('.composer button', { hasText: 'Stop' }).waitFor();
    await setHidden(page, true);
    const shown = await waitForNotifications(page, 1, sendButton(page));
    assert.deepEqual(shown, [
      { title: 'First, while I watch', body: 'The answer is complete.', tag: `chatwire-${sessionId}` },
    ]);
    assert.equal(await page.title(), '(1) chatwire');
    assert.match(await favicon(page), /^data:image\/svg\+xml,.*circle/);

    // Seen: the tab visible again with that session open.
    await setHidden(page, false);
    await page.waitForFunction(() => document.title === 'chatwire');
    assert.equal(await favicon(page), PLAIN_ICON);
    await answerText(page).getByText(ANSWER).waitFor();
    assert.equal((await notifications(page)).length, 1, 'seeing it makes no new one');

    // Clicking a notification brings its session back, here after the page went to a new chat meanwhile.
    await sendPrompt(page, 'Third, to click on');
    await page.locator('.composer button', { hasText: 'Stop' }).waitFor();
    await setHidden(page, true);
    assert.equal((await waitForNotifications(page, 2, sendButton(page))).length, 2);
    assert.equal(await page.title(), '(1) chatwire');
    await page.evaluate(() => {
      history.pushState(null, '', '/');
      dispatchEvent(new PopStateEvent('popstate'));
    });
    await page.waitForURL((url) => url.pathname === '/');
    await page.evaluate(() => window.__notifications[1].notification.dispatchEvent(new Event('click')));
    await page.waitForURL(`**/s/${sessionId}`);
    await setHidden(page, false);
    await page.waitForFunction(() => document.title === 'chatwire');
    check();
  });

  test('a failed run while hidden notifies with the error', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openNotifyingChat(t, failing);
    await setHidden(page, true);
    await sendPrompt(page, 'Try something');
    const all = await waitForNotifications(page, 1, sendButton(page));
    assert.equal(all.length, 1);
    const [shown] = all;
    assert.equal(shown.title, 'Try something');
    assert.match(shown.body, /^The run failed: .*The model refused/);
    assert.equal(await page.title(), '(1) chatwire');
    await setHidden(page, false);
    await page.waitForFunction(() => document.title === 'chatwire');
    check();
  });
});

describe('notifications: a run that waits for the user', () => {
  let server;

  before(async () => {
    server = await startServer({
      args: ['--approve', 'writes'],
      script: {
        turns: [
          { text: 'Let me look.', toolCalls: [{ name: 'bash', arguments: { command: 'echo hello' } }] },
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

  test('an approval and a question while hidden each notify', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openNotifyingChat(t, server);
    await setHidden(page, true);
    await sendPrompt(page, 'Run a command');
    const approveButton = page.locator('.approval button', { hasText: 'Approve' });
    const untilApproval = await waitForNotifications(page, 1, approveButton);
    assert.equal(untilApproval.length, 1);
    const [approval] = untilApproval;
    assert.equal(approval.body, 'Bash waits for your approval.');
    assert.equal(await page.title(), '(1) chatwire');
    assert.match(await favicon(page), /^data:image\/svg\+xml,/);

    // Approved from the (emulated) background: the question that follows is a second event.
    await approveButton.click();
    const asking = page.locator('.question.tool--input-available');
    const untilQuestion = await waitForNotifications(page, 2, asking);
    assert.equal(untilQuestion.length, 2);
    const [, question] = untilQuestion;
    assert.equal(question.body, 'The agent asks: Which colour?');
    assert.equal(await page.title(), '(2) chatwire');

    // Seen; answered while visible, the run's end is not notified.
    await setHidden(page, false);
    await page.waitForFunction(() => document.title === 'chatwire');
    assert.equal(await favicon(page), PLAIN_ICON);
    await asking.getByRole('button', { name: 'Blue' }).click();
    await answerText(page).getByText('All set.').waitFor({ timeout: 30_000 });
    await sendButton(page).waitFor();
    assert.equal(await page.title(), 'chatwire');
    assert.equal((await notifications(page)).length, 2, 'a visible tab is not notified');
    check();
  });
});
