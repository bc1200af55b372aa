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
