// End-to-end check of the sidebar's search in Chromium against the release binary: two sessions run the scripted
// demo, a word of one answer is typed into the search box, the hit shows its session's title and a snippet with the
// word highlighted, and clicking it opens that session scrolled to that message; Esc clears the search. A hit on a
// message that an edit replaced opens the branch that message is on.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, startServer, waitForHydration } from './support.mjs';

const FILLER = Array.from({ length: 30 }, (_, i) => `Filler paragraph ${i} says nothing much.`).join('\n\n');

// The k-th answer of a session plays turn k: only a session's second answer names the zeppelin.
const SCRIPT = {
  delayMs: 0,
  chunkChars: 400,
  turns: [{ text: FILLER }, { text: 'The zeppelin landed at noon, on time.' }, { text: FILLER }, { text: FILLER }],
};

describe('search', () => {
  let server;

  before(async () => {
    server = await startServer({ script: SCRIPT });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
  }, { timeout: 30_000 });

  test('a word of one answer finds it highlighted, and the hit opens its session at that message', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1100, height: 700 } });
    const ids = await page.evaluate(async () => {
      const post = async (url, body) => {
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
        return response;
      };
      const made = async (title) => (await (await post('/api/sessions', { title })).json()).session.sessionId;
      const found = await made('Airship log');
      const other = await made('Other chat');
      for (const [sessionId, message] of [[found, 'one'], [found, 'two'], [found, 'three'], [found, 'four'], [other, 'one']]) {
        // The answer is a stream that ends with the run.
        await (await post('/api/chat', { sessionId, message })).text();
      }
      return { found, other };
    });
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.locator('[data-testid="sidebar"] .sidebar__item').nth(1).waitFor();

    const search = page.locator('[data-testid="search"]');
    await search.pressSequentially('zeppel', { delay: 20 });
    const hit = page.locator('[data-testid="search-hit"]');
    await hit.first().waitFor();
    assert.equal(await hit.count(), 1, 'only the one answer holds the word');
    assert.equal(await hit.locator('.search__title').textContent(), 'Airship log');
    assert.equal(await hit.locator('.search__snippet').textContent(), 'The zeppelin landed at noon, on time.');
    assert.deepEqual(await hit.locator('mark').allTextContents(), ['zeppelin'], 'the matched word is highlighted');
    assert.equal(await page.locator('[data-testid="sidebar"] nav.sidebar__list').isVisible(), false, 'the hits take the list\'s place');

    const [{ messageId }] = await page.evaluate(async () => (await (await fetch('/api/search?q=zeppelin')).json()).hits);
    // The mark lasts two seconds: watched from before the click, so a late look cannot miss it.
    await page.evaluate((id) => {
      window.__marked = false;
      new MutationObserver((records, observer) => {
        const marked = (record) => record.target.getAttribute('data-message-id') === id && record.target.hasAttribute('data-found');
        if (records.some(marked)) {
          window.__marked = true;
          observer.disconnect();
        }
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-found'] });
    }, messageId);
    await hit.click();
    await page.waitForURL(`**/s/${ids.found}`);
    const message = page.locator(`[data-testid="transcript"] [data-message-id="${messageId}"]`);
    await message.waitFor();
    await page.waitForFunction(() => window.__marked);
    const inView = await page.evaluate((id) => {
      const transcript = document.querySelector('[data-testid="transcript"]').getBoundingClientRect();
      const box = document.querySelector(`[data-message-id="${id}"]`).getBoundingClientRect();
      return box.top >= transcript.top - 1 && box.top < transcript.bottom;
    }, messageId);
    assert.ok(inView, 'the message is in view');
    const scrolledUp = await page.evaluate(() => {
      const scroller = document.querySelector('[data-testid="transcript"]');
      return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight > 200;
    });
    assert.ok(scrolledUp, 'the transcript is not left at its end, after the later answers');

    // Esc clears the search and brings the list back.
    await search.focus();
    await search.press('Escape');
    await page.locator('[data-testid="search-hits"]').waitFor({ state: 'detached' });
    assert.equal(await search.inputValue(), '');
    assert.equal(await page.locator('[data-testid="sidebar"] nav.sidebar__list').isVisible(), true);
    check();
  });

  test('a hit on the version an edit replaced opens the branch it is on, at that message', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1100, height: 700 } });
    const { sessionId, replaced } = await page.evaluate(async () => {
      const post = async (url, body) => {
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
        return response;
      };
      const sessionId = (await (await post('/api/sessions', { title: 'Marsupials' })).json()).session.sessionId;
      await (await post('/api/chat', { sessionId, message: 'Where do wombats sleep?' })).text();
      const replaced = (await (await fetch(`/api/sessions/${sessionId}`)).json()).messages[0].id;
      const rerun = { kind: 'edit', messageId: replaced };
      await (await post('/api/chat', { sessionId, message: 'Where do koalas sleep?', rerun })).text();
      return { sessionId, replaced };
    });
    const shownFirst = async () => (await page.evaluate(async (id) => (await (await fetch(`/api/sessions/${id}`)).json()).messages[0].id, sessionId));
    assert.notEqual(await shownFirst(), replaced, 'the edit shows its new version');
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);

    await page.locator('[data-testid="search"]').pressSequentially('wombats', { delay: 20 });
    const hit = page.locator('[data-testid="search-hit"]');
    await hit.first().waitFor();
    assert.equal(await hit.count(), 1, 'the replaced version is found');
    await hit.click();
    await page.waitForURL(`**/s/${sessionId}`);
    await page.waitForFunction((id) => document.querySelector(`[data-message-id="${id}"]`)?.hasAttribute('data-found'), replaced);
    const transcript = page.locator('[data-testid="transcript"]');
    assert.match(await transcript.locator(`[data-message-id="${replaced}"]`).innerText(), /wombats/);
    assert.doesNotMatch(await transcript.innerText(), /koalas/, 'the branch of the new version is not shown');
    await transcript.getByTestId('versions').getByText('1/2').waitFor();
    assert.equal(await shownFirst(), replaced, 'the server logged the switch: a reload shows the same branch');
    check();
  });
});
