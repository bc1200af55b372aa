// End-to-end check of the WASM chunks (`cargo leptos --split`) when they cannot be fetched at first: without the tool
// renderers' chunk a tool row shows as its name and status, the run goes on, and once a retry gets the chunk
// through, the same row is drawn in full with everything that streamed meanwhile. The composer's suggestions are a
// chunk the first load does not fetch: the message box asks for it, and typing goes on while it cannot come. So is
// the search's hit list: the search field asks for it when it gets the focus. What shows a session (its loading,
// sending, the decoder and the reducer, the message rows, the markdown parser, the highlighter) is one chunk: a
// message sent while it cannot come waits, the problem line says why, and it goes out, unchanged, once a retry gets
// the chunk, and is drawn with its answer.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { firstLoad, launchBrowser, openApp, sendPrompt, serverForSuite, watchProblems } from './support.mjs';

const SCRIPT = {
  chunkChars: 20,
  delayMs: 5,
  turns: [
    { text: 'Some **bold** words before a tool.', toolCalls: [{ name: 'bash', arguments: { command: 'echo chunked' } }] },
    { text: 'All `done`.' },
  ],
};

const TOOL_RENDERERS = /\/pkg\/split_tool_renderers\.[^/]+\.wasm$/;
const SUGGESTIONS = /\/pkg\/split_composer_suggestions\.[^/]+\.wasm$/;
const SEARCH_HITS = /\/pkg\/split_search_hits\.[^/]+\.wasm$/;
// The code that follows a session, its rows, the markdown parser and the highlighter.
const SESSION = /\/pkg\/split_session\.[^/]+\.wasm$/;

