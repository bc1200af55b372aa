// A stand-in for `pi --mode rpc` that replays a recording of pi 0.73.1 (tests/vectors/pi-rpc/<name>.jsonl) in
// answer to chatwire's commands: usage `node fake-pi.mjs <name>.jsonl --mode rpc`.
//
// The recording is printed line by line. It stops at a "gate" until chatwire sends the command that made pi go on:
// the answer to a `prompt`, `steer` or `follow_up` (a prompt with `streamingBehavior` is a steer or follow-up to
// chatwire, which queues such messages itself), and for an `abort` the first line that shows the agent unwinding
// (chatwire's Stop always sends `abort`; pi's abort also cancels a waiting retry, so an `abort_retry` gate takes it).
// pi keeps steering and follow-ups in two queues, so only the order within each is pi's business: a `steer` that
// comes while a `follow_up` gate waits (or the other way round) is held for the next gate of its own kind.
// Commands that chatwire never sends in that state (idle aborts, `bash`, `compact`, queries) are not gates: their
// answers go out with their recorded ids, which chatwire does not know and ignores. While waiting at a gate, and
// after the last line, `get_state` is answered at once from the latest recorded state.
import { readFileSync } from 'node:fs';

const recordingPath = process.argv[2];
const lines = readFileSync(recordingPath, 'utf8').split('\n').filter((line) => line !== '');
const events = lines.map((line) => JSON.parse(line));
const commands = new Map();
for (const line of readFileSync(recordingPath.replace(/\.jsonl$/, '.commands.jsonl'), 'utf8').split('\n')) {
  try {
    const command = JSON.parse(line);
    if (command.id) commands.set(command.id, command);
  } catch {
    // The recording also sent pi a line that is not JSON, to see its answer.
  }
}

/** gates[i]: the kind of command line i waits for. */
const gates = new Map();
/** The recorded id of an abort whose answer must carry the id chatwire used. */
const abortGateOf = new Map();
let busy = false;
let lastGate = -1;
for (const [i, event] of events.entries()) {
  if (event.type === 'agent_start') busy = true;
  if (event.type === 'agent_end') busy = false;
  if (event.type !== 'response' || !commands.has(event.id)) continue;
  const command = commands.get(event.id);
  let gate = null;
  if (command.type === 'prompt' && event.success) {
    gate = { at: i, kind: { steer: 'steer', followUp: 'follow_up' }[command.streamingBehavior] ?? 'prompt' };
  } else if ((command.type === 'steer' || command.type === 'follow_up') && busy) {
    gate = { at: i, kind: command.type };
  } else if (command.type === 'abort' || command.type === 'abort_retry') {
    const at = unwindingStart(lastGate + 1, i, command.type);
    if (at !== null) gate = { at, kind: 'abort' };
  }
  if (gate) {
    gates.set(gate.at, gate.kind);
    if (gate.kind === 'abort') abortGateOf.set(event.id, gate.at);
    lastGate = gate.at;
  }
}

/** Where, in lines [from, to), pi began to unwind after the abort: null when it was idle. */
function unwindingStart(from, to, type) {
  for (let j = from; j < to; j++) {
    const event = events[j];
    if (type === 'abort_retry' && event.type === 'auto_retry_end' && !event.success) return j;
    const stopped = event.message?.role === 'assistant' && event.message?.stopReason === 'aborted';
    if (type === 'abort' && (event.type === 'message_start' || event.type === 'message_end') && stopped) {
      const unwinding = ['turn_start', 'turn_end', 'message_start', 'message_end', 'tool_execution_end'];
      while (j > from && unwinding.includes(events[j - 1].type) && events[j - 1].message?.role !== 'assistant') j--;
      return j;
    }
  }
  return null;
}

const recordedState = (event) => event.type === 'response' && event.command === 'get_state' && event.success;
const firstState = events.find(recordedState)?.data;
let state = {
  sessionFile: firstState?.sessionFile ?? `/fake-pi/${recordingPath.split('/').pop()}`,
  sessionId: firstState?.sessionId ?? 'fake-pi-session',
};
const stdinLines = (async function* () {
  let buffer = '';
  for await (const chunk of process.stdin) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf('\n')) !== -1) {
      yield buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
    }
  }
})();

function print(value) {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
}

/** Queued messages that came before their gate, each kind in the order chatwire sent them. */
const held = { steer: [], follow_up: [] };

/** Reads commands until one of `kind` comes; answers `get_state` and stray aborts meanwhile. null at the end of stdin. */
async function waitFor(kind) {
  if (held[kind]?.length) return held[kind].shift();
  for (;;) {
    const { value: line, done } = await stdinLines.next();
    if (done) return null;
    const command = JSON.parse(line);
    if (command.type === kind || (kind === 'abort' && command.type === 'abort_retry')) return command;
    if (kind in held && command.type in held) {
      held[command.type].push(command);
    } else if (command.type === 'get_state') {
      print({ id: command.id, type: 'response', command: 'get_state', success: true, data: { ...state, isStreaming: false } });
    } else if (command.type === 'abort' || command.type === 'extension_ui_response') {
      if (command.id) print({ id: command.id, type: 'response', command: command.type, success: true });
    } else {
      process.stderr.write(`fake pi: got ${command.type} while the recording waits for ${kind}\n`);
      print({ id: command.id, type: 'response', command: command.type, success: false, error: `unexpected ${command.type}` });
    }
  }
}

const abortIds = new Map();
for (const [i, event] of events.entries()) {
  if (gates.has(i)) {
    const command = await waitFor(gates.get(i));
    if (command === null) process.exit(0);
    if (gates.get(i) === 'abort') {
      for (const [recorded, at] of abortGateOf) if (at === i) abortIds.set(recorded, command.id);
    } else {
      print({ ...event, id: command.id });
      continue;
    }
  }
  if (event.type === 'response' && abortIds.has(event.id)) {
    print({ ...event, id: abortIds.get(event.id) });
    continue;
  }
  if (recordedState(event)) {
    state = { sessionFile: event.data.sessionFile, sessionId: event.data.sessionId };
  }
  print(lines[i]);
}
for (const command of [...held.steer, ...held.follow_up]) {
  process.stderr.write(`fake pi: the recording has no gate left for ${command.type}\n`);
  print({ id: command.id, type: 'response', command: command.type, success: false, error: `unexpected ${command.type}` });
}
await waitFor('nothing more: the recording has ended');
