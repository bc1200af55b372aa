// End-to-end check of the read-only tool renderers against the real server and its built-in tools: a Write row that
// grows while its arguments stream, Bash with colours and exit code, Edit's numbered diff, Read, Grep with highlighted
// matches, Glob/Ls, the checklist, an MCP call's JSON tree — and markup in any command, path, content or output
// staying text.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  openChat,
  sendPrompt,
  serverForSuite,
  waitForHydration,
} from './support.mjs';

const XSS = '<img src=x onerror=alert(1)>';
const FILE = 'notes.txt';
const FILE_LINES = Array.from({ length: 24 }, (_, i) => `line ${i + 1}: ${i === 4 ? XSS : 'plain text'}`);
const FILE_CONTENT = `${FILE_LINES.join('\n')}\n`;

const SCRIPT = {
  chunkChars: 40,
  delayMs: 5,
  turns: [
    {
      text: 'Writing the notes.',
      // Slow enough to watch the content grow: about 100 pieces, 50 ms apart.
      chunkChars: 8,
      delayMs: 50,
      toolCalls: [{ name: 'write', arguments: { path: FILE, content: FILE_CONTENT } }],
    },
    {
      text: 'Now the other tools.',
      toolCalls: [
        {
          name: 'bash',
          arguments: {
            command: `printf '%s\\n' '${XSS}'; printf '\\033[31mred ${XSS}\\033[0m plain\\n'; echo done`,
          },
        },
        {
          name: 'edit',
          arguments: { path: FILE, oldText: 'line 7: plain text\n', newText: `line 7: edited ${XSS}\n` },
        },
        { name: 'read', arguments: { path: FILE, offset: 3, limit: 4 } },
        { name: 'grep', arguments: { pattern: 'onerror', path: '.' } },
        { name: 'write', arguments: { path: `${XSS}.txt`, content: XSS } },
        { name: 'glob', arguments: { pattern: '*.txt' } },
        { name: 'ls', arguments: { path: '.' } },
        {
          name: 'todo_write',
          arguments: {
            todos: [
              { text: `Write ${XSS}`, status: 'completed' },
              { text: 'Check the rows', status: 'in_progress' },
              { text: 'Finish', status: 'pending' },
            ],
          },
        },
        { name: 'mcp__demo__echo', arguments: { message: XSS, nested: { list: [1, XSS] } } },
      ],
    },
    { text: 'All done.' },
  ],
};

