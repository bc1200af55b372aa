// End-to-end check of the WASM chunks (`cargo leptos --split`) when they cannot be fetched at first: the answer's
// text shows unformatted and the tool row as its name and status, the run goes on, and once a retry gets the chunks
// through, the same rows are drawn in full with everything that streamed meanwhile.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, openApp, sendPrompt, serverForSuite, watchProblems } from './support.mjs';

const SCRIPT = {
  chunkChars: 20,
  delayMs: 5,
  turns: [
    { text: 'Some **bold** words before a tool.', toolCalls: [{ name: 'bash', arguments: { command: 'echo chunked' } }] },
    { text: 'All `done`.' },
  ],
};

const CHUNK = /\/pkg\/split_(markdown|tool_renderers)\.[^/]+\.wasm$/;

describe('WASM chunks', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('rows wait for a chunk that failed to load and are drawn when a retry gets it', { timeout: 120_000 }, async (t) => {
    // The service worker would fetch the chunks itself, out of `page.route`'s reach.
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    // The failed fetches are this test's doing: they are checked below instead.
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    const refused = new Set();
    await page.route(CHUNK, (route) => {
      if (!offline) return route.continue();
      refused.add(new URL(route.request().url()).pathname.split('.')[0]);
      return route.abort();
    });
    await openApp(page, suite.server);
    await sendPrompt(page, 'Run a tool');

    const answer = page.locator('.message[data-role="assistant"]').first();
    await answer.getByText('All `done`.').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    assert.deepEqual([...refused].sort(), ['/pkg/split_markdown', '/pkg/split_tool_renderers']);
    assert.match(await answer.locator('.markdown__unparsed').first().textContent(), /^Some \*\*bold\*\* words/);
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

    assert.ok(problems.some((p) => /the markdown parser did not load/.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /the tool renderers did not load/.test(p)), problems.join('\n'));
    // wasm-split's loader starts the fetch before it waits for the chunks it shares code with, so a refused fetch
    // can surface as an unhandled rejection before the loader handles it.
    const loaderRejection = (p) => /^page error: TypeError: Failed to fetch\n\s+at \S+\/pkg\/__wasm_split\./.test(p);
    const unexpected = problems.filter(
      (p) => !(p.startsWith('console error:') || loaderRejection(p)) || /panicked|unreachable/i.test(p),
    );
    assert.deepEqual(unexpected, [], 'only the failed fetches were reported');
  });
});
