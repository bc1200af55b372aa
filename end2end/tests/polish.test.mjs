// What a new user sees first, checked by element boxes and text at 1400 px and at 390 px (issue 20, item 6): the
// sidebar's meta line and title keep their words whole, the question card's label stands apart from its question,
// the composer's placeholder fits its box, and `/` offers the recent sessions to a returning user.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS_DIR, openChat, sendPrompt, startServer, waitForHydration } from './support.mjs';

const SCRIPT = {
  delayMs: 0,
  turns: [
    { text: 'First answer.' },
    {
      text: 'One question.',
      toolCalls: [{
        name: 'question',
        arguments: {
          question: 'Should the summary include the file listing?',
          options: [{ id: 'yes', label: 'Yes' }, { id: 'no', label: 'No' }],
        },
      }],
    },
    { text: 'Noted.' },
  ],
};

const WIDTHS = [1400, 390];

/** The boxes of each line an element's text takes: one entry per line box of its text. */
function lineCount(locator) {
  return locator.evaluate((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
    return tops.size;
  });
}

/** Opens the phone layout's sessions drawer and waits until it has slid in. */
async function openDrawer(page) {
  await page.getByRole('button', { name: 'Sessions' }).click();
  await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().left === 0);
}

/** Resolves once the drawer is out of sight. */
function drawerGone(page) {
  return page.waitForFunction(() => getComputedStyle(document.getElementById('sidebar')).visibility === 'hidden');
}

/** Closes it (Esc) and waits until it is gone. */
async function closeDrawer(page) {
  await page.keyboard.press('Escape');
  await drawerGone(page);
}

describe('chatwire first impressions', () => {
  let server;

  before(async () => {
    server = await startServer({ script: SCRIPT, args: ['--approve', 'never'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
  }, { timeout: 30_000 });

  test('sidebar, question card, composer and the start page hold together at 1400 px and 390 px', {
    timeout: 180_000,
  }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1400, height: 900 } });
    const transcript = page.locator('[data-testid="transcript"]');

    // A fresh install: the start page has no recent sessions to offer.
    await page.locator('.empty-state').waitFor();
    assert.equal(await page.locator('[data-testid="recent-sessions"]').count(), 0);

    await sendPrompt(page, 'one');
    await transcript.getByText('First answer.').waitFor({ timeout: 30_000 });
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });
    await sendPrompt(page, 'ask me');
    const card = page.locator('.question');
    await card.waitFor({ timeout: 30_000 });

    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      const at = `at ${width} px`;
      // On a phone the sidebar is a drawer (drawer.test.mjs), which slides out of sight as the page narrows.
      const phone = width < 720;
      if (phone) await drawerGone(page);
      await page.screenshot({ path: path.join(ARTIFACTS_DIR, `first-impressions-${width}.png`) });

      // The session's row: its short title is whole, and each piece of its meta line takes one line. On a phone the
      // drawer is opened for the row and closed again for the chat.
      if (phone) await openDrawer(page);
      const item = page.locator('.sidebar__item--current');
      const title = item.locator('.sidebar__title');
      assert.equal(await title.innerText(), 'one');
      const [scrollWidth, clientWidth] = await title.evaluate((node) => [node.scrollWidth, node.clientWidth]);
      assert.ok(scrollWidth <= clientWidth, `the title "one" is cut ${at} (${scrollWidth} > ${clientWidth} px)`);
      for (const piece of ['.badge', '.sidebar__time']) {
        const text = await item.locator(piece).innerText();
        assert.ok(text.length > 0, `${piece} has text ${at}`);
        assert.equal(await lineCount(item.locator(piece)), 1, `${piece} "${text}" takes one line ${at}`);
      }
      const badge = await item.locator('.badge').boundingBox();
      const time = await item.locator('.sidebar__time').boundingBox();
      assert.ok(time.height <= badge.height + 2, `the age is no taller than the badge ${at}`);
      if (phone) await closeDrawer(page);

      // The question card: the label on a line above the question, never run into it.
      const label = await card.locator('.question__label').boundingBox();
      const question = card.locator('.question__text');
      assert.equal(await question.innerText(), 'Should the summary include the file listing?');
      assert.ok(label.y + label.height <= (await question.boundingBox()).y, `the label is above the question ${at}`);

      // The composer: the message box keeps the width, and its placeholder fits inside it without scrolling.
      const input = page.locator('[data-testid="composer"] textarea');
      const box = await input.boundingBox();
      // The column is 760 px wide on a desktop and the screen less its margins on a phone: the box takes all of it.
      const column = width >= 1000 ? 760 : width - 32;
      assert.ok(box.width >= column - 2, `the message box is ${box.width} of ${column} px wide ${at}`);
      const fits = await input.evaluate((node) => {
        const placeholder = node.placeholder;
        node.value = placeholder;
        const fit = node.scrollHeight <= node.clientHeight && node.scrollWidth <= node.clientWidth;
        node.value = '';
        return fit;
      });
      assert.ok(fits, `the placeholder fits the message box ${at}`);
      const send = await page.locator('[data-testid="composer"] button[type="submit"]').boundingBox();
      assert.ok(send.x + send.width <= width, `Send is on screen ${at}`);
    }

    await card.getByRole('button', { name: 'No', exact: true }).click();
    await transcript.getByText('Noted.').waitFor({ timeout: 30_000 });
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    // A returning user opening `/` is offered the session they were in, and one click takes them back to it.
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(server.url, { waitUntil: 'domcontentloaded' });
      await waitForHydration(page);
      const recent = page.locator('[data-testid="recent-sessions"]');
      await recent.waitFor({ timeout: 10_000 });
      const link = recent.getByRole('link', { name: /^one/ });
      assert.equal(await link.locator('.empty-state__title').innerText(), 'one');
      assert.match(await link.locator('.empty-state__time').innerText(), /^(just now|\d+ min ago)$/);
      const linkBox = await link.boundingBox();
      assert.ok(linkBox.x >= 0 && linkBox.x + linkBox.width <= width, `the recent session is on screen at ${width} px`);
      const suggestions = await page.locator('.empty-state__suggestions').boundingBox();
      assert.ok(suggestions.y + suggestions.height <= linkBox.y, `the suggestions come first at ${width} px`);
      await link.click();
      await page.waitForURL(/\/s\//);
      await transcript.getByText('Noted.').waitFor({ timeout: 30_000 });
      assert.equal(await page.locator('[data-testid="recent-sessions"]').count(), 0);
    }
    check();
  });
});
