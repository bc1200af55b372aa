// End-to-end check of Copy and export in Chromium against the release binary: a message's Copy button puts the
// message on the clipboard as Markdown (read back with the clipboard permissions granted), and the sidebar's MD and
// JSON links download the session named after its title.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, sendPrompt, serverForSuite } from './support.mjs';

const SCRIPT = {
  delayMs: 0,
  turns: [
    {
      text: 'Listing the files.',
      toolCalls: [{ name: 'bash', arguments: { command: 'echo hello-from-bash' } }],
    },
    { text: 'The only file says **hello**.' },
  ],
};

describe('chatwire copy and export', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('Copy gives a message as Markdown; MD and JSON download the session', { timeout: 90_000 }, async (t) => {
    const { context, page, check } = await openChat(t, suite.server);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: suite.server.origin });
    await sendPrompt(page, 'Export test run');
    const answer = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').last();
    await answer.getByText('The only file says').waitFor({ timeout: 30_000 });
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    await answer.hover();
    await answer.getByRole('button', { name: 'Copy message as Markdown' }).click();
    await answer.getByRole('button', { name: 'Copy message as Markdown' }).getByText('Copied').waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(
      copied,
      'Listing the files.\n\n**Bash**\n```sh\necho hello-from-bash\n```\n```text\nhello-from-bash\n```\n\nThe only file says **hello**.\n',
    );

    const item = page.locator('.sidebar__item--current');
    const [markdown] = await Promise.all([
      page.waitForEvent('download'),
      item.getByRole('link', { name: /as Markdown$/ }).click(),
    ]);
    assert.equal(markdown.suggestedFilename(), 'export-test-run.md');
    const markdownText = await streamText(await markdown.createReadStream());
    assert.match(markdownText, /^# Export test run\n\n## You\n\nExport test run\n\n## Assistant\n\nListing the files\./);

    const [json] = await Promise.all([
      page.waitForEvent('download'),
      item.getByRole('link', { name: /as JSON$/ }).click(),
    ]);
    assert.equal(json.suggestedFilename(), 'export-test-run.json');
    const detail = JSON.parse(await streamText(await json.createReadStream()));
    assert.equal(detail.session.title, 'Export test run');
    assert.deepEqual(detail.messages.map((m) => m.role), ['user', 'assistant']);
    check();
  });
});

async function streamText(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
