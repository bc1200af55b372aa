// End-to-end check of a long session in Chromium against the release binary: a session of 120 messages (60 runs,
// each a bash call and a long markdown answer) opens at its end with only the groups near the viewport built, and
// the rest stand-in boxes as tall as the drawn groups on average; stepping up to the top builds what comes near without moving the text being read; and a
// search hit in a message far from the end builds its group and scrolls to it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, seedSession, startServer, waitForHydration } from './support.mjs';

const RUNS = 60;
const MESSAGES = 2 * RUNS;
const ANSWER = Array.from(
  { length: 6 },
  (_, i) =>
    `### Part ${i}\n\nThe parser keeps *only* the open tail of the input, so part ${i} costs what it adds.\n\n` +
    `| case | before | after |\n|---|---:|---:|\n| small | ${i} ms | ${i / 2} ms |\n`,
).join('\n');

// Each run makes two model calls: the bash call, then the answer that sees its output.
const SCRIPT = {
  delayMs: 0,
  chunkChars: 400,
  turns: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo measured' } }] }, { text: `Here is the answer.\n\n${ANSWER}` }],
};

/** The transcript's scroll position and what of it is built. */
const transcriptState = (page) =>
  page.evaluate(() => {
    const scroller = document.querySelector('[data-testid="transcript"]');
    return {
      top: scroller.scrollTop,
      fromBottom: scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight,
      built: scroller.querySelectorAll('.message').length,
      boxes: scroller.querySelectorAll('.message-group--unbuilt').length,
    };
  });

/** Two animation frames and a pause: the transcript builds the groups a scroll brought near and keeps its anchor. */
const settle = async (page) => {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.waitForTimeout(60);
};

