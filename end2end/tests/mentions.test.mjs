// End-to-end check of @ mentions and slash commands in Chromium against the release binary: `@` lists the
// workspace's files (gitignore-aware), the arrows and Enter pick one into the message, which is sent with it; Esc
// closes the list without stopping a run; `/plan <text>` sends the text in plan mode; an unknown command says so and
// sends nothing; `/new` opens a new chat. axe checks the open list.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { axeViolations as violations, makeTempDir, openChat, removeDir, startServer } from './support.mjs';

// Slow enough that a run is still going while the test presses Esc in the composer.
const SCRIPT = { delayMs: 40, chunkChars: 3, turns: [{ text: 'Looked at it: '.repeat(30) + 'done.' }] };

const textarea = '[data-testid="composer"] textarea';
const list = '[data-testid="composer-suggestions"]';
const options = `${list} [role="option"]`;

const optionTexts = (page) => page.locator(options).allInnerTexts();

/** Waits until the page has drawn what the last key changed. */
const settled = (page) => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));

describe('@ mentions and slash commands', () => {
  let server;
  let dir;

  before(async () => {
    dir = await makeTempDir('chatwire-mentions-');
    const workspace = path.join(dir, 'workspace');
    await fs.mkdir(path.join(workspace, 'src'), { recursive: true });
    for (const name of ['src/login.rs', 'src/logic.rs', 'README.md', 'build.log']) {
      await fs.writeFile(path.join(workspace, name), 'x\n');
    }
    await fs.writeFile(path.join(workspace, '.gitignore'), '*.log\n');
    server = await startServer({ script: SCRIPT, args: ['--workspace', workspace, '--approve', 'never'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await removeDir(dir);
  }, { timeout: 30_000 });

  test('a file is mentioned with the keyboard, and /plan, an unknown command and /new do what they say', {
    timeout: 120_000,
  }, async (t) => {
    const { page, check } = await openChat(t, server);
    const sent = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/chat') {
        sent.push(JSON.parse(request.postData()));
      }
    });
    const box = page.locator(textarea);
    await box.click();

    // `@` + part of a name: the workspace's files, the gitignored one left out, best first.
    await page.keyboard.type('Look at @src/log');
    await page.locator(options).first().waitFor({ timeout: 10_000 });
    assert.deepEqual(await optionTexts(page), ['src/logic.rs', 'src/login.rs']);
    assert.equal(await box.getAttribute('aria-expanded'), 'true');
    assert.equal(await box.getAttribute('aria-activedescendant'), 'composer-option-0');
    assert.deepEqual(await violations(page), [], 'the open suggestion list');
    await page.keyboard.press('ArrowDown');
    await settled(page);
    assert.equal(await box.getAttribute('aria-activedescendant'), 'composer-option-1');
    assert.equal(await page.locator(options).nth(1).getAttribute('aria-selected'), 'true');
    await page.keyboard.press('Enter');
    await settled(page);
    assert.equal(await box.inputValue(), 'Look at @src/login.rs ', 'Enter picks the path; nothing is sent yet');
    assert.equal(await box.getAttribute('aria-expanded'), 'false');
    assert.equal(sent.length, 0);
    await page.keyboard.type('please');
    await page.keyboard.press('Enter');
    const transcript = page.getByTestId('transcript');
    await transcript.getByText('Look at @src/login.rs please').first().waitFor({ timeout: 10_000 });
    assert.equal(sent[0].message, 'Look at @src/login.rs please');

    // While that run goes on, Esc closes an open list and stops nothing.
    const stop = page.getByRole('button', { name: 'Stop' });
    await stop.waitFor({ timeout: 10_000 });
    await page.keyboard.type('@READ');
    await page.locator(options).first().waitFor({ timeout: 10_000 });
    assert.deepEqual(await optionTexts(page), ['README.md']);
    await page.keyboard.press('Escape');
    await settled(page);
    assert.equal(await box.getAttribute('aria-expanded'), 'false');
    assert.equal(await page.locator(list).isHidden(), true);
    assert.equal(await box.inputValue(), '@READ', 'the draft is kept');
    assert.equal(await stop.isVisible(), true, 'the run still goes on');
    await transcript.getByText(/done\.$/).first().waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    assert.equal(await transcript.getByText('Request was aborted').count(), 0);
    await box.fill('');

    // `/` lists the commands; Tab completes one; its text is sent in plan mode.
    await page.keyboard.type('/');
    await page.locator(options).first().waitFor({ timeout: 10_000 });
    const commands = await optionTexts(page);
    for (const name of ['/new', '/plan', '/agent', '/model', '/compact', '/stop', '/export']) {
      assert.ok(commands.some((text) => text.startsWith(name)), `${name} in ${commands}`);
    }
    await page.keyboard.type('pl');
    await settled(page);
    assert.equal((await optionTexts(page)).length, 1);
    await page.keyboard.press('Tab');
    await settled(page);
    assert.equal(await box.inputValue(), '/plan ');
    await page.keyboard.type('fix the bug');
    await page.keyboard.press('Enter');
    await transcript.getByText('fix the bug', { exact: true }).first().waitFor({ timeout: 10_000 });
    assert.equal(sent.length, 2);
    assert.equal(sent[1].message, 'fix the bug');
    assert.equal(sent[1].mode, 'plan', 'the run is in plan mode');
    assert.equal(await page.getByRole('radio', { name: 'Plan' }).isChecked(), true, 'the switch says so');
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 30_000 });

    // An unknown command is said, kept in the box and not sent.
    await box.fill('');
    await page.keyboard.type('/deploy now');
    await page.keyboard.press('Enter');
    const note = page.getByTestId('composer-note');
    await note.getByText(/^Unknown command \/deploy\./).waitFor({ timeout: 10_000 });
    assert.equal(await box.inputValue(), '/deploy now');
    assert.equal(sent.length, 2, 'nothing went to the model');

    // `/new` (Enter on the only command left) opens a new, empty chat.
    assert.match(new URL(page.url()).pathname, /^\/s\//);
    await box.fill('');
    await page.keyboard.type('/new');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === '/', { timeout: 10_000 });
    await transcript.getByText('fix the bug', { exact: true }).first().waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await box.inputValue(), '');
    assert.equal(sent.length, 2);
    check();
  });
});
