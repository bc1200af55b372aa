// End-to-end check of MCP tools: the release binary with a config file naming a real MCP server (the test server in
// tests/support/mcp-server.mjs, over stdio) and a script that calls two of its tools. The rows show the server and tool
// name, the arguments and the structured result as JSON trees, and the server's error; a screenshot of the row lands
// in end2end/artifacts/.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  mcpTestServerConfig,
  openChat,
  sendPrompt,
  startServer,
  waitForHydration,
  writeScript,
} from './support.mjs';

const SCRIPT = {
  chunkChars: 40,
  delayMs: 5,
  turns: [
    {
      text: 'Asking the weather server.',
      toolCalls: [
        { name: 'mcp__weather__lookup', arguments: { city: 'Lisbon', units: 'C' } },
        { name: 'mcp__weather__fail', arguments: { why: 'the sky is not there' } },
      ],
    },
    { text: 'It is clear in Lisbon.' },
  ],
};

describe('MCP tools', () => {
  let server;
  let script;
  let config;

  before(async () => {
    script = await writeScript(SCRIPT);
    config = path.join(path.dirname(script.file), 'chatwire.toml');
    const toml = [
      '[[model]]',
      'provider = "scripted"',
      `script = ${JSON.stringify(script.file)}`,
      '',
      mcpTestServerConfig('weather'),
    ].join('\n');
    await fs.writeFile(config, toml);
    server = await startServer({ args: ['--config', config, '--approve', 'never'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await script?.remove();
  }, { timeout: 30_000 });

  test('a call shows server, tool, arguments and result; an error result shows the error', { timeout: 120_000 }, async (t) => {
    assert.match(server.output(), /MCP server started/, 'the server log says the MCP server started');
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 800 } });
    await sendPrompt(page, 'What is the weather in Lisbon?');

    const answer = page.locator('.message[data-role="assistant"]').first();
    await answer.getByText('It is clear in Lisbon.').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });

    const lookup = answer.locator('.tool[data-tool="mcp__weather__lookup"]');
    assert.equal(await lookup.getAttribute('data-status'), 'done');
    assert.equal(await lookup.locator('.tool__name').textContent(), 'lookup');
    assert.equal(await lookup.locator('.tool__server').textContent(), 'mcp · weather');
    const [args, result] = await lookup.locator('.tool-generic__section').all();
    assert.equal(await args.locator('.tool-generic__label').textContent(), 'Arguments');
    assert.deepEqual(await args.locator('.json-tree__key').allTextContents(), ['city', 'units']);
    assert.deepEqual(await args.locator('.json-tree__string').allTextContents(), ['Lisbon', 'C']);
    assert.equal(await result.locator('.tool-generic__label').textContent(), 'Result');
    // The structured result as a tree (the server's structuredContent, nested object included), without the text
    // that only repeats it as JSON.
    const keys = await result.locator('.json-tree__key').allTextContents();
    for (const key of ['structuredContent', 'city', 'temperature', 'value', 'unit', 'sky']) {
      assert.ok(keys.includes(key), `the result tree has no ${key}: ${keys}`);
    }
    assert.ok((await result.locator('.json-tree__string').allTextContents()).includes('clear'));
    assert.deepEqual(await result.locator('.json-tree__number').allTextContents(), ['21.5']);
    assert.equal(await result.locator('.tool-output').count(), 0, 'the text that repeats structuredContent is shown once, as the tree');
    await lookup.screenshot({ path: path.join(ARTIFACTS_DIR, 'mcp-row.png') });

    const failed = answer.locator('.tool[data-tool="mcp__weather__fail"]');
    assert.equal(await failed.getAttribute('data-status'), 'error');
    assert.equal(await failed.locator('.tool__server').textContent(), 'mcp · weather');
    assert.equal(await failed.locator('.tool__error').textContent(), 'lookup failed: the sky is not there');
    assert.deepEqual(await failed.locator('.json-tree__string').allTextContents(), ['the sky is not there']);

    // The transcript comes back the same after a reload (from the server's log).
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    const reloaded = page.locator('.tool[data-tool="mcp__weather__lookup"]');
    await reloaded.waitFor({ timeout: 20_000 });
    assert.equal(await reloaded.getAttribute('data-status'), 'done');
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'mcp-full.png'), fullPage: true });
    check();
  });
});
