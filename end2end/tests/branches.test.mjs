// End-to-end check of edit, regenerate and versions in Chromium against the release binary: editing the first
// message answers it afresh and keeps the old branch, the ‹ › arrows move between the versions (and survive a
// reload), and Regenerate puts a second answer beside the first. The scripted model answers with how many answers
// it was shown, which tells what conversation each run was given.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, sendPrompt, serverForSuite } from './support.mjs';

const SCRIPT = {
  delayMs: 0,
  turns: [{ text: 'Seen 0 answers.' }, { text: 'Seen 1 answer.' }, { text: 'Seen 2 answers.' }],
};

describe('chatwire branches', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('edit the first message, move between versions, regenerate', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    const messages = page.locator('[data-testid="transcript"] .message');
    const texts = async () => (await messages.allInnerTexts()).map((text) => text.split('\n')[0].trim());
    const idle = () => page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    await sendPrompt(page, 'First question');
    await page.getByText('Seen 0 answers.').waitFor({ timeout: 30_000 });
    await idle();
    await sendPrompt(page, 'Second question');
    await page.getByText('Seen 1 answer.').waitFor({ timeout: 30_000 });
    await idle();

    // Edit the first message: answered from an empty conversation, the rest kept as version 1.
    const first = messages.first();
    await first.hover();
    await first.getByRole('button', { name: 'Edit' }).click();
    const editor = first.getByRole('textbox', { name: 'Edit message' });
    assert.equal(await editor.inputValue(), 'First question');
    await editor.fill('First question, edited');
    await first.getByRole('button', { name: 'Save and run' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="transcript"] .message').length === 2);
    await page.getByText('Seen 0 answers.').waitFor({ timeout: 30_000 });
    await idle();
    const versions = messages.first().getByTestId('versions');
    await versions.getByText('2/2').waitFor();
    assert.ok((await texts())[0].startsWith('First question, edited'));

    // Back to version 1: the whole old branch comes back.
    await versions.getByRole('button', { name: 'Previous version' }).click();
    await messages.first().getByTestId('versions').getByText('1/2').waitFor();
    await page.getByText('Seen 1 answer.').waitFor();
    assert.equal(await messages.count(), 4);

    // A reload shows the version last chosen.
    await page.reload();
    await page.locator('.app[data-hydrated="true"]').waitFor();
    await page.getByText('Seen 1 answer.').waitFor({ timeout: 30_000 });
    await messages.first().getByTestId('versions').getByText('1/2').waitFor();

    // Regenerate the last answer: a second answer beside it, made from the same conversation.
    const last = messages.last();
    await last.hover();
    await last.getByRole('button', { name: 'Regenerate' }).click();
    // It asks whether to put the files back first; this answer again keeps them as they are.
    await last.getByRole('group', { name: 'Regenerate' }).getByRole('button', { name: 'Regenerate' }).click();
    await messages.last().getByTestId('versions').getByText('2/2').waitFor({ timeout: 30_000 });
    await idle();
    assert.equal(await messages.count(), 4, 'the question is not repeated');
    assert.match(await messages.last().innerText(), /Seen 1 answer\./);
    await messages.last().getByRole('button', { name: 'Previous version' }).click();
    await messages.last().getByTestId('versions').getByText('1/2').waitFor();
    check();
  });
});
