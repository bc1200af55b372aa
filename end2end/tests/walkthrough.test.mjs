// A walk through the bundled demo in Chromium with approvals on (`--approve writes`), as a user would take it:
// approve the commands, the Python code and the file changes, deny the optional edit, answer the question; then check
// what each row shows (approval cards with the command, the code, the diff and the file, the denied call, the
// answered question, the Python output, the chart's SVG, the task group with the sub-agent's rows) and save a
// screenshot per renderer in end2end/artifacts/. The server has a local search backend and the test MCP server
// configured, so the demo also searches the web and asks the MCP server (calls it makes only when they are offered).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  makeTempDir,
  mcpTestServerConfig,
  openChat,
  removeDir,
  sendPrompt,
  startSearchBackend,
  startServer,
  waitForHydration,
} from './support.mjs';
const STEP_TIMEOUT_MS = 60_000;

// The demo's optional edit, the one this walk denies.
const OPTIONAL_EDIT = 'Greet everyone on the list.';

/** The text of a diff's lines of one kind (`added`, `removed`, `context`), without numbers and sign. */
const lines = (card, kind) => card.locator(`.diff-line--${kind} .diff-line__text`).allTextContents();

const SEARCH_RESULTS = [
  {
    title: 'Formatted string literals',
    url: 'https://docs.python.org/3/reference/lexical_analysis.html#f-strings',
    content: 'A formatted string literal or f-string is a string literal that is prefixed with f or F.',
  },
];

const screenshot = (locator, name) => locator.screenshot({ path: path.join(ARTIFACTS_DIR, `walkthrough-${name}.png`) });

