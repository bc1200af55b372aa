// End-to-end check of "Restore files" and "Fork" in Chromium against the release binary: two runs change files by
// shell commands; restoring to before the second message (after the in-place confirmation) puts the files on disk
// back as they were then, and leaves a file nobody's run touched alone; forking at the second message opens a new
// session with the first exchange, the message in the composer, and its own copy of the files as they stood then.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { openChat, sendPrompt, serverForSuite } from './support.mjs';

const SCRIPT = {
  delayMs: 0,
  turns: [
    { toolCalls: [{ name: 'bash', arguments: { command: 'echo one > a.txt && echo keep > keep.txt' } }] },
    { text: 'Wrote the files.' },
    { toolCalls: [{ name: 'bash', arguments: { command: 'echo two > a.txt && echo new > b.txt && rm keep.txt' } }] },
    { text: 'Changed the files.' },
  ],
};

describe('chatwire restore files', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  /** Sends both prompts of the script, each run to its end; the session's workspace on disk and a wait for idle. */
  async function runBoth(page) {
    const idle = () => page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });
    await sendPrompt(page, 'Write the files');
    await page.getByText('Wrote the files.').waitFor({ timeout: 30_000 });
    await idle();
    await sendPrompt(page, 'Change the files');
    await page.getByText('Changed the files.').waitFor({ timeout: 30_000 });
    await idle();
    const session = new URL(page.url()).pathname.split('/').pop();
    return { idle, workspace: path.join(suite.server.dataDir, 'workspaces', session) };
  }

  test('Restore files puts the workspace back as it was before a message', { timeout: 90_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    const { workspace } = await runBoth(page);

    const read = (name) => fs.readFile(path.join(workspace, name), 'utf8').catch(() => null);
    assert.equal(await read('a.txt'), 'two\n');
    await fs.writeFile(path.join(workspace, 'mine.txt'), 'not the agent\'s');

    const second = page.locator('[data-testid="transcript"] .message[data-role="user"]').nth(1);
    await second.hover();
    await second.getByRole('button', { name: 'Restore files' }).click();
    // It asks first, in place; the confirming button has the focus.
    const asking = second.getByRole('group', { name: 'Confirm restore' });
    await asking.getByText('Put the files back as they were before this message?').waitFor();
    await asking.getByRole('button', { name: 'Restore', exact: true }).click();
    // The notice, or the problem line if the restore was refused: whichever comes says what happened.
    const said = page.locator('[data-testid="notice"], .chat__problem').first();
    await said.waitFor();
    assert.match(await said.innerText(), /^Files restored: 1 file put back, 1 file removed, 1 file brought back\./);
    assert.equal(await read('a.txt'), 'one\n');
    assert.equal(await read('keep.txt'), 'keep\n');
    assert.equal(await read('b.txt'), null);
    assert.equal(await read('mine.txt'), 'not the agent\'s', 'a file no run touched is left alone');
    check();
  });

  test('Regenerate can put the files back first', { timeout: 90_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    const { idle, workspace } = await runBoth(page);
    const read = (name) => fs.readFile(path.join(workspace, name), 'utf8').catch(() => null);
    assert.equal(await read('b.txt'), 'new\n');

    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();
    await answer.hover();
    await answer.getByRole('button', { name: 'Regenerate' }).click();
    await answer.getByRole('group', { name: 'Regenerate' }).getByRole('button', { name: 'Restore files first' }).click();
    await page.getByTestId('notice').getByText(/^Files restored: /).waitFor();
    // The scripted model answers the second question again from a conversation of one answer: it plays its second
    // turn, which changes no file, so the files stay as they were before the question.
    const last = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();
    await last.getByTestId('versions').getByText('2/2').waitFor({ timeout: 30_000 });
    await idle();
    assert.equal(await read('a.txt'), 'one\n');
    assert.equal(await read('keep.txt'), 'keep\n');
    assert.equal(await read('b.txt'), null);
    check();
  });

  test('Fork at a message opens a new session with its own files as they stood there', { timeout: 90_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    const { workspace } = await runBoth(page);
    const original = page.url();

    const second = page.locator('[data-testid="transcript"] .message[data-role="user"]').nth(1);
    await second.hover();
    await second.getByRole('button', { name: 'Fork to new session' }).click();
    await page.waitForURL((url) => url.href !== original && url.pathname.startsWith('/s/'));
    const notice = page.getByTestId('notice');
    await notice.getByText(/^Forked into a new session\./).waitFor();
    assert.match(await notice.innerText(), /own copy of the workspace, with 3 files put back .*in the message box/);
    const transcript = page.getByTestId('transcript');
    await transcript.getByText('Wrote the files.').waitFor();
    assert.equal(await transcript.getByText('Changed the files.').count(), 0, 'the fork holds what came before');
    const composer = page.getByRole('combobox', { name: 'Message' });
    assert.equal(await composer.inputValue(), 'Change the files', 'the message forked at waits in the composer');
    await page.locator('.sidebar__item--current').getByText('(fork)').waitFor();

    const forked = new URL(page.url()).pathname.split('/').pop();
    const read = (dir, name) => fs.readFile(path.join(dir, name), 'utf8').catch(() => null);
    const forkWorkspace = path.join(suite.server.dataDir, 'workspaces', forked);
    assert.equal(await read(forkWorkspace, 'a.txt'), 'one\n');
    assert.equal(await read(forkWorkspace, 'keep.txt'), 'keep\n');
    assert.equal(await read(forkWorkspace, 'b.txt'), null);
    assert.equal(await read(workspace, 'a.txt'), 'two\n', 'the first session keeps its files');
    assert.equal(await read(workspace, 'b.txt'), 'new\n');
    check();
  });
});
