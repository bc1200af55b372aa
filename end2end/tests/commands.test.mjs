// End-to-end check of the composer's slash commands and the quick switcher's actions in Chromium against the release
// binary, each by what it changed: `/model <name>` moves the picker and the next message runs on that model (each
// configured model answers with its own name); `/plan` and `/agent` set the mode the next message is sent in;
// `/stop` ends the run going on, keeping its partial answer; `/export` downloads the conversation as Markdown or
// JSON; `/compact` runs the summary (under pi the composer refuses it with the agent's reason and sends nothing);
// `/help` lists every command the `/` list offers; and the switcher's New chat, mode and model actions change what
// the next message does. (`/new` and `/plan <text>` are run in mentions.test.mjs, the switcher's theme in
// palette.test.mjs.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  launchBrowser, makeTempDir, openApp, openChat, removeDir, requestsSeen, sendPrompt, settled, startServer,
  watchProblems,
} from './support.mjs';

const WORDS = Array.from({ length: 120 }, (_, i) => `w${String(i + 1).padStart(3, '0')}`);
// One script per model, so an answer says which model the server ran. `slow` streams for about 15 s.
const MODELS = {
  first: { delayMs: 0, turns: [{ text: 'Answered by first.' }] },
  second: { delayMs: 0, turns: [{ text: 'Answered by second.' }] },
  slow: { chunkChars: 4, delayMs: 100, turns: [{ text: WORDS.join(' ') }] },
};

const transcript = '[data-testid="transcript"]';
const assistantMessages = `${transcript} .message[data-role="assistant"]`;
const userMessages = `${transcript} .message[data-role="user"]`;
const box = '[data-testid="composer"] textarea';
const dialog = '[data-testid="palette"] [role="dialog"]';

/** A server with the three scripted models of `MODELS`, `first` the default. Resolves to { server, stop() }. */
async function startWithModels() {
  const dir = await makeTempDir('chatwire-commands-');
  const config = [];
  for (const [name, script] of Object.entries(MODELS)) {
    const file = path.join(dir, `${name}.json`);
    await fs.writeFile(file, JSON.stringify(script));
    config.push('[[model]]', `name = "${name}"`, 'provider = "scripted"', `script = ${JSON.stringify(file)}`, '');
  }
  const file = path.join(dir, 'models.toml');
  await fs.writeFile(file, config.join('\n'));
  const server = await startServer({ args: ['--config', file, '--approve', 'never'] });
  return { server, stop: async () => { await server.stop(); await removeDir(dir); } };
}

/** Records the body of every message the page sends (`POST /api/chat`). */
function recordSends(page) {
  const sent = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/chat') sent.push(request.postDataJSON());
  });
  return sent;
}

/** Waits until the run on screen has ended: Send is back. */
const idle = (page) => page.getByRole('button', { name: 'Send', exact: true }).waitFor({ timeout: 30_000 });

/** The composer's note once it says `text` (a string: all of it; a RegExp: a match). */
async function noteSays(page, text) {
  const note = page.getByTestId('composer-note');
  await note.filter({ hasText: text }).waitFor({ timeout: 10_000 });
  return note.innerText();
}

/** Sends `text` as a message, waits for `answer` under it and for the run's end. */
async function exchange(page, text, answer) {
  await sendPrompt(page, text);
  await page.locator(assistantMessages).last().getByText(answer, { exact: true }).waitFor({ timeout: 30_000 });
  await idle(page);
}

