// End-to-end check of the second language in Chromium against the release binary. A browser that asks for
// Simplified Chinese gets the page in it from the server's first paint (hydrated without a mismatch), and a run's
// words come in it too: reading every text node and every aria-label, placeholder, title and alt of the page finds
// no English word but the user's and the agent's content, code, names and a short list of terms. An English browser
// gets English, and the settings' switch turns the page to Chinese and back without a reload (the same document,
// the typed draft and the open session kept), fetching the Chinese texts once; the choice survives a reload. What
// was drawn before the switch follows it too: a notice (a fork's summary), the composer's note (a refused file) and
// a code block's bar (its Copy button, "text" for a block without a language).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { ARTIFACTS_DIR, launchBrowser, openApp, sendPrompt, serverForSuite, watchProblems } from './support.mjs';

const ANSWER = 'All done here.';
// A run that draws the common rows: a written file, a command with its exit code, a read, a search, a file list,
// a checklist, and a usage line under the answer, which ends with a code block without a language.
const SCRIPT = {
  // Slow enough that the page sees the run going before it ends: the end is announced only for a run it saw.
  delayMs: 40,
  turns: [
    {
      text: 'Working on it.',
      toolCalls: [
        { name: 'write', arguments: { path: 'notes.txt', content: 'alpha\nbeta\ngamma\n' } },
        { name: 'bash', arguments: { command: 'echo hello; exit 3' } },
        { name: 'read', arguments: { path: 'notes.txt', offset: 2, limit: 1 } },
        { name: 'grep', arguments: { pattern: 'beta', path: '.' } },
        { name: 'glob', arguments: { pattern: '*.txt' } },
        {
          name: 'todo_write',
          arguments: { todos: [{ text: 'Write notes', status: 'completed' }, { text: 'Check', status: 'pending' }] },
        },
      ],
    },
    { text: `${ANSWER}\n\n\`\`\`\nalpha beta\n\`\`\`\n` },
  ],
};

// What is not the page's own words: what the user and the agent wrote, code and paths, names of tools, models,
// agents and sessions, and the switch's own names of the languages (marked with their `lang`).
const CONTENT = [
  '[lang]:not(html):not([lang^="zh"])',
  '.message .part--text',
  '.message .part--plain',
  '.thinking__text',
  'pre',
  // The commands' names are what one types ("/new"): code.
  '.composer__suggestion-name',
  'code',
  '.tool__name',
  // A tool's own error ("Command exited with code 3") is the tool's words, as the server's errors stay English.
  '.tool__error',
  '.tool__server',
  '.tool-file__name',
  '.tool-file__notice',
  '.tool-lines',
  '.tool-search__list',
  '.tool-search__path',
  '.tool-search__text',
  '.tool-search__query',
  '.tool-search__notice',
  '.tool-todo__text',
  '.sidebar__title',
  '.chat-bar__title',
  '.empty-state__title',
  '.search__hits',
  '.sidebar__agent',
  '[data-testid="session-agent"]',
  '[data-testid="model-picker"]',
  '[data-testid="agent-picker"]',
  'script',
  'style',
].join(', ');

// Words that are the same in a Chinese UI: the product, formats, keys, units and the word "token", which Chinese
// developer tools keep.
const ALLOWED = new Set(
  ['chatwire', 'markdown', 'md', 'json', 'readme', 'python', 'png', 'jpeg', 'gif', 'webp', 'enter', 'shift', 'esc',
    'ctrl', 'alt', 'k', 'token', 'b', 'kib', 'mib'],
);

/** Every English word of the page's own texts, with where it is, for the failure message. */
const englishLeft = (page, content, allowed) =>
  page.evaluate(
    ({ content, allowed }) => {
      const found = [];
      // Names the page's own texts quote ("重命名 Hello", "打开 agent 的会话"): the sessions' titles and the agents'.
      const names = [...document.querySelectorAll('.sidebar__title, [data-testid="session-agent"]')]
        .map((element) => element.textContent.trim())
        .filter((name) => name !== '');
      const where = (element) =>
        `${element.tagName.toLowerCase()}${element.className && typeof element.className === 'string' ? `.${element.className.trim().split(/\s+/).join('.')}` : ''}`;
      const check = (text, element, what) => {
        const own = names.reduce((rest, name) => rest.replaceAll(name, ' '), text);
        for (const word of own.match(/[A-Za-z]+/g) ?? []) {
          if (!allowed.includes(word.toLowerCase())) found.push(`${JSON.stringify(word)} in ${what} of ${where(element)}: ${JSON.stringify(text.trim().slice(0, 80))}`);
        }
      };
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
      for (let node = walker.currentNode; node; node = walker.nextNode()) {
        const element = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
        if (!element || element.closest(content)) continue;
        if (node.nodeType === Node.TEXT_NODE) {
          check(node.textContent, element, 'text');
        } else {
          for (const name of ['aria-label', 'placeholder', 'title', 'alt']) {
            const value = element.getAttribute(name);
            if (value) check(value, element, name);
          }
        }
      }
      check(document.title, document.documentElement, 'the tab title');
      return found;
    },
    { content, allowed: [...allowed] },
  );

