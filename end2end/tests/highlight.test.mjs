// End-to-end check of syntax highlighting in Chromium against the release binary: a fenced Rust block in an answer,
// a Read row of a Python file and an Edit row's diff get `hl-*` spans (the diff keeps its added and removed lines),
// markup in the code stays text, and the highlighter comes in the session's WASM chunk (with the rows and the
// markdown parser), which the first page load does not fetch and a page fetches once.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACTS_DIR, firstLoad, launchBrowser, openApp, requestsSeen, sendPrompt, serverForSuite, watchProblems,
} from './support.mjs';

const XSS = '<img src=x onerror="window.__injected = true">';
const BREAKOUT = '</code><script>window.__injected = true</script>';
const PY = ['import os', '', `def greet(name):`, `    # ${XSS}`, `    return "hi ${BREAKOUT}" + name`, ''].join('\n');
const ANSWER = [
  'Here is the code:',
  '',
  '```rust',
  'fn main() {',
  `    let s = "${XSS}";`,
  `    // ${BREAKOUT}`,
  '    println!("{s}");',
  '}',
  '```',
  '',
  'Done.',
].join('\n');

const SCRIPT = {
  chunkChars: 12,
  delayMs: 10,
  turns: [
    { text: 'Hello, there is no code in this answer.' },
    {
      text: ANSWER,
      toolCalls: [
        { name: 'write', arguments: { path: 'app.py', content: PY } },
        { name: 'read', arguments: { path: 'app.py' } },
        { name: 'edit', arguments: { path: 'app.py', oldText: 'import os\n', newText: `import sys\nvalue = 42  # ${XSS}\n` } },
      ],
    },
    { text: 'All done.' },
  ],
};

const SESSION_CHUNK = /^\/pkg\/split_session\.[^/]+\.wasm$/;

describe('syntax highlighting', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('code blocks, file rows and diffs are highlighted from the session\'s chunk', { timeout: 180_000 }, async (t) => {
    const browser = await launchBrowser({ viewport: { width: 1100, height: 900 } });
    t.after(() => browser.close());
    const { context } = browser;
    const { check } = watchProblems(context);
    const page = context.pages()[0] ?? (await context.newPage());
    const pkgRequests = [];
    page.on('request', (req) => {
      const { pathname } = new URL(req.url());
      if (pathname.startsWith('/pkg/')) pkgRequests.push(pathname);
    });
    const sessionChunkFetches = () => pkgRequests.filter((p) => SESSION_CHUNK.test(p)).length;
    await fs.mkdir(ARTIFACTS_DIR, { recursive: true });
    const firstLoadOver = firstLoad(page);
    await openApp(page, suite.server);
    await firstLoadOver();
    assert.equal(sessionChunkFetches(), 0, `the first page load fetched the session's chunk: ${pkgRequests}`);

    const parser = page.waitForResponse((response) => SESSION_CHUNK.test(new URL(response.url()).pathname));
    await sendPrompt(page, 'Say hello');
    await (await parser).finished();
    const answers = page.locator('.message[data-role="assistant"]');
    // Drawn by the parser (a paragraph, not the stand-in's plain text) to its end.
    await answers.first().locator('.markdown__block p:not(.markdown__unparsed)', { hasText: 'no code in this answer' }).waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 30_000 });
    await requestsSeen(page);
    assert.equal(sessionChunkFetches(), 1, `the session's chunk was fetched more than once: ${pkgRequests}`);

    await sendPrompt(page, 'Show me code');
    const answer = answers.nth(1);
    const code = answer.locator('.code code.language-rust');
    await code.locator('.hl-keyword', { hasText: 'fn' }).first().waitFor({ timeout: 30_000 });
    // Lines are highlighted as each is complete, so the later ones may come a frame after the first: wait for them.
    await code.locator('.hl-string').first().waitFor({ timeout: 30_000 });
    await code.locator('.hl-comment').first().waitFor({ timeout: 30_000 });
    // The paragraph after the fence: the block is complete (it may still be streaming when its comment is drawn).
    await answer.locator('.markdown__block p', { hasText: /^Done\.$/ }).waitFor({ timeout: 30_000 });
    assert.equal(
      await code.textContent(),
      ['fn main() {', `    let s = "${XSS}";`, `    // ${BREAKOUT}`, '    println!("{s}");', '}', ''].join('\n'),
      'the code reads as it was written',
    );

    const read = answer.locator('.tool[data-tool="Read"]');
    await read.locator('.tool-lines__text .hl-keyword', { hasText: 'def' }).waitFor({ timeout: 60_000 });
    assert.equal(await read.locator('.tool-lines__text').nth(3).textContent(), `    # ${XSS}`);
    // The row's lines may still be arriving after its first one is drawn: wait for the comment's, do not count now.
    await read.locator('.tool-lines__text .hl-comment').first().waitFor({ timeout: 30_000 });

    const edit = answer.locator('.tool[data-tool="Edit"]');
    const added = edit.locator('.diff-line--added');
    await added.first().waitFor({ timeout: 60_000 });
    await added.locator('.hl-number', { hasText: '42' }).waitFor({ timeout: 30_000 });
    assert.ok((await edit.locator('.diff-line--removed').count()) > 0, 'the removed line keeps its class');
    await edit.locator('.diff-line--context .hl-keyword').first().waitFor({ timeout: 30_000 }); // context lines too
    assert.equal(await added.locator('.diff-line__text').nth(1).textContent(), `value = 42  # ${XSS}`);

    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'highlight.png'), fullPage: true });
    const transcript = page.locator('[data-testid="transcript"]');
    assert.equal(await transcript.locator('img').count(), 0, 'no image came from the code');
    assert.equal(await transcript.locator('script').count(), 0, 'no script came from the code');
    assert.equal(await page.evaluate(() => window.__injected), undefined, 'nothing ran');
    assert.equal(sessionChunkFetches(), 1, `the session's chunk was fetched more than once: ${pkgRequests}`);
    check();
  });
});
