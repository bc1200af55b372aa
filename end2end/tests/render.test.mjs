// End-to-end check of how the transcript draws an answer: GFM markdown, escaping, keyed rows that survive later
// frames, folding thinking, error rows, and scrolling that follows only while at the bottom (phone-sized viewport).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACTS_DIR, launchBrowser, openApp, serverForSuite, watchProblems } from './support.mjs';

const ANSWER = [
  '## Result',
  '',
  'The table:',
  '',
  '| File | Lines |',
  '|:-----|------:|',
  '| main.rs | 42 |',
  '| lib.rs | 7 |',
  '',
  '```rust',
  'fn main() {',
  '    println!("hi < there");',
  '}',
  '```',
  '',
  'See [the docs](https://example.com/docs) and [this](javascript:alert(1)).',
  '',
  'Raw HTML stays text: <script>window.__injected = true</script> <img src=x onerror="window.__injected = true">',
  '',
  '- [x] done',
  '- [ ] ~~not~~ yet',
  '',
  ...Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1} of filler so that the answer is taller than a phone screen.\n`),
  'The end.',
].join('\n');

const SCRIPT = {
  chunkChars: 10,
  delayMs: 15,
  turns: [
    // Long enough (about 1.4 s of frames) that the open block is seen while it streams on a busy machine.
    { thinking: 'Let me think about the layout of this answer for a little while, carefully. '.repeat(12), text: ANSWER },
    { fail: { status: 400, message: 'Bad request (injected by the render test)', times: 5 }, text: 'never shown' },
  ],
};

describe('transcript rendering', () => {
  const suite = serverForSuite({ script: SCRIPT });

  test('markdown, keyed rows, thinking, errors and scrolling', { timeout: 180_000 }, async (t) => {
    const browser = await launchBrowser({ viewport: { width: 375, height: 700 } });
    t.after(() => browser.close());
    const { context } = browser;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: suite.server.origin });

    const { check } = watchProblems(context);
    const page = context.pages()[0] ?? (await context.newPage());
    await fs.mkdir(ARTIFACTS_DIR, { recursive: true });

    await openApp(page, suite.server);

    const isChatStream = (req) => req.method() === 'POST' && new URL(req.url()).pathname === '/api/chat';
    const firstRunEnded = page.waitForEvent('requestfinished', { predicate: isChatStream, timeout: 60_000 });
    // The rows and the code that follows a run are the session's chunk, which the message box's focus fetches. Sent
    // before it is here, the answer would be drawn only once it came, its thinking maybe finished and folded already.
    const chunkLoaded = (name) =>
      page
        .waitForResponse((r) => new RegExp(`/pkg/split_${name}\\.[^/]+\\.wasm$`).test(r.url()), { timeout: 30_000 })
        .then((response) => response.finished());
    const chunks = chunkLoaded('session');
    const input = page.locator('[data-testid="composer"] textarea');
    await input.focus();
    await chunks;
    await input.fill('Show me some markdown');
    await input.press('Enter');

    const answer = page.locator('.message[data-role="assistant"]').first();
    // Thinking is open while it streams…
    await answer.locator('details.part--thinking[open]').waitFor({ timeout: 20_000 });

    // …and a finished block is built once: the table's node is the same object after many more frames.
    const table = answer.locator('.markdown__block:not(.markdown__block--open) table');
    await table.waitFor({ timeout: 20_000 });
    await table.evaluate((node) => {
      node.dataset.seen = 'yes';
      window.__answerArticle = node.closest('.message');
      window.__answerArticle.dataset.seen = 'yes';
    });
    await answer.getByText('Paragraph 20 of filler').waitFor({ timeout: 30_000 });
    assert.equal(await table.getAttribute('data-seen'), 'yes', 'the finished table was rebuilt by later frames');

    // While at the bottom, the view follows the stream.
    const transcript = page.locator('[data-testid="transcript"]');
    const gapToBottom = () => transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
    assert.ok((await gapToBottom()) < 60, `the view did not follow new output (gap ${await gapToBottom()} px)`);

    await firstRunEnded;
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    await page.waitForTimeout(300);
    // The `done` frame replaced the streamed message without rebuilding its row.
    assert.equal(
      await page.evaluate(() => window.__answerArticle.isConnected && window.__answerArticle.dataset.seen),
      'yes',
      'the answer row was rebuilt when the run settled',
    );
    assert.equal(await answer.locator('details.part--thinking').evaluate((d) => d.open), false, 'thinking did not fold');

    // GFM: a table, a labelled code block with a copy button, task lists, strikethrough. (`textContent`, not
    // `innerText`: blocks scrolled out of view are not rendered, by `content-visibility`, and have no inner text.)
    assert.equal(await answer.locator('table th').first().textContent(), 'File');
    assert.equal(await answer.locator('table td.align-right').first().textContent(), '42');
    const code = answer.locator('.code').first();
    assert.equal(await code.locator('.code__lang').textContent(), 'rust');
    assert.match(await code.locator('code').textContent(), /println!\("hi < there"\);/);
    assert.equal(await answer.locator('input[type="checkbox"][disabled]').count(), 2);
    assert.equal(await answer.locator('del').textContent(), 'not');

    // Links open in a new tab without an opener; an unsafe scheme is not linked.
    const link = answer.getByRole('link', { name: 'the docs' });
    assert.equal(await link.getAttribute('href'), 'https://example.com/docs');
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.match(await link.getAttribute('rel'), /\bnoopener\b/);
    assert.equal(await answer.getByRole('link', { name: 'this' }).count(), 0, 'a javascript: link was made');
    assert.equal(await answer.locator('a[href^="javascript"]').count(), 0);

    // The model's raw HTML is text, not markup.
    assert.equal(await page.locator('[data-testid="transcript"] script, [data-testid="transcript"] img').count(), 0);
    assert.match(await answer.textContent(), /<script>window\.__injected = true<\/script>/);
    assert.equal(await page.evaluate(() => window.__injected ?? false), false, 'the model ran script in the page');

    // Copy puts the code on the clipboard.
    await code.locator('.code__copy').click();
    await code.getByRole('button', { name: 'Copy code' }).filter({ hasText: 'Copied' }).waitFor({ timeout: 5_000 });
    assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^fn main\(\) \{\n/);

    // Scrolled up, the view stays put and offers a way back; the button is reachable by keyboard.
    await transcript.evaluate((el) => el.scrollTo(0, 0));
    const jump = page.getByTestId('jump-latest');
    await jump.waitFor({ timeout: 5_000 });
    await jump.focus();
    await page.keyboard.press('Enter');
    await jump.waitFor({ state: 'detached', timeout: 5_000 });
    await page.waitForFunction(
      () => {
        const el = document.querySelector('[data-testid="transcript"]');
        return el.scrollHeight - el.scrollTop - el.clientHeight < 60;
      },
      null,
      { timeout: 5_000 },
    );
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'render-phone.png') });

    // A failing model call ends the run with an error row carrying the message.
    await input.fill('Now fail');
    await input.press('Enter');
    const error = page.locator('.message[data-role="assistant"] .part--error, .transcript__error').first();
    await error.waitFor({ timeout: 30_000 });
    assert.match(await error.innerText(), /Bad request \(injected by the render test\)/);
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });

    // Nothing is wider than a phone screen.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px at 375 px`);

    check();
  });
});
