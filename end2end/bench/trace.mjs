// Reading a Chromium trace (`browser.startTracing`): the page renderer's main-thread events and its tasks.

/** A Chromium trace's events, and the complete (`X`) ones on the page renderer's main thread, by start time. */
export function readTrace(trace) {
  const events = JSON.parse(trace.toString('utf8')).traceEvents ?? [];
  const mainThreads = new Set(
    events
      .filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      .map((e) => `${e.pid}:${e.tid}`),
  );
  const onMain = events
    .filter((e) => e.ph === 'X' && mainThreads.has(`${e.pid}:${e.tid}`))
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  return { events, onMain };
}

export const isTask = (e) => e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask';
export const within = (windowStart, windowEnd) => (e) => e.ts >= windowStart && e.ts + e.dur <= windowEnd;

/**
 * The page's own tasks: without those that only carry a DevTools message, such as the bench's own `page.evaluate` or
 * a locator's polling (a `Receive mojo message` filling the task), which are the bench's work, not the page's.
 */
export function pageTasks(onMain) {
  const messages = onMain.filter((e) => e.name === 'Receive mojo message');
  let next = 0;
  return onMain.filter(isTask).filter((task) => {
    while (next < messages.length && messages[next].ts < task.ts) next++;
    const message = messages[next];
    const carriesOnlyAMessage = message && message.ts - task.ts < 100 && message.dur >= 0.9 * task.dur;
    return !carriesOnlyAMessage;
  });
}