/** The texts a reader sees first: the page's language, the sidebar, the search box, the message box, the switch. */
const firstTexts = (page) =>
  page.evaluate(() => ({
    lang: document.documentElement.lang,
    newChat: document.querySelector('[data-testid="new-chat"]').textContent,
    search: document.querySelector('[data-testid="search"]').placeholder,
    message: document.querySelector('[data-testid="composer"] textarea').getAttribute('aria-label'),
    picked: document.querySelector('[data-testid="language-setting"]').value,
  }));

const ENGLISH = { lang: 'en', newChat: 'New chat', search: 'Search messages', message: 'Message', picked: 'en' };
const CHINESE = { lang: 'zh-CN', newChat: '新对话', search: '搜索消息', message: '消息', picked: 'zh-CN' };

/** Opens Chromium in `locale` (its Accept-Language), watched for problems; resolves to { context, page, check }. */
async function browserIn(t, locale) {
  const browser = await launchBrowser({ locale, viewport: { width: 1100, height: 900 } });
  t.after(() => browser.close());
  const { context } = browser;
  const { check } = watchProblems(context);
  const page = context.pages()[0] ?? (await context.newPage());
  await fs.mkdir(ARTIFACTS_DIR, { recursive: true });
  return { context, page, check };
}

/** Sends a prompt and waits until the run has ended and its answer is drawn. */
async function runOnce(page, prompt, ended) {
  await sendPrompt(page, prompt);
  await page.locator('[data-testid="transcript"] .message[data-role="assistant"]', { hasText: ANSWER }).waitFor();
  await page.locator('[data-testid="announcer"]', { hasText: ended }).waitFor({ timeout: 20_000 });
  await page.locator('[data-testid="usage"]').first().waitFor();
}

