// End-to-end check that the self-contained server binary renders the page on the server and that it hydrates in Chromium.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  getPage,
  launchBrowser,
  openApp,
  openingTagWithClass,
  serverForSuite,
  waitForHydration,
  watchProblems,
} from './support.mjs';

const TEST_IDS = ['sidebar', 'transcript', 'composer'];
// Errors fired by effects that run right after hydration arrive a moment later; give them time to show.
const SETTLE_MS = 500;

describe('chatwire page', () => {
  const suite = serverForSuite();

  test('self-contained binary serves the page and hydrates', { timeout: 240_000 }, async (t) => {
    // Fetched before any browser runs, so what is checked here is the server's own rendering.
    const ssr = await getPage(suite.server.url);
    assert.match(ssr.setCookie ?? '', /HttpOnly/i, 'the printed URL sets an HttpOnly cookie');
    assert.equal(ssr.status, 200, `GET ${suite.server.url} → ${ssr.status}`);
    assert.match(ssr.headers['content-type'] ?? '', /^text\/html\b/i);
    const html = ssr.body.toString('utf8');
    const appTag = openingTagWithClass(html, 'app');
    assert.ok(appTag, 'SSR HTML has no element with class "app"');
    assert.match(appTag, /\sdata-hydrated\s*=\s*["']?false["']?/, `SSR .app tag lacks data-hydrated="false": ${appTag}`);
    for (const id of TEST_IDS) {
      assert.match(html, new RegExp(`data-testid\\s*=\\s*["']?${id}["'\\s>]`), `SSR HTML lacks data-testid="${id}"`);
    }

    const browser = await launchBrowser();
    t.after(() => browser.close());
    const { context } = browser;
    const { problems, check } = watchProblems(context);
    const page = context.pages()[0] ?? (await context.newPage());
    // WASM chunks (`cargo leptos --split`): the markdown parser is fetched when the first message shows, the tool
    // renderers when the first tool row does.
    const pkgRequests = [];
    page.on('request', (req) => {
      const { pathname } = new URL(req.url());
      if (pathname.startsWith('/pkg/')) pkgRequests.push(pathname);
    });
    const fetched = (chunk) => pkgRequests.filter((p) => new RegExp(`^/pkg/${chunk}\\.[^/]+\\.wasm$`).test(p)).length;

    await fs.mkdir(ARTIFACTS_DIR, { recursive: true });
    try {
      await openApp(page, suite.server);
    } catch (err) {
      await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'home-failed.png'), fullPage: true }).catch(() => {});
      err.message += `\nbrowser problems so far:\n${problems.join('\n') || '(none)'}\nserver output:\n${suite.server.output()}`;
      throw err;
    }
    await page.waitForLoadState('load');
    await page.waitForTimeout(SETTLE_MS);

    for (const id of TEST_IDS) {
      assert.ok(await page.locator(`[data-testid="${id}"]`).isVisible(), `[data-testid="${id}"] is not visible`);
    }
    assert.equal(await page.locator('form[data-testid="composer"]').count(), 1, 'composer is not a <form>');
    assert.ok(await page.locator('[data-testid="composer"] textarea').first().isVisible(), 'composer has no visible textarea');

    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'home.png'), fullPage: true });
    assert.ok(pkgRequests.some((p) => /^\/pkg\/chatwire\.[^/]+\.wasm$/.test(p)), `no main wasm: ${pkgRequests}`);
    // Of the chunks, an empty chat fetches only the lists it loads once live (the models, the agents), and what
    // that chunk shares with others (`chunk_<n>`).
    const named = pkgRequests.filter((p) => /^\/pkg\/split_/.test(p)).map((p) => p.split('.')[0]);
    assert.deepEqual(named, ['/pkg/split_page_lists'], 'an empty chat fetched chunks it does not use');

    // The hydrated composer is live: Enter sends, and the message reaches the transcript through the reducer.
    const input = page.locator('[data-testid="composer"] textarea');
    await input.fill('first line');
    await input.press('Shift+Enter');
    await input.pressSequentially('second line');
    const isChatStream = (req) => req.method() === 'POST' && new URL(req.url()).pathname === '/api/chat';
    const streamFinished = page.waitForEvent('requestfinished', { predicate: isChatStream, timeout: 150_000 });
    await input.press('Enter');
    const sent = page.locator('[data-testid="transcript"] .message[data-role="user"]');
    await sent.first().waitFor({ timeout: 10_000 });
    assert.equal(await sent.first().locator('.part--plain').innerText(), 'first line\nsecond line');
    assert.equal(await input.inputValue(), '', 'the composer is cleared after sending');
    assert.match(new URL(page.url()).pathname, /^\/s\/[0-9a-f-]{36}$/, 'the URL names the new session');

    // The bundled demo streams an answer, runs its tools, and stops to ask a question.
    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]');
    await answer.locator('.part--text').first().waitFor({ timeout: 30_000 });
    const question = page.locator('.question');
    await question.waitFor({ timeout: 60_000 });
    await question.getByRole('button', { name: 'Yes, include it' }).click();
    await page.getByText('Run it yourself:').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    // Screen readers hear how the run ended, not every streamed token.
    assert.equal(await page.locator('[data-testid="transcript"]').getAttribute('aria-live'), null, 'the transcript is a live region');
    await page.locator('[data-testid="announcer"]', { hasText: 'The answer is complete.' }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'demo-run.png'), fullPage: true });
    for (const tool of ['Bash', 'Write', 'Edit', 'Read', 'Grep', 'Glob', 'Ls', 'TodoWrite', 'Question']) {
      const row = answer.locator('.tool', { hasText: tool }).first();
      assert.match(await row.getAttribute('class'), /tool--output-available/, `${tool} row did not finish`);
    }

    assert.equal(fetched('split_session'), 1, `the session's chunk (rows, markdown parser) was not fetched once: ${pkgRequests}`);
    assert.equal(fetched('split_tool_renderers'), 1, `the tool renderers were not fetched once: ${pkgRequests}`);

    // The run's stream ends by itself after its last frame; then a reload shows the same session from the log.
    await streamFinished;
    const apiRequests = [];
    page.on('request', (req) => apiRequests.push(`asked ${new URL(req.url()).pathname}`));
    page.on('response', (res) => apiRequests.push(`answered ${new URL(res.url()).pathname}`));
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.getByText('Run it yourself:').waitFor({ timeout: 10_000 });
    // A session's page asks for its transcript with the page (the `Link` header's preload), not once the WASM is
    // here; the chunk that draws it (the rows, the markdown parser) is asked for once the WASM's bytes are in.
    const at = (pattern) => apiRequests.findIndex((p) => pattern.test(p));
    const transcriptAt = at(/^asked \/api\/sessions\/[^/]+$/);
    const mainModuleAt = at(/^answered \/pkg\/chatwire\.[^/]+\.wasm$/);
    assert.ok(at(/^asked \/pkg\/split_session\.[^/]+\.wasm$/) >= 0, `the session's chunk was not requested: ${apiRequests}`);
    assert.ok(transcriptAt >= 0 && mainModuleAt >= 0, `transcript or main module not requested: ${apiRequests}`);
    assert.ok(transcriptAt < mainModuleAt, `the transcript was asked for after the WASM came: ${apiRequests}`);
    assert.equal(apiRequests.filter((p) => /^asked \/api\/sessions\/[^/]+$/.test(p)).length, 1, `${apiRequests}`);
    // The sidebar's rows come with the lists' chunk, which a session's URL fetches after the code that follows it.
    await page.locator('.sidebar__item').first().waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('.sidebar__item').count(), 1, 'the sidebar lists the session');

    check();
  });
});
