// End-to-end check of agents chosen per session in Chromium against the release binary: a server offering the
// built-in agent and pi (a fake pi, tests/support/fake-pi.mjs, replaying a recording of the real one). New chat
// offers both; the picked agent runs the chat, and the sidebar row and the header name it, after a reload too; New
// chat then preselects it. With one agent there is no picker and no agent named.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openApp, sendPrompt, startServer, waitForHydration, watchProblems } from './support.mjs';

const BUILTIN_ANSWER = 'The built-in agent answers.';

const FAKE_PI = fileURLToPath(new URL('../../tests/support/fake-pi.mjs', import.meta.url));
const RECORDING = fileURLToPath(new URL('../../tests/vectors/pi-rpc/basic_tools.jsonl', import.meta.url));

const picker = '[data-testid="agent-picker"]';
const sessionAgent = '[data-testid="session-agent"]';
const assistantMessages = '[data-testid="transcript"] .message[data-role="assistant"]';

/** The sidebar row of the session on screen. */
function currentRow(page) {
  return page.locator('.sidebar__item--current');
}

/** Waits until the run on screen has ended (Send is back) and an answer is shown. */
async function answered(page) {
  await page.locator(assistantMessages).first().waitFor({ timeout: 30_000 });
  await page.getByRole('button', { name: 'Send', exact: true }).waitFor({ timeout: 30_000 });
}

describe('agents with the built-in agent and pi offered', () => {
  let server;
  let browser;
  let watcher;

  before(async () => {
    for (const file of [FAKE_PI, RECORDING]) assert.ok(!file.includes(' '), `--pi-command splits on spaces: ${file}`);
    server = await startServer({
      script: { turns: [{ text: BUILTIN_ANSWER }] },
      args: ['--pi-command', `node ${FAKE_PI} ${RECORDING}`],
    });
    browser = await launchBrowser();
    watcher = watchProblems(browser.context);
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
  }, { timeout: 30_000 });

  test('the agent picked in New chat runs the chat, is named in its row and header, and stays', { timeout: 120_000 }, async (t) => {
    const page = await browser.context.newPage();
    t.after(() => page.close());
    await openApp(page, server);
    const select = page.locator(picker);
    await select.waitFor({ timeout: 10_000 });
    assert.deepEqual(await select.locator('option').allTextContents(), ['agent', 'pi']);
    assert.equal(await select.inputValue(), 'agent', "the server's default is preselected");

    // The built-in agent first, as preselected: its row names it.
    await sendPrompt(page, 'Who answers?');
    await answered(page);
    await page.locator(assistantMessages, { hasText: BUILTIN_ANSWER }).waitFor();
    assert.equal(await page.locator(sessionAgent).textContent(), 'agent');
    await currentRow(page).locator('[data-testid="session-row-agent"]', { hasText: 'agent' }).waitFor();

    // A new chat on pi.
    await page.getByTestId('new-chat').click();
    await select.waitFor({ timeout: 10_000 });
    await select.selectOption('pi');
    const sent = [];
    page.on('request', (request) => {
      const pathname = new URL(request.url()).pathname;
      if (request.method() === 'POST' && pathname === '/api/sessions') sent.push(request.postDataJSON());
    });
    await sendPrompt(page, 'Run the tools, please.');
    await page.waitForURL(/\/s\//);
    await answered(page);
    assert.deepEqual(sent, [{ agent: 'pi' }], 'the new session is made on the picked agent');
    assert.equal(await page.locator(assistantMessages, { hasText: BUILTIN_ANSWER }).count(), 0, 'pi answered');
    assert.equal(await page.locator(sessionAgent).textContent(), 'pi');
    await currentRow(page).locator('[data-testid="session-row-agent"]', { hasText: 'pi' }).waitFor();
    assert.ok(await page.locator(picker).isHidden(), 'a session cannot change its agent');

    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.locator(sessionAgent, { hasText: 'pi' }).waitFor({ timeout: 10_000 });
    assert.equal(await currentRow(page).locator('[data-testid="session-row-agent"]').textContent(), 'pi');
    const rows = await page.locator('[data-testid="session-row-agent"]').allTextContents();
    assert.deepEqual(rows.sort(), ['agent', 'pi'], 'each row names its own agent');

    await page.getByTestId('new-chat').click();
    await select.waitFor({ timeout: 10_000 });
    assert.equal(await select.inputValue(), 'pi', 'New chat preselects the agent used last');
    watcher.check();
  });
});

describe('agents with one agent offered', () => {
  let server;
  let browser;
  let watcher;

  before(async () => {
    server = await startServer({ script: { turns: [{ text: BUILTIN_ANSWER }] } });
    browser = await launchBrowser();
    watcher = watchProblems(browser.context);
  }, { timeout: 90_000 });

  after(async () => {
    await browser?.close();
    await server?.stop();
  }, { timeout: 30_000 });

  test('there is nothing to pick, and no agent is named', { timeout: 60_000 }, async (t) => {
    const page = await browser.context.newPage();
    t.after(() => page.close());
    const agentsAnswered = page.waitForResponse((response) => new URL(response.url()).pathname === '/api/agents');
    await openApp(page, server);
    await agentsAnswered;
    await sendPrompt(page, 'Who answers?');
    await answered(page);
    await page.locator('.sidebar__item--current').waitFor();
    assert.ok(await page.locator('[data-testid="agent-bar"]').isHidden());
    assert.equal(await page.locator('[data-testid="session-row-agent"]:visible').count(), 0);
    watcher.check();
  });
});