async function streamText(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

describe('slash commands', () => {
  let models;

  before(async () => {
    models = await startWithModels();
  }, { timeout: 90_000 });

  after(async () => {
    await models?.stop();
  }, { timeout: 30_000 });

  test('/model names the model of the next messages; /plan and /agent set their mode; /help lists the commands', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, models.server);
    const sent = recordSends(page);
    const picker = page.getByTestId('model-picker');
    await picker.waitFor({ timeout: 10_000 });
    assert.equal(await picker.inputValue(), 'first', "the server's default");

    // Without a name it lists them; an unknown name is refused and kept.
    await sendPrompt(page, '/model');
    assert.equal(await noteSays(page, 'Models:'), 'Models: first, second, slow. In use: first. Pick one with /model <name>.');
    await sendPrompt(page, '/model nosuch');
    await noteSays(page, 'There is no model "nosuch". The models are: first, second, slow.');
    assert.equal(await page.locator(box).inputValue(), '/model nosuch', 'the draft stays');
    assert.equal(await picker.inputValue(), 'first');

    // A known one, in any case: the picker follows and the next message names it and runs on it.
    await sendPrompt(page, '/model SECOND');
    await noteSays(page, 'The next messages use second.');
    assert.equal(await page.locator(box).inputValue(), '');
    assert.equal(await picker.inputValue(), 'second');
    assert.equal(sent.length, 0, 'no command went to the server');
    await exchange(page, 'Which model?', 'Answered by second.');
    assert.equal(sent.length, 1);
    assert.equal(sent[0].model, 'second');
    assert.equal(sent[0].message, 'Which model?');
    // Remembered in this browser.
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached' });
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"]')?.value === 'second');

    // `/plan` alone switches the mode and says so; the next plain message goes in plan mode.
    const radio = (name) => page.getByRole('radio', { name, exact: true });
    assert.equal(await radio('Agent').isChecked(), true);
    await sendPrompt(page, '/plan');
    await noteSays(page, 'Plan mode: the agent investigates and writes a plan; you decide.');
    assert.equal(await radio('Plan').isChecked(), true);
    assert.equal(sent.length, 1, '/plan alone sends nothing');
    await exchange(page, 'Look around first', 'Answered by second.');
    assert.equal(sent.length, 2);
    assert.equal(sent[1].mode, 'plan');
    assert.equal(sent[1].message, 'Look around first');

    // `/agent` alone switches back; `/agent <text>` sends the text in agent mode.
    await sendPrompt(page, '/agent');
    await noteSays(page, 'Agent mode: the agent works on the task.');
    assert.equal(await radio('Agent').isChecked(), true);
    assert.equal(sent.length, 2, '/agent alone sends nothing');
    await sendPrompt(page, '/plan');
    await noteSays(page, 'Plan mode:');
    await exchange(page, '/agent Now do it', 'Answered by second.');
    assert.equal(sent.length, 3);
    assert.deepEqual([sent[2].message, sent[2].mode], ['Now do it', 'agent']);
    assert.equal(await radio('Agent').isChecked(), true);
    await page.locator(userMessages).last().getByText('Now do it', { exact: true }).waitFor();

    // `/help`: one line per command, the same commands, in the same order, as the `/` list offers.
    await page.locator(box).fill('/');
    const listed = page.getByTestId('composer-suggestions').locator('.composer__suggestion-name');
    await listed.first().waitFor({ timeout: 10_000 });
    const offered = await listed.allTextContents();
    await page.locator(box).fill('');
    await sendPrompt(page, '/help');
    const help = (await noteSays(page, '/help')).split('\n');
    assert.deepEqual(help.map((line) => line.split(/[ —]/)[0]), offered);
    assert.deepEqual(offered, ['/new', '/plan', '/agent', '/model', '/compact', '/stop', '/export', '/help']);
    assert.ok(help.includes('/model <name> — Use another model for the next messages'), help.join('\n'));
    assert.equal(sent.length, 3, '/help sends nothing');
    check();
  });

  test('/stop ends the run going on and keeps its partial answer; /compact waits for the run, then summarizes', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, models.server);
    const sent = recordSends(page);
    const stops = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/api/chat/abort') stops.push(request.postDataJSON());
    });
    await page.getByTestId('model-picker').waitFor({ timeout: 10_000 });

    // Nothing running: `/stop` says so and asks the server nothing.
    await sendPrompt(page, '/stop');
    await noteSays(page, 'Nothing is running.');
    await exchange(page, 'A first question', 'Answered by first.');
    assert.deepEqual(stops, []);

    await sendPrompt(page, '/model slow');
    await noteSays(page, 'The next messages use slow.');
    await sendPrompt(page, 'Count slowly');
    const answer = page.locator(assistantMessages).last();
    await answer.getByText(/w005/).waitFor({ timeout: 30_000 });
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    assert.equal(await stop.isVisible(), true);

    // `/compact` while the run goes on is refused: the note says why and the draft stays.
    await sendPrompt(page, '/compact');
    await noteSays(page, 'A run is going: wait for it to end (or /stop it), then /compact.');
    assert.equal(await page.locator(box).inputValue(), '/compact', 'the draft stays as typed');
    assert.equal(sent.length, 2, '/compact sent nothing');

    const aborted = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/chat/abort');
    await sendPrompt(page, '/stop');
    assert.equal((await aborted).status(), 200);
    await idle(page);
    const sessionId = new URL(page.url()).pathname.split('/').at(-1);
    assert.deepEqual(stops, [{ sessionId }]);
    assert.equal(await page.locator(box).inputValue(), '', 'the command is done');
    const words = (await answer.innerText()).match(/w\d{3}/g) ?? [];
    assert.ok(words.length >= 5 && words.length < WORDS.length, `a partial answer (${words.length} words)`);
    assert.deepEqual(words, WORDS.slice(0, words.length));
    // What the server kept: the answer as far as it went, and no more.
    const detail = await page.evaluate(async (id) => (await fetch(`/api/sessions/${id}`)).json(), sessionId);
    const kept = detail.messages.at(-1);
    assert.equal(kept.role, 'assistant');
    assert.ok(!JSON.stringify(kept).includes(WORDS.at(-1)), 'the run did not go on to its end');

    // Idle again: `/compact <what to keep>` is a run of its own whose answer is the summary (the model's answer).
    await sendPrompt(page, '/model first');
    await noteSays(page, 'The next messages use first.');
    await sendPrompt(page, '/compact keep the numbers');
    await page.locator(userMessages).last().getByText('/compact keep the numbers', { exact: true }).waitFor({ timeout: 30_000 });
    await idle(page);
    const summary = page.locator(assistantMessages).last();
    await summary.getByText(/^Compacted the conversation\. The agent goes on from this summary:/).waitFor();
    assert.match(await summary.innerText(), /Answered by first\./);
    assert.equal(sent.length, 3);
    assert.deepEqual(
      [sent[2].command, sent[2].message, sent[2].model, sent[2].sessionId],
      ['compact', 'keep the numbers', 'first', sessionId],
    );
    check();
  });

  test('/export downloads the conversation as Markdown or JSON, and says when there is none', { timeout: 90_000 }, async (t) => {
    const { page, check } = await openChat(t, models.server);
    const downloads = [];
    page.on('download', (download) => downloads.push(download));
    await page.getByTestId('model-picker').waitFor({ timeout: 10_000 });

    await sendPrompt(page, '/export');
    await noteSays(page, 'There is nothing to export yet: this chat has no messages.');
    await exchange(page, 'Export me', 'Answered by first.');

    const [markdown] = await Promise.all([page.waitForEvent('download'), sendPrompt(page, '/export')]);
    assert.equal(markdown.suggestedFilename(), 'export-me.md');
    assert.equal(
      await streamText(await markdown.createReadStream()),
      '# Export me\n\n## You\n\nExport me\n\n## Assistant\n\nAnswered by first.\n\n',
    );
    assert.equal(await page.locator(box).inputValue(), '');

    const [json] = await Promise.all([page.waitForEvent('download'), sendPrompt(page, '/export JSON')]);
    assert.equal(json.suggestedFilename(), 'export-me.json');
    const detail = JSON.parse(await streamText(await json.createReadStream()));
    assert.equal(detail.session.sessionId, new URL(page.url()).pathname.split('/').at(-1));
    assert.deepEqual(detail.messages.map((m) => m.role), ['user', 'assistant']);

    await sendPrompt(page, '/export pdf');
    await noteSays(page, '/export takes md or json, not "pdf".');
    assert.equal(await page.locator(box).inputValue(), '/export pdf');
    // The first `/export`, with nothing to export, downloaded nothing: a download of it would have come first.
    assert.deepEqual(downloads.map((d) => d.suggestedFilename()), ['export-me.md', 'export-me.json']);
    check();
  });

  test("the quick switcher's New chat, mode and model change what the next message does", { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, models.server, { viewport: { width: 1100, height: 800 } });
    const sent = recordSends(page);
    const created = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/sessions') created.push(request.url());
    });
    const picker = page.getByTestId('model-picker');
    await picker.waitFor({ timeout: 10_000 });
    const choose = async (query, label) => {
      await page.locator(box).focus();
      await page.keyboard.press('Control+k');
      const field = page.locator(`${dialog} [role="combobox"]`);
      await field.waitFor();
      await field.fill(query);
      await settled(page);
      const active = page.locator(`#${await field.getAttribute('aria-activedescendant')}`);
      assert.equal(await active.locator('.palette__label').textContent(), label, `the first match of "${query}"`);
      assert.equal(await active.getAttribute('data-kind'), 'action');
      await page.keyboard.press('Enter');
      await page.locator(dialog).waitFor({ state: 'detached' });
    };

    await exchange(page, 'The first chat', 'Answered by first.');
    const rows = page.locator('[data-testid="sidebar"] .sidebar__item');
    const rowsBefore = await rows.count();
    const firstSession = new URL(page.url()).pathname;
    assert.match(firstSession, /^\/s\//);
    assert.equal(created.length, 1);

    // New chat: an empty page on `/`, and the next message starts a session of its own.
    await choose('new chat', 'New chat');
    await page.waitForURL((url) => url.pathname === '/');
    await page.locator(userMessages).first().waitFor({ state: 'detached' });
    assert.equal(await page.locator('.sidebar__item--current').count(), 0);

    // Mode: the switch and the next message follow.
    await choose('plan mode', 'Switch to Plan mode');
    assert.equal(await page.getByRole('radio', { name: 'Plan', exact: true }).isChecked(), true);
    // Model: the picker and the next message follow; that model answers.
    await choose('use model second', 'Use model second');
    assert.equal(await picker.inputValue(), 'second');

    await exchange(page, 'The second chat', 'Answered by second.');
    assert.equal(created.length, 2, 'a session of its own');
    const secondSession = new URL(page.url()).pathname;
    assert.notEqual(secondSession, firstSession);
    assert.equal(await page.locator(userMessages).count(), 1, 'the first chat is not on screen');
    assert.deepEqual([sent[1].message, sent[1].mode, sent[1].model], ['The second chat', 'plan', 'second']);
    await page.locator('.sidebar__item--current .sidebar__title', { hasText: 'The second chat' }).waitFor();
    assert.equal(await rows.count(), rowsBefore + 1, 'the first chat is still listed');

    // And back: agent mode, the first model.
    await choose('agent mode', 'Switch to Agent mode');
    assert.equal(await page.getByRole('radio', { name: 'Agent', exact: true }).isChecked(), true);
    await choose('use model first', 'Use model first');
    await exchange(page, 'Once more', 'Answered by first.');
    assert.deepEqual([sent[2].message, sent[2].mode, sent[2].model], ['Once more', 'agent', 'first']);
    assert.equal(new URL(page.url()).pathname, secondSession);
    check();
  });
});