describe('demo walkthrough with approvals', () => {
  let server;
  let backend;
  let configDir;

  before(async () => {
    backend = await startSearchBackend(SEARCH_RESULTS);
    configDir = await makeTempDir('chatwire-config-');
    const config = path.join(configDir, 'chatwire.toml');
    await fs.writeFile(config, mcpTestServerConfig('weather'));
    server = await startServer({ args: ['--approve', 'writes', '--config', config, '--search-url', backend.url] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await backend?.close();
    await removeDir(configDir);
  }, { timeout: 30_000 });

  test('approve, deny, answer, and every row shows what it did', { timeout: 300_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 900 } });
    await sendPrompt(page, 'Show me what you can do');
    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();
    const row = (id) => answer.locator(`[data-tool-call-id="${id}"]`);

    // Act on each card as it comes, until the demo's closing answer is there.
    const approved = [];
    const denied = [];
    const shot = new Set();
    let answered = false;
    for (;;) {
      const next = await page.waitForFunction(
        () => {
          const card = document.querySelector('.approval.tool--approval-requested button:not([disabled])');
          if (card) return `approval ${card.closest('.approval').dataset.toolCallId}`;
          if (document.querySelector('.question.tool--input-available button:not([disabled])')) return 'question';
          if (/Run it yourself:/.test(document.querySelector('[data-testid="transcript"]')?.innerText ?? '')) return 'end';
          return false;
        },
        null,
        { timeout: STEP_TIMEOUT_MS, polling: 100 },
      ).then((handle) => handle.jsonValue());
      if (next === 'end') break;
      if (next === 'question') {
        const question = answer.locator('.question.tool--input-available');
        assert.match(await question.innerText(), /Should the summary include the file listing\?/);
        await question.getByRole('button', { name: 'No, keep it short' }).waitFor();
        await question.getByRole('textbox', { name: 'Your answer' }).waitFor();
        await question.getByRole('button', { name: 'Skip' }).waitFor();
        await screenshot(question, 'question');
        await question.getByRole('button', { name: 'Yes, include it' }).click();
        answered = true;
        continue;
      }
      const id = next.slice('approval '.length);
      const card = row(id);
      const name = await card.locator('.tool__name').innerText();
      const text = await card.innerText();
      let decision = 'Approve';
      if (name === 'Bash') {
        assert.match(await card.locator('.approval__command').innerText(), /^\$ (echo "hello from|python3 hello\.py)/);
        if (!shot.has('bash')) await screenshot(card, 'approval-bash');
        shot.add('bash');
      } else if (name === 'IPython') {
        const code = await card.locator('.approval__code').innerText();
        assert.match(code, /^calls = \{"plan": 1, "look around": 2/);
        assert.match(code, /f"\{total\} calls in \{len\(calls\)\} steps"/);
        await screenshot(card, 'approval-ipython');
      } else if (name === 'Write') {
        assert.equal(await card.locator('.approval__path').innerText(), 'hello.py');
        const content = await card.locator('.approval__content').innerText();
        assert.match(content, /1\s*"""A tiny greeter, written by the chatwire demo\."""/);
        assert.match(content, /def greet\(name: str\) -> str:/);
        await screenshot(card, 'approval-write');
      } else if (name === 'Edit' && text.includes(OPTIONAL_EDIT)) {
        assert.deepEqual(await lines(card, 'added'), [`    """${OPTIONAL_EDIT}"""`]);
        assert.deepEqual(await lines(card, 'context'), ['def main() -> None:']);
        decision = 'Deny';
      } else if (name === 'Edit') {
        assert.equal(await card.locator('.approval__path').innerText(), 'hello.py');
        assert.deepEqual(await lines(card, 'removed'), ['["world", "chatwire"]']);
        assert.deepEqual(await lines(card, 'added'), ['["world", "chatwire", "you"]']);
        await screenshot(card, 'approval-edit');
      } else {
        assert.fail(`under --approve writes only bash, ipython, write and edit wait, but ${name} did: ${text}`);
      }
      await card.getByRole('button', { name: decision }).click();
      (decision === 'Approve' ? approved : denied).push({ id, name });
      // The card leaves the waiting state once the run has the decision.
      await page.waitForFunction(
        (id) => !document.querySelector(`[data-tool-call-id="${id}"].tool--approval-requested`),
        id,
        { timeout: STEP_TIMEOUT_MS },
      );
    }
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor({ timeout: STEP_TIMEOUT_MS });
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'walkthrough-full.png'), fullPage: true });

    assert.ok(answered, 'the demo asked no question');
    assert.deepEqual(
      approved.map((call) => call.name),
      ['Bash', 'Write', 'Edit', 'Bash', 'IPython'],
      'the commands, code and file changes that waited, in order',
    );
    assert.deepEqual(denied.map((call) => call.name), ['Edit']);

    // Approved calls ran; the denied one says so and shows what it would have done.
    for (const { id, name } of approved) {
      assert.match(await row(id).getAttribute('class'), /tool--output-available/, `${name} ${id} did not finish`);
    }
    const refused = row(denied[0].id);
    assert.match(await refused.getAttribute('class'), /tool--output-denied/);
    assert.match(await refused.innerText(), /Denied: the agent was not allowed to make this edit, and nothing was run\./);
    assert.match(await refused.innerText(), new RegExp(OPTIONAL_EDIT));
    await screenshot(refused, 'denied');

    // The answered question shows the answer in the user's words.
    const question = answer.locator('.question');
    assert.equal(await question.locator('.question__answer-text').innerText(), 'Yes, include it');
    assert.match(await question.getAttribute('class'), /tool--output-available/);
    await screenshot(question, 'question-answered');

    // The chart is an SVG with its title, axis titles, ticks and legend as text, and the demo's bars and line.
    const chart = answer.locator('figure.chart svg');
    await chart.waitFor();
    assert.equal(await chart.getAttribute('viewBox'), '0 0 640 360');
    const box = await chart.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 150, `the chart is drawn too small: ${JSON.stringify(box)}`);
    const svgText = await chart.evaluate((svg) => [...svg.querySelectorAll('text')].map((t) => t.textContent));
    for (const expected of ['Tool calls per step', 'step', 'calls', 'tool calls', 'running total', 'look around', '0', '10']) {
      assert.ok(svgText.includes(expected), `the chart has no text "${expected}": ${JSON.stringify(svgText)}`);
    }
    assert.equal(await chart.locator('rect.chart__bar').count(), 5);
    assert.equal(await chart.locator('.chart__series polyline').count(), 1);
    assert.equal(await chart.locator('.chart__series circle').count(), 5);
    await screenshot(answer.locator('figure.chart'), 'chart');

    // The task is a group holding the sub-agent's own rows, and its report.
    const group = answer.locator('details.task-group');
    assert.equal(await group.count(), 1);
    assert.match(await group.locator('summary').innerText(), /Task Find the functions in hello\.py/);
    const children = group.locator('.task-group__children > .tool');
    assert.deepEqual(await children.locator('.tool__name').allInnerTexts(), ['Grep', 'Read']);
    for (const child of await children.all()) {
      assert.match(await child.getAttribute('class'), /tool--output-available/);
      assert.match(await child.getAttribute('data-tool-call-id'), /^call_\d+_0:call_\d_\d$/);
    }
    assert.match(await group.locator('.task-group__report').innerText(), /hello\.py defines `greet` \(line 4\) and `main` \(line 8\)\./);
    assert.equal(await answer.locator(':scope > .tool[data-tool="Grep"]').count(), 1, 'child rows are not drawn twice');
    await screenshot(group, 'task-group');
    await group.locator('summary').click();
    assert.equal(await group.evaluate((details) => details.open), false, 'the group folds');
    assert.equal(await children.first().isVisible(), false);
    await group.locator('summary').click();

    // Every other renderer shows what its call did.
    const topRow = (name) => answer.locator(`:scope > .tool[data-tool="${name}"]`);
    for (const name of ['Ls', 'Read', 'Grep', 'Glob', 'TodoWrite', 'Bash', 'IPython', 'Write', 'Edit']) {
      const first = topRow(name).first();
      assert.equal(await first.getAttribute('data-status'), 'done', `${name} did not finish`);
      await screenshot(first, `row-${name.toLowerCase()}`);
    }
    const bash = topRow('Bash').first();
    assert.match(await bash.locator('.tool-bash__command').textContent(), /^\$ echo "hello from/);
    assert.match(await bash.locator('.tool-output').innerText(), /hello from .*\nstep 1\nstep 2\nstep 3\ngreen and bold/s);
    assert.equal(await bash.locator('.tool-output .ansi-fg-2').textContent(), 'green', 'ANSI green is a coloured span');
    assert.equal(await bash.locator('.tool-bash__exit').textContent(), 'exit 0');
    const ipython = topRow('IPython').first();
    const code = await ipython.locator('.tool-bash__command').innerText();
    assert.match(code, /^In: calls = \{"plan": 1, "look around": 2, "write": 2, "change": 3, "search": 2\}\ntotal = 0\n/);
    assert.match(code, /\n    print\(f"\{step:<12\} \{n\}  running total \{total\}"\)\n/);
    assert.equal(
      (await ipython.locator('.tool-output').innerText()).trimEnd(),
      [
        'plan         1  running total 1',
        'look around  2  running total 3',
        'write        2  running total 5',
        'change       3  running total 8',
        'search       2  running total 10',
        "'10 calls in 5 steps'",
      ].join('\n'),
    );
    assert.equal(await ipython.locator('.tool-bash__exit').textContent(), 'exit 0');
    const write = topRow('Write').first();
    assert.equal(await write.locator('.tool-lines__text').first().textContent(), '"""A tiny greeter, written by the chatwire demo."""');
    const edit = topRow('Edit').first();
    assert.deepEqual(await lines(edit, 'removed'), ['    for name in ["world", "chatwire"]:']);
    assert.deepEqual(await lines(edit, 'added'), ['    for name in ["world", "chatwire", "you"]:']);
    const read = topRow('Read').first();
    assert.ok((await read.locator('.tool-lines__text').allTextContents()).includes('def greet(name: str) -> str:'));
    const grep = topRow('Grep').first();
    assert.match(await grep.locator('.tool-search__count').textContent(), /^2 matches in 1 file$/);
    assert.deepEqual(await grep.locator('.tool-search__match mark').allTextContents(), ['def greet', 'def main']);
    assert.deepEqual(await topRow('Glob').first().locator('.tool-search__entry').allTextContents(), ['hello.py']);
    const todo = topRow('TodoWrite').last();
    assert.equal(await todo.locator('.tool-todo__item--done').count(), await todo.locator('.tool-todo__item').count());
    assert.match(await todo.locator('.tool-todo__text').first().textContent(), /^Look around the workspace$/);

    // The web search and the MCP call, made because both were offered; neither waits for approval.
    const search = topRow('WebSearch');
    assert.equal(await search.count(), 1);
    assert.equal(await search.getAttribute('data-status'), 'done');
    assert.equal(await search.locator('.tool-search__query').innerText(), 'python f-string formatting');
    assert.deepEqual(await search.locator('a.tool-websearch__title').allInnerTexts(), ['Formatted string literals']);
    assert.equal(await search.locator('a.tool-websearch__title').getAttribute('href'), SEARCH_RESULTS[0].url);
    assert.deepEqual(backend.queries.map((query) => query.q), ['python f-string formatting']);
    await screenshot(search, 'row-websearch');
    const mcp = topRow('mcp__weather__lookup');
    assert.equal(await mcp.count(), 1);
    assert.equal(await mcp.getAttribute('data-status'), 'done');
    assert.equal(await mcp.locator('.tool__server').textContent(), 'mcp · weather');
    assert.equal(await mcp.locator('.tool__name').textContent(), 'lookup');
    assert.deepEqual(await mcp.locator('.tool-generic__section').first().locator('.json-tree__string').allTextContents(), [
      'Lisbon',
      'C',
    ]);
    assert.ok((await mcp.locator('.json-tree__string').allTextContents()).includes('clear'), 'the result tree is shown');
    await screenshot(mcp, 'row-mcp');

    // Tool text is text: nothing the demo's tools returned became markup.
    assert.equal(await answer.locator('script, img, iframe').count(), 0);

    // A reload rebuilds the same cards from the session's log.
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await answer.locator('figure.chart svg').waitFor({ timeout: 10_000 });
    assert.equal(await answer.locator('.question .question__answer-text').innerText(), 'Yes, include it');
    assert.match(await row(denied[0].id).getAttribute('class'), /tool--output-denied/);
    assert.equal(await answer.locator('details.task-group .task-group__children > .tool').count(), 2);

    check();
  });
});