describe('tool rows', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('renderers show their content and never markup from the agent', { timeout: 180_000 }, async (t) => {
    // Streams cut by the reload below are the test's own doing; markup turning into a dialog is not.
    const { page, check } = await openChat(t, suite.server, { viewport: { width: 1100, height: 900 }, requests: false });
    const imagesBefore = await page.locator('img').count();

    await sendPrompt(page, 'Show me the tools');

    // The Write row opens while the model is still writing its arguments: the path first, then the content line by line.
    const answer = page.locator('.message[data-role="assistant"]').first();
    const write = answer.locator('.tool[data-tool="Write"]').first();
    await write.locator('.tool-file__name', { hasText: FILE }).waitFor({ timeout: 30_000 });
    await page.waitForFunction(
      () => {
        const row = document.querySelector('.tool[data-tool="Write"]');
        return row?.dataset.status === 'drafting' && row.querySelectorAll('.tool-lines__line').length >= 3;
      },
      null,
      { timeout: 20_000, polling: 20 },
    );
    const drafting = await write.evaluate((row) => ({
      lines: row.querySelectorAll('.tool-lines__line:not(.tool-lines__line--open)').length,
      detail: row.querySelector('.tool-file__detail')?.textContent ?? '',
      status: row.dataset.status,
    }));
    assert.equal(drafting.status, 'drafting');
    assert.ok(drafting.lines < FILE_LINES.length, `the whole file was there at once (${drafting.lines} lines)`);
    assert.match(drafting.detail, /^writing… \d+ lines? · \d+ B$/);
    // A finished line is drawn once: the node of line 1 survives the rest of the stream.
    await write.locator('.tool-lines__line').first().evaluate((node) => {
      node.dataset.seen = 'yes';
    });
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'tools-write-streaming.png') });

    await answer.getByText('All done.').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });

    // Write: the whole file with line numbers, the size written, the first line never rebuilt.
    assert.equal(await write.getAttribute('data-status'), 'done');
    assert.equal(await write.locator('.tool-lines__line').count(), FILE_LINES.length);
    assert.equal(await write.locator('.tool-lines__line').first().getAttribute('data-seen'), 'yes');
    assert.equal(await write.locator('.tool-lines__no').nth(4).textContent(), '5');
    assert.equal(await write.locator('.tool-lines__text').nth(4).textContent(), `line 5: ${XSS}`);
    assert.match(await write.locator('.tool-file__detail').textContent(), /^wrote \d+ B$/);
    assert.match(await write.locator('.tool__duration').textContent(), /^\d+(\.\d)? (ms|s)$/);

    // Bash: the command, its output with the red span, the exit code.
    const bash = answer.locator('.tool[data-tool="Bash"]');
    assert.equal(await bash.getAttribute('data-status'), 'done');
    assert.match(await bash.locator('.tool-bash__command').textContent(), /^\$ printf/);
    const output = bash.locator('.tool-output');
    assert.match(await output.textContent(), new RegExp(`^${escape(XSS)}\\nred ${escape(XSS)} plain\\ndone\\n$`));
    assert.equal(await output.locator('.ansi-fg-1').textContent(), `red ${XSS}`);
    assert.notEqual(
      await output.locator('.ansi-fg-1').evaluate((node) => getComputedStyle(node).color),
      await output.evaluate((node) => getComputedStyle(node).color),
      'the red span is not coloured',
    );
    assert.equal(await bash.locator('.tool-bash__exit').textContent(), 'exit 0');

    // Edit: the file's diff with old and new line numbers, + and − lines.
    const edit = answer.locator('.tool[data-tool="Edit"]');
    assert.equal(await edit.getAttribute('data-status'), 'done');
    const removed = edit.locator('.diff-line--removed');
    const added = edit.locator('.diff-line--added');
    assert.equal(await removed.count(), 1);
    assert.equal(await added.count(), 1);
    assert.deepEqual(await lineCells(removed), ['7', '', '−', 'line 7: plain text']);
    assert.deepEqual(await lineCells(added), ['', '7', '+', `line 7: edited ${XSS}`]);
    assert.deepEqual(await lineCells(edit.locator('.diff-line--context').first()), ['4', '4', ' ', 'line 4: plain text']);
    assert.match(await edit.locator('.tool-file__detail').textContent(), /^\+1 −1$/);

    // Read: the range, numbered from the offset, the continuation notice apart.
    const read = answer.locator('.tool[data-tool="Read"]');
    assert.equal(await read.locator('.tool-file__detail').textContent(), 'lines 3–6');
    assert.deepEqual(await read.locator('.tool-lines__no').allTextContents(), ['3', '4', '5', '6']);
    assert.equal(await read.locator('.tool-lines__text').nth(2).textContent(), `line 5: ${XSS}`);
    assert.match(await read.locator('.tool-file__notice').textContent(), /^Showing lines 3-6 of 24/);

    // Grep: files with counts, matching lines with the match marked.
    const grep = answer.locator('.tool[data-tool="Grep"]');
    assert.match(await grep.locator('.tool-search__count').textContent(), /^\d+ match(es)? in \d+ files?$/);
    const notes = grep.locator('.tool-search__file', { has: page.locator('.tool-search__path', { hasText: FILE }) });
    assert.deepEqual(await notes.locator('.tool-search__match .tool-lines__no').allTextContents(), ['5', '7']);
    assert.deepEqual(await notes.locator('mark').allTextContents(), ['onerror', 'onerror']);
    assert.equal(await notes.locator('.tool-search__text').first().textContent(), `line 5: ${XSS}`);

    // Glob and Ls: the files found, the one named with markup among them.
    const glob = answer.locator('.tool[data-tool="Glob"]');
    assert.ok((await glob.locator('.tool-search__entry').allTextContents()).includes(`${XSS}.txt`));
    const ls = answer.locator('.tool[data-tool="Ls"]');
    const entries = await ls.locator('.tool-search__entry').allTextContents();
    assert.ok(entries.includes(FILE) && entries.includes(`${XSS}.txt`), `ls shows ${entries}`);
    assert.match(await ls.locator('.tool-search__count').textContent(), /^\d+ entries$/);

    // The checklist: its items in their states and the progress line.
    const todo = answer.locator('.tool[data-tool="TodoWrite"]');
    assert.deepEqual(await todo.locator('.tool-todo__text').allTextContents(), [
      `Write ${XSS}`,
      'Check the rows',
      'Finish',
    ]);
    assert.equal(await todo.locator('.tool-todo__item--done').count(), 1);
    assert.equal(await todo.locator('.tool-todo__item--in-progress').count(), 1);
    assert.equal(await todo.locator('.tool-todo__progress span').textContent(), '1/3 completed');

    // An MCP call: server and tool name, its arguments as a tree; the runtime has no such tool, so it failed.
    const mcp = answer.locator('.tool[data-tool="mcp__demo__echo"]');
    assert.equal(await mcp.locator('.tool__name').textContent(), 'echo');
    assert.equal(await mcp.locator('.tool__server').textContent(), 'mcp · demo');
    assert.equal(await mcp.getAttribute('data-status'), 'error');
    assert.match(await mcp.locator('.tool__error').textContent(), /no tool named/);
    const strings = await mcp.locator('.json-tree__string').allTextContents();
    assert.equal(strings.filter((text) => text === XSS).length, 2, `the tree shows ${strings}`);

    // Every row says it is done, with its duration; nothing the agent sent became an element or ran.
    for (const row of await answer.locator('.tool').all()) {
      const name = await row.getAttribute('data-tool');
      if (name === 'mcp__demo__echo') continue;
      assert.equal(await row.getAttribute('data-status'), 'done', `${name} is not done`);
      assert.equal(await row.locator('.tool__state').textContent(), 'done');
    }
    assert.equal(await page.locator('img').count(), imagesBefore, 'markup from a tool became an <img>');
    assert.equal(await page.evaluate(() => document.querySelector('[data-testid="transcript"] img')), null);
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'tools-rows.png'), fullPage: true });
    const durations = await rowDurations(answer);
    assert.ok(Object.keys(durations).length >= 5, `rows with a duration: ${JSON.stringify(durations)}`);

    // Reloaded from the session's history, the rows are drawn the same, still as text.
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    const reloaded = page.locator('.message[data-role="assistant"]').first();
    await reloaded.locator('.tool[data-tool="Edit"] .diff-line--added').waitFor({ timeout: 20_000 });
    assert.equal(await reloaded.locator('.tool[data-tool="Bash"] .ansi-fg-1').textContent(), `red ${XSS}`);
    assert.equal(await reloaded.locator('.tool[data-tool="Write"]').first().getAttribute('data-status'), 'done');
    assert.equal(await page.locator('img').count(), imagesBefore, 'markup from the history became an <img>');
    // The server measured each call, so a reloaded row shows the same duration it showed live.
    assert.deepEqual(await rowDurations(reloaded), durations);

    check();
  });
});

/** Each finished row's duration text, by tool call id. */
async function rowDurations(message) {
  return message.evaluate((node) =>
    Object.fromEntries(
      Array.from(node.querySelectorAll('.tool[data-tool-call-id]'))
        .map((row) => [row.dataset.toolCallId, row.querySelector(':scope > .tool__header .tool__duration')?.textContent])
        .filter(([, duration]) => duration !== undefined),
    ),
  );
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function lineCells(line) {
  return line.evaluate((node) => Array.from(node.children, (cell) => cell.textContent));
}
