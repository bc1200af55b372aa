// End-to-end check of a run's changes in Chromium against the release binary: runs that change files by shell
// commands show "N files changed, +a −d" under their answer, the Changes button (worked from the keyboard) opens the
// diff drawn with + and − line classes, a run that changes nothing shows no row, and a reload keeps them all. The
// Changes view comes with the tool renderers' WASM chunk: opened before that chunk is there, it says it is loading.
// Its request comes with the rarer requests' chunk: when that cannot be fetched, the view and the problem line say
// so, and the next opening tries again.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  launchBrowser, openApp, openChat, sendPrompt, serverForSuite, waitForHydration, watchProblems,
} from './support.mjs';

const SCRIPT = {
  delayMs: 0,
  turns: [
    { toolCalls: [{ name: 'bash', arguments: { command: "printf 'one\\ntwo\\nthree\\n' > edit.txt" } }] },
    { text: 'Wrote one file.' },
    {
      toolCalls: [
        { name: 'bash', arguments: { command: "printf 'new\\n' > new.txt && printf 'one\\nTWO\\nthree\\n' > edit.txt" } },
      ],
    },
    { text: 'Changed two files.' },
    { text: 'Nothing to change.' },
  ],
};

describe('chatwire run changes', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('a run that changed files shows its counts and opens its diff', { timeout: 90_000 }, async (t) => {
    const { page, check } = await openChat(t, suite.server);
    const idle = () => page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });
    for (const [prompt, answer] of [
      ['Write a file', 'Wrote one file.'],
      ['Change two files', 'Changed two files.'],
      ['Anything else?', 'Nothing to change.'],
    ]) {
      await sendPrompt(page, prompt);
      await page.getByText(answer).waitFor({ timeout: 30_000 });
      await idle();
    }

    const answers = page.locator('[data-testid="transcript"] .message[data-role="assistant"]');
    const rows = async () => {
      const said = [];
      for (let i = 0; i < (await answers.count()); i += 1) {
        const row = answers.nth(i).getByTestId('changes');
        said.push((await row.count()) ? await row.locator('.changes__summary').innerText() : null);
      }
      return said;
    };
    assert.deepEqual(await rows(), ['1 file changed, +3 −0', '2 files changed, +2 −1', null]);

    // Opened from the keyboard: the button takes the focus and Enter opens the view.
    const second = answers.nth(1).getByTestId('changes');
    const toggle = second.getByRole('button', { name: 'Changes' });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await toggle.focus();
    await page.keyboard.press('Enter');
    const view = second.getByRole('region', { name: 'Changes of this run' });
    await view.locator('.changes__entry').first().waitFor({ timeout: 15_000 });
    assert.equal(await second.getByRole('button', { name: 'Hide changes' }).getAttribute('aria-expanded'), 'true');

    const entries = await view.locator('.changes__entry').allInnerTexts();
    assert.equal(entries.length, 2, entries.join(' | '));
    assert.match(entries.find((e) => e.includes('edit.txt')) ?? '', /modified\s+edit\.txt\s+\+1 −1/);
    assert.match(entries.find((e) => e.includes('new.txt')) ?? '', /added\s+new\.txt\s+\+1 −0/);

    const file = (name) => view.getByRole('region', { name });
    const text = (locator) => locator.locator('.diff-line__text').allInnerTexts();
    assert.deepEqual(await text(file('edit.txt').locator('.diff-line--removed')), ['two']);
    assert.deepEqual(await text(file('edit.txt').locator('.diff-line--added')), ['TWO']);
    assert.deepEqual(await text(file('edit.txt').locator('.diff-line--context')), ['one', 'three']);
    assert.deepEqual(await text(file('new.txt').locator('.diff-line--added')), ['new']);
    assert.equal(await file('new.txt').locator('.diff-line--removed').count(), 0);
    const signs = await file('edit.txt').locator('.diff-line--added .diff-line__sign, .diff-line--removed .diff-line__sign').allInnerTexts();
    assert.deepEqual(signs, ['−', '+']);
    // Coloured as in the Edit rows: added and removed lines each have a background of their own, context none.
    const background = (locator) => locator.first().evaluate((line) => getComputedStyle(line).backgroundColor);
    const [added, removed, context] = await Promise.all(
      ['added', 'removed', 'context'].map((kind) => background(file('edit.txt').locator(`.diff-line--${kind}`))),
    );
    assert.equal(context, 'rgba(0, 0, 0, 0)');
    assert.notEqual(added, context);
    assert.notEqual(removed, context);
    assert.notEqual(added, removed);

    // Enter again folds it away.
    await page.keyboard.press('Enter');
    await view.waitFor({ state: 'detached' });

    // A reload rebuilds the rows from the session.
    await page.reload();
    await waitForHydration(page);
    await page.getByText('Nothing to change.').waitFor({ timeout: 30_000 });
    assert.deepEqual(await rows(), ['1 file changed, +3 −0', '2 files changed, +2 −1', null]);
    await answers.nth(0).getByTestId('changes').getByRole('button', { name: 'Changes' }).click();
    const first = answers.nth(0).getByRole('region', { name: 'Changes of this run' });
    await first.locator('.changes__entry').first().waitFor({ timeout: 15_000 });
    assert.deepEqual(await text(first.getByRole('region', { name: 'edit.txt' }).locator('.diff-line--added')), ['one', 'two', 'three']);
    check();
  });

  test('the Changes view waits for the tool renderers\' chunk and is drawn when a retry gets it', { timeout: 60_000 }, async (t) => {
    // The service worker would fetch the chunk itself, out of `page.route`'s reach.
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    const { problems } = watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    await page.route(/\/pkg\/split_tool_renderers\.[^/]+\.wasm$/, (route) => (offline ? route.abort() : route.continue()));
    await openApp(page, suite.server);
    await page.locator('.sidebar__item .sidebar__link').first().click();
    await page.getByText('Nothing to change.').waitFor({ timeout: 30_000 });
    const first = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').first();
    assert.ok(await first.locator('.tool-pending').count(), 'the tool rows wait for the chunk');
    const diffFetched = page.waitForResponse((response) => /\/api\/sessions\/[^/]+\/changes\//.test(response.url()));
    await first.getByTestId('changes').getByRole('button', { name: 'Changes' }).click();
    assert.equal((await diffFetched).status(), 200);
    const view = first.getByRole('region', { name: 'Changes of this run' });
    // The diff is here (the view says it has taken it in); the code that draws it is not.
    await view.and(page.locator('[data-diff="loaded"]')).waitFor({ timeout: 10_000 });
    assert.equal(await view.getByText('Loading the changes…').count(), 1);
    assert.equal(await view.locator('.changes__entry').count(), 0);

    offline = false;
    await view.locator('.changes__entry').first().waitFor({ timeout: 20_000 });
    assert.equal(await view.getByText('Loading the changes…').count(), 0);
    assert.deepEqual(await view.getByRole('region', { name: 'edit.txt' }).locator('.diff-line--added .diff-line__text').allInnerTexts(), [
      'one', 'two', 'three',
    ]);
    assert.ok(problems.some((p) => /the tool renderers did not load/.test(p)), problems.join('\n'));
  });

  test('the Changes request says so when its chunk cannot be fetched, and the next opening tries again', { timeout: 60_000 }, async (t) => {
    const browser = await launchBrowser({ serviceWorkers: 'block' });
    t.after(() => browser.close());
    watchProblems(browser.context, { requests: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    let offline = true;
    await page.route(/\/pkg\/split_rare_requests\.[^/]+\.wasm$/, (route) => (offline ? route.abort() : route.continue()));
    await openApp(page, suite.server);
    await page.locator('.sidebar__item .sidebar__link').first().click();
    await page.getByText('Nothing to change.').waitFor({ timeout: 30_000 });
    const first = page.locator('[data-testid="transcript"] .message[data-role="assistant"]').first();
    const toggle = first.getByTestId('changes').locator('.changes__toggle');
    await toggle.click();
    const view = first.getByRole('region', { name: 'Changes of this run' });
    await view.getByText('The changes could not be loaded: part of the page could not be loaded').waitFor({ timeout: 20_000 });
    await page.getByRole('alert').filter({ hasText: 'Part of the page could not be loaded; try again.' }).waitFor();

    offline = false;
    await toggle.click();
    await toggle.click();
    await view.locator('.changes__entry').first().waitFor({ timeout: 20_000 });
    assert.deepEqual(await view.getByRole('region', { name: 'edit.txt' }).locator('.diff-line--added .diff-line__text').allInnerTexts(), [
      'one', 'two', 'three',
    ]);
    assert.equal(await page.getByText('Part of the page could not be loaded; try again.').count(), 0, 'the problem line is cleared');
  });
});