const FAKE_PI = fileURLToPath(new URL('../../tests/support/fake-pi.mjs', import.meta.url));
const RECORDING = fileURLToPath(new URL('../../tests/vectors/pi-rpc/basic_tools.jsonl', import.meta.url));

describe('/compact under pi', () => {
  let server;

  before(async () => {
    for (const file of [FAKE_PI, RECORDING]) assert.ok(!file.includes(' '), `--pi-command splits on spaces: ${file}`);
    server = await startServer({
      script: { turns: [{ text: 'The built-in agent.' }] },
      args: ['--pi-command', `node ${FAKE_PI} ${RECORDING}`],
    });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
  }, { timeout: 30_000 });

  test('is refused, and the page says why', { timeout: 120_000 }, async (t) => {
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const { problems } = watchProblems(browser.context);
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await openApp(page, server);
    await page.getByTestId('agent-picker').selectOption('pi');
    await sendPrompt(page, 'Run the tools, please.');
    await page.waitForURL(/\/s\//);
    await page.locator(assistantMessages).first().waitFor({ timeout: 30_000 });
    await idle(page);
    await page.locator('[data-testid="session-agent"]', { hasText: 'pi' }).waitFor();
    const messages = await page.locator(`${transcript} .message`).count();

    const sent = recordSends(page);
    // Enter on the command list's entry, which completes the name before running it.
    await page.locator(box).fill('/compact');
    await page.locator('#composer-suggestions [role="option"]', { hasText: '/compact' }).waitFor();
    await page.locator(box).press('Enter');
    // The composer refuses it with the agent's reason, as `GET /api/agents` gives it: no request, no 422.
    await noteSays(page, '/compact is not available with --runtime pi yet: pi compacts by itself near the context window');
    assert.equal(await page.locator(box).inputValue(), '/compact', 'the draft stays as typed');
    assert.equal(await page.locator(`${transcript} .message`).count(), messages, 'no run was started');
    // Sent nothing (the sending code is loaded since the first message, so a send would have started at once).
    await requestsSeen(page);
    assert.deepEqual(sent, [], '/compact sent nothing');
    assert.deepEqual(problems, [], 'nothing failed');
  });
});
