// The phone layout (issue 40, item 6), checked by element boxes in Chromium: at 390 px the sessions sidebar is a
// drawer off the screen's left edge and the chat takes the whole width; the menu button of the bar above the chat
// slides it in, and choosing a session, New chat, the scrim and Esc put it away again, with the focus going into
// the drawer and back to the button. At 1280 px the sidebar stands beside the chat and there is no menu button.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS_DIR, axeViolations, openChat, seedSession, serverForSuite } from './support.mjs';

const SCRIPT = { delayMs: 0, turns: [{ text: 'Alpha answer.' }, { text: 'Beta answer.' }] };
const PHONE = { width: 390, height: 844 };

/** The element's border box as the page lays it out, transforms included. */
function box(locator) {
  return locator.evaluate((node) => {
    const { left, right, width } = node.getBoundingClientRect();
    return { left, right, width, visibility: getComputedStyle(node).visibility };
  });
}

/** Resolves once the drawer has slid all the way in (`open`) or out: its box is where it ends, not on its way. */
async function drawerSettles(page, open) {
  await page.waitForFunction(
    (open) => {
      const drawer = document.getElementById('sidebar');
      const { left, right } = drawer.getBoundingClientRect();
      return open ? left === 0 : right <= 0 && getComputedStyle(drawer).visibility === 'hidden';
    },
    open,
    { timeout: 5_000 },
  );
}

/** The data-testid, or else the tag and class, of the element that has the focus. */
function focused(page) {
  return page.evaluate(() => {
    const element = document.activeElement;
    return {
      inDrawer: element?.closest('#sidebar') !== null,
      testid: element?.dataset?.testid ?? `${element?.tagName} ${element?.className}`,
    };
  });
}

describe('the sessions drawer on a phone', () => {
  const suite = serverForSuite({ script: SCRIPT, args: ['--approve', 'never'] });

  test('off-canvas at 390 px, opened by the menu button, closed by a choice, the scrim and Esc; beside the chat at 1280 px', {
    timeout: 180_000,
  }, async (t) => {
    const alpha = await seedSession(suite.server, 'Alpha', ['first']);
    await seedSession(suite.server, 'Beta', ['second']);
    const { page, check } = await openChat(t, suite.server, { viewport: PHONE });
    const drawer = page.locator('#sidebar');
    const menu = page.getByRole('button', { name: 'Sessions' });
    const transcript = page.locator('[data-testid="transcript"]');
    const composer = page.locator('[data-testid="composer"]');
    await drawer.locator('.sidebar__link', { hasText: 'Beta' }).waitFor({ state: 'attached', timeout: 10_000 });

    // Closed: the drawer is off the left edge and hidden (Tab skips it); the transcript and the composer take the
    // whole width.
    let shown = await box(drawer);
    assert.ok(shown.right <= 0, `the closed drawer ends at ${shown.right} px, off-screen`);
    assert.equal(shown.visibility, 'hidden', 'the closed drawer is hidden');
    for (const [name, locator] of [['transcript', transcript], ['composer', composer]]) {
      const { left, width } = await box(locator);
      assert.ok(left <= 1 && width >= PHONE.width - 1, `the ${name} spans ${left}+${width} of ${PHONE.width} px`);
    }
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.equal(await menu.getAttribute('aria-controls'), 'sidebar');
    const menuBox = await menu.boundingBox();
    assert.ok(menuBox.width >= 40 && menuBox.height >= 40, `the menu button is a ${menuBox.width}×${menuBox.height} px target`);
    assert.equal(await page.locator('.chat-bar__title').innerText(), 'New chat');
    assert.deepEqual(await axeViolations(page), [], 'the phone layout, drawer closed');

    // Open: on screen from the left edge, at most 85 % of the width, the focus in it, the chat behind a scrim.
    await menu.click();
    await drawerSettles(page, true);
    shown = await box(drawer);
    assert.equal(shown.left, 0, 'the open drawer starts at the left edge');
    assert.ok(shown.width <= PHONE.width * 0.85, `the open drawer is ${shown.width} of ${PHONE.width} px wide`);
    assert.equal(shown.visibility, 'visible');
    assert.equal(await menu.getAttribute('aria-expanded'), 'true');
    assert.deepEqual(await focused(page), { inDrawer: true, testid: 'new-chat' }, 'the focus went into the drawer');
    assert.ok(await page.locator('.scrim').isVisible(), 'a scrim covers the chat');
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'drawer-open-390.png') });
    assert.deepEqual(await axeViolations(page), [], 'the phone layout, drawer open');

    // Esc closes it and gives the focus back to the menu button.
    await page.keyboard.press('Escape');
    await drawerSettles(page, false);
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.deepEqual(await focused(page), { inDrawer: false, testid: 'menu' }, 'the focus is back on the menu button');

    // A tap on the scrim beside the drawer closes it.
    await menu.click();
    await drawerSettles(page, true);
    await page.mouse.click(PHONE.width - 10, PHONE.height / 2);
    await drawerSettles(page, false);

    // Choosing a session closes it and opens that session.
    await menu.click();
    await drawerSettles(page, true);
    await drawer.locator('.sidebar__link', { hasText: 'Alpha' }).click();
    await drawerSettles(page, false);
    await page.waitForURL(`**/s/${alpha}`);
    await transcript.getByText('Alpha answer.').waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('.chat-bar__title').innerText(), 'Alpha');
    assert.deepEqual(await focused(page), { inDrawer: false, testid: 'menu' }, 'the focus is back on the menu button');

    // So does New chat, which goes back to a new chat.
    await menu.click();
    await drawerSettles(page, true);
    await drawer.getByTestId('new-chat').click();
    await drawerSettles(page, false);
    await page.waitForURL((url) => url.pathname === '/');
    await page.locator('.empty-state').waitFor({ timeout: 10_000 });

    // At 1280 px the sidebar stands beside the chat, and there is neither a menu button nor a scrim.
    await page.setViewportSize({ width: 1280, height: 800 });
    shown = await box(drawer);
    assert.equal(shown.left, 0, 'the sidebar starts at the left edge at 1280 px');
    assert.equal(shown.visibility, 'visible', 'the sidebar shows at 1280 px');
    const chat = await box(transcript);
    assert.ok(chat.left >= shown.right - 1, `the transcript (from ${chat.left} px) is beside the sidebar (to ${shown.right} px)`);
    assert.ok(!(await menu.isVisible()), 'no menu button at 1280 px');
    assert.ok(!(await page.locator('.chat-bar').isVisible()), 'no bar above the chat at 1280 px');
    check();
  });
});
