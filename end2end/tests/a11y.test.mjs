// Accessibility in Chromium against the release binary: axe-core (npm, `axeViolations` in support.mjs) over the
// empty state, a question card, the quick switcher, a finished demo run (in both themes) and its Changes view; any
// violation above minor fails the test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { axeViolations as violations, openChat, sendPrompt, serverForSuite } from './support.mjs';

describe('chatwire accessibility', () => {
  const suite = serverForSuite({ args: ['--approve', 'never'] });

  test('axe finds nothing above minor in the empty state, a card, the switcher and a finished run', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    assert.deepEqual(await violations(page), [], 'the empty state');

    await sendPrompt(page, 'Show me around');
    const question = page.locator('.question');
    await question.waitFor({ timeout: 60_000 });
    assert.deepEqual(await violations(page), [], 'a question card, with the rows before it');

    await page.keyboard.press('Control+k');
    await page.getByRole('dialog').waitFor({ timeout: 10_000 });
    assert.deepEqual(await violations(page), [], 'the quick switcher');
    await page.keyboard.press('Escape');

    await question.getByRole('button', { name: 'Yes, include it' }).click();
    await page.getByText('Run it yourself:').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    assert.deepEqual(await violations(page), [], 'a finished demo run');
    // The same page in the dark theme (what the theme toggle sets), where every colour is the other of its pair.
    await page.evaluate(() => { document.documentElement.dataset.theme = 'dark'; });
    assert.deepEqual(await violations(page), [], 'a finished demo run, dark theme');
    await page.evaluate(() => { document.documentElement.dataset.theme = 'light'; });

    // The demo writes and edits files: its answer says so, and its Changes view opens with the diff.
    const changes = page.getByTestId('changes').last();
    await changes.getByRole('button', { name: 'Changes' }).click();
    await changes.locator('.changes__file').first().waitFor({ timeout: 10_000 });
    assert.deepEqual(await violations(page), [], "a run's Changes view");
    check();
  });
});