// wasm-split's loader starts the fetch before it waits for the chunks it shares code with, so a refused fetch can
// surface as an unhandled rejection before the loader handles it. (The loader is in the page's own script: its
// `loader` function is the frame that names it.)
const loaderRejection = (p) => /^page error: TypeError: Failed to fetch\n\s+at \S+\n\s+at loader \(/.test(p);

describe('WASM chunks', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('tool rows wait for the renderers\' chunk that failed to load and are drawn when a retry gets it', { timeout: 120_000 }, async (t) => {
    // The service worker would fetch the chunks itself, out of `page.route`'s reach.
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    // The failed fetches are this test's doing: they are checked below instead.
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    const refused = new Set();
    await page.route(TOOL_RENDERERS, (route) => {
      if (!offline) return route.continue();
      refused.add(new URL(route.request().url()).pathname.split('.')[0]);
      return route.abort();
    });
    await openApp(page, suite.server);
    await sendPrompt(page, 'Run a tool');

    const answer = page.locator('.message[data-role="assistant"]').first();
    // The text is drawn as markdown meanwhile: the parser comes with the rows, in the session's chunk.
    await answer.locator('code', { hasText: 'done' }).waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    assert.deepEqual([...refused], ['/pkg/split_tool_renderers']);
    assert.equal(await answer.locator('strong', { hasText: 'bold' }).count(), 1);
    const pending = answer.locator('.tool-pending');
    assert.equal(await pending.locator('.tool__name').textContent(), 'Bash');
    assert.equal(await pending.getAttribute('data-status'), 'done', 'the waiting row follows its call');
    assert.equal(await answer.locator('.tool').count(), 0);

    offline = false;
    const bash = answer.locator('.tool[data-tool="Bash"]');
    await bash.waitFor({ timeout: 20_000 });
    assert.equal(await bash.getAttribute('data-status'), 'done');
    assert.match(await bash.textContent(), /chunked/);
    await answer.locator('strong', { hasText: 'bold' }).waitFor({ timeout: 20_000 });
    assert.equal(await answer.locator('code', { hasText: 'done' }).count(), 1);
    assert.equal(await answer.locator('.markdown__unparsed, .tool-pending').count(), 0);

    assert.ok(problems.some((p) => /the tool renderers did not load/.test(p)), problems.join('\n'));
    const unexpected = problems.filter(
      (p) => !(p.startsWith('console error:') || loaderRejection(p)) || /panicked|unreachable/i.test(p),
    );
    assert.deepEqual(unexpected, [], 'only the failed fetches were reported');
  });

  test('the suggestions chunk waits for the message box; typing goes on while it cannot be fetched', { timeout: 60_000 }, async (t) => {
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    let asked = 0;
    await page.route(SUGGESTIONS, (route) => {
      asked += 1;
      return offline ? route.abort() : route.continue();
    });
    const firstLoadOver = firstLoad(page);
    await openApp(page, suite.server);
    // Everything the first load fetches has been asked for once it is over; the chunk must not be among it.
    await firstLoadOver();
    assert.equal(asked, 0, 'the first load does not fetch the suggestions');

    const box = page.locator('[data-testid="composer"] textarea');
    const requested = page.waitForRequest(SUGGESTIONS, { timeout: 10_000 });
    await box.click();
    await page.keyboard.type('@');
    await requested;
    await page.keyboard.type('src');
    assert.equal(await box.inputValue(), '@src', 'no key is lost while the chunk is missing');

    // A `/` while the chunk is still missing: nothing listed yet; once a retry gets it through, the list opens.
    await box.fill('');
    await page.keyboard.type('/he');
    assert.equal(await box.inputValue(), '/he');
    const list = page.getByTestId('composer-suggestions');
    assert.equal(await list.isHidden(), true);
    offline = false;
    await list.locator('[role="option"]', { hasText: '/help' }).waitFor({ timeout: 20_000 });
    assert.equal(await box.getAttribute('aria-expanded'), 'true');
    assert.equal(await box.inputValue(), '/he');

    assert.ok(problems.some((p) => /the composer's suggestions did not load/.test(p)), problems.join('\n'));
    const unexpected = problems.filter(
      (p) => !(p.startsWith('console error:') || loaderRejection(p)) || /panicked|unreachable/i.test(p),
    );
    assert.deepEqual(unexpected, [], 'only the failed fetches were reported');
  });

  test('the search hit list waits for the search field\'s focus, and says it is loading until a retry gets it', { timeout: 60_000 }, async (t) => {
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    let asked = 0;
    await page.route(SEARCH_HITS, (route) => {
      asked += 1;
      return offline ? route.abort() : route.continue();
    });
    const firstLoadOver = firstLoad(page);
    await openApp(page, suite.server);
    await firstLoadOver();
    assert.equal(asked, 0, 'the first load does not fetch the hit list');

    const field = page.getByTestId('search');
    const requested = page.waitForRequest(SEARCH_HITS, { timeout: 10_000 });
    await field.focus();
    await requested;
    await field.pressSequentially('nothingmatchesthis', { delay: 10 });
    assert.equal(await field.inputValue(), 'nothingmatchesthis', 'no key is lost while the chunk is missing');
    const hits = page.getByTestId('search-hits');
    await hits.and(page.locator('[aria-busy="true"]')).waitFor({ timeout: 10_000 });
    offline = false;
    await hits.locator('.search__none', { hasText: 'No matches.' }).waitFor({ timeout: 20_000 });
    assert.equal(await hits.getAttribute('aria-busy'), null);

    assert.ok(problems.some((p) => /the search's hit list did not load/.test(p)), problems.join('\n'));
    const unexpected = problems.filter(
      (p) => !(p.startsWith('console error:') || loaderRejection(p)) || /panicked|unreachable/i.test(p),
    );
    assert.deepEqual(unexpected, [], 'only the failed fetches were reported');
  });

  test('a send waits for the session\'s chunk, says why, and goes out and is drawn when a retry gets it', { timeout: 120_000 }, async (t) => {
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    let refused = 0;
    await page.route(SESSION, (route) => {
      if (!offline) return route.continue();
      refused += 1;
      return route.abort();
    });
    const sends = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/chat') sends.push(request);
    });
    await openApp(page, suite.server);
    await sendPrompt(page, 'Sent while the code was away');

    await page.locator('.chat__problem', { hasText: 'Part of the page could not be loaded' }).waitFor({ timeout: 20_000 });
    assert.ok(refused >= 1, 'the chunk was asked for');
    assert.equal(sends.length, 0, 'nothing is sent without the code that reads the answer');

    offline = false;
    // The retry comes by itself (2 s after the failure, then later): the message goes out as it was typed.
    await page.locator('.message[data-role="user"]', { hasText: 'Sent while the code was away' }).waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="announcer"]', { hasText: 'The answer is complete.' }).waitFor({ timeout: 30_000 });
    assert.equal(sends.length, 1, 'sent once');
    // The rows and the parser came in the same chunk: the answer is drawn as markdown, with its tool row.
    const answer = page.locator('.message[data-role="assistant"]');
    await answer.locator('code', { hasText: 'done' }).first().waitFor({ timeout: 30_000 });
    await answer.locator('.tool[data-tool="Bash"]').first().waitFor({ timeout: 20_000 });
    assert.equal(await page.locator('.empty-state').count(), 0, 'a session is not shown as an empty chat');
    assert.equal(await page.locator('.chat__problem').count(), 0, 'the problem line is cleared once the chunk came');

    assert.ok(problems.some((p) => /the code that follows a session did not load/.test(p)), problems.join('\n'));
    const unexpected = problems.filter(
      (p) => !(p.startsWith('console error:') || loaderRejection(p)) || /panicked|unreachable/i.test(p),
    );
    assert.deepEqual(unexpected, [], 'only the failed fetches were reported');
  });
});