describe('language', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('a Chinese browser gets the page and a run in Chinese, with no English left', { timeout: 120_000 }, async (t) => {
    const { page, check } = await browserIn(t, 'zh-CN');
    const html = [];
    page.on('response', async (response) => {
      if (response.request().resourceType() === 'document' && response.status() === 200) html.push(await response.text());
    });
    await openApp(page, suite.server);
    assert.match(html.at(-1), /<html lang="zh-CN"/, 'the server paints Chinese first: no flash of English');
    assert.match(html.at(-1), />新对话</);
    assert.deepEqual(await firstTexts(page), CHINESE);
    assert.equal(await page.locator('.empty-state h2').textContent(), '要让智能体做什么？');
    assert.deepEqual(await englishLeft(page, CONTENT, ALLOWED), [], 'the empty page');

    await runOnce(page, '你好', '回答已完成。');
    assert.match(await page.locator('.tool-bash__exit').first().textContent(), /^退出码 3$/);
    await page.screenshot({ path: `${ARTIFACTS_DIR}/language-zh-1100.png` });
    assert.deepEqual(await englishLeft(page, CONTENT, ALLOWED), [], 'the page after a run with tools');

    // The command list and the quick switcher are drawn by chunks, in the page's language too.
    await page.locator('[data-testid="composer"] textarea').fill('/');
    await page.locator('#composer-suggestions [role="option"]').first().waitFor();
    assert.deepEqual(await englishLeft(page, CONTENT, ALLOWED), [], 'the command list');
    await page.locator('[data-testid="composer"] textarea').fill('');
    await page.keyboard.press('Control+k');
    await page.locator('[data-testid="palette"] [role="option"]').first().waitFor();
    assert.deepEqual(await englishLeft(page, CONTENT, ALLOWED), [], 'the quick switcher');
    await page.keyboard.press('Escape');
    check();
  });

  test('an English browser gets English; the switch changes the language in place and for good', { timeout: 120_000 }, async (t) => {
    const { context, page, check } = await browserIn(t, 'en-US');
    await openApp(page, suite.server);
    assert.deepEqual(await firstTexts(page), ENGLISH);
    await runOnce(page, 'Hello', 'The answer is complete.');
    // Drawn in English before the switch: a fork's notice, the fork's code block, a refused file's note.
    const forkedFrom = page.url();
    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]', { hasText: ANSWER }).last();
    await answer.hover();
    await answer.getByRole('button', { name: 'Fork to new session' }).click();
    await page.waitForURL((url) => url.href !== forkedFrom && url.pathname.startsWith('/s/'));
    const notice = page.getByTestId('notice');
    await notice.getByText(/^Forked into a new session\. It has its own copy/).waitFor();
    const copyButton = page.locator('[data-testid="transcript"] .code__copy');
    await copyButton.filter({ hasText: 'Copy' }).waitFor();
    assert.equal(await copyButton.getAttribute('aria-label'), 'Copy code');
    assert.equal(await page.locator('[data-testid="transcript"] .code__lang').textContent(), 'text');
    const sessionUrl = page.url();

    // Nothing reloads: no `load` event, the same document (a marker on the window survives), the draft stays.
    let loads = 0;
    page.on('load', () => {
      loads += 1;
    });
    await page.evaluate(() => {
      window.chatwireKept = 'same document';
    });
    await page.locator('[data-testid="composer"] textarea').fill('a draft in progress');
    await page.getByTestId('attach-input').setInputFiles({ name: '笔记', mimeType: 'text/plain', buffer: Buffer.alloc(0) });
    const note = page.getByTestId('composer-note');
    await note.filter({ hasText: '笔记 is empty' }).waitFor();
    const tables = [];
    page.on('request', (request) => {
      if (/^\/lang\/zh-CN\.[0-9a-f]+\.txt$/.test(new URL(request.url()).pathname)) tables.push(request.url());
    });

    await page.selectOption('[data-testid="language-setting"]', 'zh-CN');
    await page.waitForFunction(() => document.querySelector('[data-testid="new-chat"]').textContent === '新对话');
    assert.deepEqual(await firstTexts(page), CHINESE);
    assert.equal(loads, 0, 'no reload');
    assert.equal(await page.evaluate(() => window.chatwireKept), 'same document');
    assert.equal(await page.locator('[data-testid="composer"] textarea').inputValue(), 'a draft in progress');
    assert.equal(page.url(), sessionUrl, 'the session stays open');
    assert.equal(tables.length, 1, 'the Chinese texts are fetched once, when asked for');
    assert.equal(await page.locator('.tool-bash__exit').first().textContent(), '退出码 3', 'drawn rows change too');
    assert.match(await notice.textContent(), /^已分叉为新会话。它有自己的工作区/, 'the notice on screen');
    assert.equal(await note.textContent(), '笔记 是空文件', 'the note on screen');
    assert.equal(await copyButton.textContent(), '复制', 'the code block drawn in English');
    assert.equal(await copyButton.getAttribute('aria-label'), '复制代码');
    assert.equal(await page.locator('[data-testid="transcript"] .code__lang').textContent(), '文本');
    assert.deepEqual(await englishLeft(page, CONTENT, ALLOWED), [], 'the switched page');
    const cookies = await context.cookies(suite.server.url);
    assert.equal(cookies.find((cookie) => cookie.name === 'chatwire-lang')?.value, 'zh-CN');

    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached' });
    assert.deepEqual(await firstTexts(page), CHINESE, 'the choice outlives the page, over the browser\'s language');

    await page.selectOption('[data-testid="language-setting"]', 'en');
    await page.waitForFunction(() => document.querySelector('[data-testid="new-chat"]').textContent === 'New chat');
    assert.deepEqual(await firstTexts(page), ENGLISH);
    assert.equal(await page.locator('.tool-bash__exit').first().textContent(), 'exit 3');
    assert.equal(await copyButton.textContent(), 'Copy', 'the code block drawn in Chinese');
    assert.equal(await copyButton.getAttribute('aria-label'), 'Copy code');
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached' });
    assert.deepEqual(await firstTexts(page), ENGLISH);
    check();
  });
});