describe('long session', () => {
  let server;
  let sessionId;

  before(async () => {
    server = await startServer({ script: SCRIPT, args: ['--approve', 'never'] });
    const prompts = Array.from({ length: RUNS }, (_, i) => (i === 3 ? 'Question number 3, about the zeppelin' : `Question number ${i}`));
    sessionId = await seedSession(server, 'Long session', prompts);
  }, { timeout: 180_000 });

  after(async () => {
    await server?.stop();
  }, { timeout: 30_000 });

  test('opens at its end with only the groups near the viewport built, and scrolls up without a jump', { timeout: 180_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1100, height: 800 } });
    // When the transcript's first row is in the page, to see that the lists' chunk waited for it.
    await page.addInitScript(() => {
      new MutationObserver((_, observer) => {
        if (document.querySelector('[data-testid="transcript"] .message')) {
          window.__rowsAt = performance.now();
          observer.disconnect();
        }
      }).observe(document, { subtree: true, childList: true });
    });
    await page.goto(new URL(`/s/${sessionId}`, server.origin).href, { waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    const last = page.locator(`[data-testid="transcript"] .message`).filter({ hasText: `Question number ${RUNS - 1}` });
    await last.waitFor({ state: 'attached', timeout: 30_000 });
    await settle(page);

    // The transcript came from the preload the page's `Link` header asked for with the page, not from a second
    // request made once the WASM had hydrated the page. So did the session's chunk: the page asked for its files
    // itself, before it was hydrated (the hydrated page asks for its list of sessions at once), and the loader took
    // those answers instead of asking again.
    const requests = await page.evaluate(() =>
      performance.getEntriesByType('resource').map((e) => ({ path: new URL(e.name).pathname, initiator: e.initiatorType, start: e.startTime })),
    );
    const of = (test) => requests.filter(({ path }) => test(path));
    const transcript = of((path) => path === `/api/sessions/${sessionId}`);
    assert.deepEqual(transcript.map((e) => e.initiator), ['link'], 'one request for the transcript, the preload');
    const chunk = of((path) => /^\/pkg\/split_session\.[^/]+\.wasm$/.test(path));
    const list = of((path) => path === '/api/sessions').map((e) => e.start);
    assert.deepEqual(chunk.map((e) => e.initiator), ['link'], 'one request for the session chunk, the early preload');
    assert.ok(list.length > 0 && chunk[0].start < Math.min(...list), `the chunk asked at ${chunk[0].start} ms, the list at ${list}`);
    // The lists' chunk (the sidebar's rows, models, agents) waits until the transcript is on screen.
    const lists = of((path) => /^\/pkg\/split_page_lists\.[^/]+\.wasm$/.test(path));
    const rowsAt = await page.evaluate(() => window.__rowsAt);
    assert.equal(lists.length, 1, 'the lists\' chunk asked for once');
    assert.ok(rowsAt !== undefined && lists[0].start >= rowsAt, `the lists' chunk asked at ${lists[0].start} ms, the rows in at ${rowsAt} ms`);

    const opened = await transcriptState(page);
    assert.ok(opened.built < MESSAGES / 2, `${opened.built} of ${MESSAGES} messages built at the end`);
    assert.ok(opened.boxes >= 3, `${opened.boxes} groups stand in as boxes`);
    assert.ok(opened.fromBottom <= 48, `opens at its end (${opened.fromBottom} px from it)`);
    // The boxes are as tall as the groups drawn so far, on average, so the scroll bar says how long the session is.
    const sizes = await page.evaluate(() => {
      const groups = [...document.querySelectorAll('[data-testid="transcript"] .message-group')];
      const unbuilt = (group) => group.classList.contains('message-group--unbuilt');
      return { drawn: groups.filter((g) => !unbuilt(g)).map((g) => g.offsetHeight), boxes: groups.filter(unbuilt).map((g) => g.offsetHeight) };
    });
    const drawnAverage = sizes.drawn.reduce((sum, height) => sum + height, 0) / sizes.drawn.length;
    for (const box of sizes.boxes) {
      assert.ok(Math.abs(box - drawnAverage) <= 0.15 * drawnAverage, `a box is ${box} px, the drawn groups ${sizes.drawn} px`);
    }

    // Step up to the top: a message in view moves by exactly the step, whatever was built above it meanwhile.
    const step = 400;
    let worst = 0;
    let steps = 0;
    for (let state = opened; state.top > 0; state = await transcriptState(page)) {
      const moved = await page.evaluate(async (step) => {
        const scroller = document.querySelector('[data-testid="transcript"]');
        const view = scroller.getBoundingClientRect();
        const seen = [...scroller.querySelectorAll('.message')].find((m) => m.getBoundingClientRect().bottom > view.top);
        if (!seen) return null;
        const before = seen.getBoundingClientRect().top;
        const wanted = Math.min(step, scroller.scrollTop);
        scroller.scrollBy(0, -step);
        await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
        await new Promise((resolve) => setTimeout(resolve, 60));
        return { id: seen.dataset.messageId, error: seen.getBoundingClientRect().top - before - wanted, connected: seen.isConnected };
      }, step);
      assert.ok(moved, `a message is in view at ${state.top} px`);
      if (moved.connected) worst = Math.max(worst, Math.abs(moved.error));
      steps += 1;
      assert.ok(steps < 2000, 'the top is reached');
    }
    assert.ok(worst <= 2, `a message in view moved ${worst} px more than the scroll`);
    await settle(page);
    const top = await transcriptState(page);
    assert.ok(await page.locator('.message').filter({ hasText: 'Question number 0' }).count(), 'the first message is built at the top');
    // Answers far from the end are parsed only when their group is built (`TranscriptRows::render_markdown`).
    const firstAnswer = page.locator('.message[data-role="assistant"]').first();
    assert.ok(await firstAnswer.locator('.markdown table').count(), 'an answer built on the way up is drawn as markdown');
    assert.ok(top.built < MESSAGES / 2, `${top.built} of ${MESSAGES} messages built at the top`);
    check();
  });

  test('a search hit far from the end builds its message and scrolls to it', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1100, height: 800 } });
    const search = page.locator('[data-testid="search"]');
    await search.pressSequentially('zeppelin', { delay: 20 });
    const hit = page.locator('[data-testid="search-hit"]');
    await hit.first().waitFor();
    assert.equal(await hit.count(), 1, 'one message names the zeppelin');
    const [{ messageId }] = await page.evaluate(async () => (await (await fetch('/api/search?q=zeppelin')).json()).hits);
    await hit.click();
    await page.waitForURL(`**/s/${sessionId}`);
    await page.waitForFunction((id) => document.querySelector(`[data-message-id="${id}"]`)?.hasAttribute('data-found'), messageId, {
      timeout: 20_000,
    });
    const inView = await page.evaluate((id) => {
      const transcript = document.querySelector('[data-testid="transcript"]').getBoundingClientRect();
      const box = document.querySelector(`[data-message-id="${id}"]`).getBoundingClientRect();
      return box.top >= transcript.top - 1 && box.top < transcript.bottom;
    }, messageId);
    assert.ok(inView, 'the message is in view');
    assert.ok((await transcriptState(page)).built < MESSAGES / 2, 'the rest stays unbuilt');
    check();
  });
});
