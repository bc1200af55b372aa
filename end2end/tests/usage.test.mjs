// End-to-end check of token usage in Chromium against the release binary: a priced scripted model whose calls
// report tokens. Each answer shows its run's tokens and cost, the composer's meter shows how full the context is
// and turns amber past the compaction threshold, the sidebar shows the session's totals, and a reload keeps it all.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { makeTempDir, openChat, removeDir, sendPrompt, startServer } from './support.mjs';

// Prices per million tokens: input 3, output 15, cache reads 0.3. Window 10,000, compaction past 0.8 of it.
const SCRIPT = {
  delayMs: 0,
  turns: [
    { text: 'Looking.', toolCalls: [{ name: 'ls', arguments: {} }], usage: { input: 2000, output: 100 } },
    // Context after it: 500 + 100 + 2100 = 2,700 of 10,000.
    { text: 'First answer.', usage: { input: 500, output: 100, cacheRead: 2100 } },
    // Context after it: 9,100, past the 8,000 at which the next message compacts first.
    { text: 'Second answer.', usage: { input: 6000, output: 400, cacheRead: 2700 } },
  ],
};

const answers = '[data-testid="transcript"] .message[data-role="assistant"]';
const meter = '[data-testid="context-meter"]';

describe('chatwire usage and context meter', () => {
  let server;
  let dir;

  before(async () => {
    dir = await makeTempDir('chatwire-usage-');
    const script = path.join(dir, 'script.json');
    await fs.writeFile(script, JSON.stringify(SCRIPT));
    const config = path.join(dir, 'models.toml');
    await fs.writeFile(
      config,
      [
        '[[model]]',
        'provider = "scripted"',
        `script = ${JSON.stringify(script)}`,
        'context_window = 10000',
        '',
        '[model.price]',
        'input = 3.0',
        'output = 15.0',
        'cache_read = 0.3',
        '',
      ].join('\n'),
    );
    server = await startServer({ args: ['--config', config, '--approve', 'never'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await removeDir(dir);
  }, { timeout: 30_000 });

  test('answers show their usage, the meter fills and warns, the sidebar sums, a reload keeps them', {
    timeout: 120_000,
  }, async (t) => {
    const { page, check } = await openChat(t, server);
    assert.equal(await page.locator(meter).count(), 0, 'no meter before the first model call');

    await sendPrompt(page, 'Usage test');
    const first = page.locator(answers).first();
    await first.getByText('First answer.').waitFor({ timeout: 30_000 });
    const firstUsage = first.locator('[data-testid="usage"]');
    await firstUsage.getByText('2.5k in · 200 out · 2.1k cache read · 2 calls · $0.01').waitFor({ timeout: 10_000 });
    // (2000·3 + 100·15 + 500·3 + 100·15 + 2100·0.3) / 10⁶ dollars.
    assert.equal(
      await firstUsage.getAttribute('title'),
      '2 model calls: 2,500 input tokens, 200 output, 2,100 read from the cache, 0 written to it; cost $0.01',
    );
    await page.locator(meter).getByText('27% of 10k').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(meter).getAttribute('data-past-compaction'), 'false');
    assert.equal(
      await page.locator(meter).getAttribute('aria-label'),
      'Context: 2,700 of 10,000 tokens; the conversation is compacted past 8,000 tokens',
    );
    const bar = page.locator(`${meter} meter`);
    assert.deepEqual(
      await bar.evaluate((node) => [node.min, node.max, node.value, node.high]),
      [0, 10_000, 2_700, 8_000],
    );
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    await sendPrompt(page, 'And again');
    const second = page.locator(answers).nth(1);
    await second.getByText('Second answer.').waitFor({ timeout: 30_000 });
    await second.locator('[data-testid="usage"]').getByText('6.0k in · 400 out · 2.7k cache read · $0.02').waitFor();
    await page.locator(meter).getByText('91% of 10k').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(meter).getAttribute('data-past-compaction'), 'true');
    const [full, muted] = await page.locator(meter).evaluate((node) => [
      getComputedStyle(node).color,
      getComputedStyle(document.querySelector('.sidebar__meta')).color,
    ]);
    assert.notEqual(full, muted, 'past the threshold the meter is drawn in the warning colour');
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached', timeout: 30_000 });
    await page.locator(answers).nth(1).getByText('Second answer.').waitFor({ timeout: 30_000 });
    const shown = await page.locator(`${answers} [data-testid="usage"]`).allTextContents();
    assert.deepEqual(shown, [
      '2.5k in · 200 out · 2.1k cache read · 2 calls · $0.01',
      '6.0k in · 400 out · 2.7k cache read · $0.02',
    ]);
    await page.locator(meter).getByText('91% of 10k').waitFor({ timeout: 10_000 });
    // 4,800 tokens in the first run and 9,100 in the second; $0.01113 + $0.02481.
    await page.locator('.sidebar__item--current [data-testid="session-usage"]').getByText('14k tokens · $0.04').waitFor({
      timeout: 10_000,
    });

    // On a phone the meter joins the buttons on the line below the message box, which keeps the width.
    await page.setViewportSize({ width: 390, height: 800 });
    const box = await page.locator('[data-testid="composer"] textarea').boundingBox();
    assert.ok(box.width >= 300, `the message box is ${box.width} px wide at 390 px`);
    const meterBox = await page.locator(meter).boundingBox();
    assert.ok(meterBox.y >= box.y + box.height, 'the meter sits below the message box');
    check();
  });
});
