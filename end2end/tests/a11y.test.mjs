// Accessibility in Chromium against the release binary: axe-core (npm) over the empty state, a question card, the
// quick switcher, a finished demo run (in both themes) and its Changes view; any violation above minor fails the
// test. axe
// is injected with `page.evaluate`, which the page's CSP (no inline scripts) does not govern.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import { openChat, sendPrompt, serverForSuite } from './support.mjs';

const AXE = await fs.readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function violations(page) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => v.impact !== 'minor')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
}

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
