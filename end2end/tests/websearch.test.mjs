// The `web_search` tool end to end: a tiny local search backend in the SearXNG JSON shape (a test double of the
// external service; the tests cannot reach the internet) is given to the server with --search-url, a script makes
// the agent search, and the WebSearch row must show the query and the results as links (title, address, snippet),
// with markup in a result staying text and a non-web address not becoming a link. A search the backend fails
// (HTTP 500) ends its row as an error. Runs under --approve writes: a search changes nothing, so it never waits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS_DIR, openChat, sendPrompt, startSearchBackend, startServer } from './support.mjs';

const XSS = '<img src=x onerror=alert(1)>';
const QUERY = 'leptos streaming ssr';
const FAILING_QUERY = 'make the backend fail';

const RESULTS = [
  {
    title: 'Leptos: streaming SSR',
    url: 'https://book.leptos.dev/ssr/23_ssr_modes.html',
    content: 'Out-of-order streaming sends the page shell first, then each resource as it resolves.',
    engine: 'test',
  },
  { title: `Markup ${XSS} in a title`, url: 'https://example.org/markup', content: `and in a snippet ${XSS}` },
  { title: 'Not a web address', url: 'javascript:alert(1)', content: 'must not become a link' },
];

const SCRIPT = {
  delayMs: 5,
  turns: [
    {
      text: 'Searching the web.',
      toolCalls: [
        { name: 'web_search', arguments: { query: QUERY } },
        { name: 'web_search', arguments: { query: FAILING_QUERY } },
      ],
    },
    { text: 'Search done.' },
  ],
};

describe('web search', () => {
  let backend;
  let server;

  before(async () => {
    backend = await startSearchBackend(RESULTS, { failingQuery: FAILING_QUERY });
    server = await startServer({ script: SCRIPT, args: ['--search-url', backend.url, '--approve', 'writes'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await backend?.close();
  }, { timeout: 30_000 });

  test('the row shows the query and the results as links', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 900 } });
    await sendPrompt(page, 'Search the web for me');
    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();
    await answer.getByText('Search done.').waitFor({ timeout: 60_000 });

    assert.deepEqual(
      backend.queries,
      [
        { path: '/search', q: QUERY, format: 'json' },
        { path: '/search', q: FAILING_QUERY, format: 'json' },
      ],
      'one GET per search, in the SearXNG JSON form',
    );
    const rows = answer.locator(':scope > .tool[data-tool="WebSearch"]');
    // The rows are drawn by the tool renderers' chunk, which may still be on its way when the text is in.
    await rows.nth(1).waitFor({ timeout: 20_000 });
    assert.equal(await rows.count(), 2);
    assert.equal(await answer.locator('.approval').count(), 0, 'a search never waits for approval');

    const row = rows.nth(0);
    assert.equal(await row.getAttribute('data-status'), 'done');
    assert.equal(await row.locator('.tool-search__query').innerText(), QUERY);
    const items = row.locator('.tool-websearch__result');
    assert.equal(await items.count(), 3);
    const links = row.locator('a.tool-websearch__title');
    assert.deepEqual(await links.allInnerTexts(), ['Leptos: streaming SSR', `Markup ${XSS} in a title`]);
    assert.deepEqual(
      await links.evaluateAll((as) => as.map((a) => [a.getAttribute('href'), a.target, a.rel])),
      [
        ['https://book.leptos.dev/ssr/23_ssr_modes.html', '_blank', 'noopener noreferrer'],
        ['https://example.org/markup', '_blank', 'noopener noreferrer'],
      ],
    );
    assert.deepEqual(await row.locator('.tool-websearch__url').allInnerTexts(), RESULTS.map((r) => r.url));
    assert.equal(
      await items.nth(0).locator('.tool-websearch__snippet').innerText(),
      'Out-of-order streaming sends the page shell first, then each resource as it resolves.',
    );
    assert.equal(await items.nth(1).locator('.tool-websearch__snippet').innerText(), `and in a snippet ${XSS}`);
    const notALink = items.nth(2);
    assert.equal(await notALink.locator('a').count(), 0, 'a javascript: address is not a link');
    assert.equal(await notALink.locator('.tool-websearch__title').innerText(), 'Not a web address');
    assert.equal(await answer.locator('img, script, iframe').count(), 0, 'markup in results stays text');
    await row.screenshot({ path: path.join(ARTIFACTS_DIR, 'websearch-row.png') });

    const failed = rows.nth(1);
    assert.equal(await failed.getAttribute('data-status'), 'error');
    assert.equal(await failed.locator('.tool-search__query').innerText(), FAILING_QUERY);
    assert.equal(
      await failed.locator('.tool__error').innerText(),
      'the search backend answered HTTP 500 Internal Server Error: search engine unavailable',
    );
    await failed.screenshot({ path: path.join(ARTIFACTS_DIR, 'websearch-error.png') });

    check();
  });
});
