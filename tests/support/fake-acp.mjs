// A small agent that speaks the Agent Client Protocol on stdin/stdout, for chatwire's ACP runtime tests:
// `node fake-acp.mjs <behaviour>`. It answers `initialize`, `session/new` and `session/load`, and a prompt with a
// short turn chosen by the prompt's words (see `prompt` below). `<behaviour>` makes the first prompt in a workspace
// misbehave (`exit`, `garbage`, `huge-line`, `flood`) or the start hang (`silent-init`); later prompts work, so a test
// can check that the session's next run gets a fresh, working process. Like opencode it keeps each session's history
// in the workspace, lists its sessions (`session/list`) and replays one on `session/load`; `no-list` offers no listing.
import { existsSync, writeFileSync, readFileSync, appendFileSync } from 'node:fs';

const behaviour = process.argv[2] ?? 'normal';
const SESSIONS = '.fake-acp-sessions';
const HISTORY = '.fake-acp-history.jsonl';
const MISBEHAVIOURS = ['exit', 'garbage', 'huge-line', 'flood', 'silent-init'];

let buffer = '';
const waiting = new Map();
let nextId = 0;
let cancelled = null;

const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
// What this process said of its sessions, kept for `session/load` (not while it replays).
const recorded = new Set();
let replaying = false;
const record = (sessionId, update) => appendFileSync(HISTORY, JSON.stringify({ sessionId, update, at: Date.now() }) + '\n');
const update = (sessionId, update) => {
  if (!replaying && recorded.has(sessionId) && update.sessionUpdate !== 'usage_update') record(sessionId, update);
  send({ method: 'session/update', params: { sessionId, update } });
};
const history = () =>
  existsSync(HISTORY) ? readFileSync(HISTORY, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
const ask = (method, params) =>
  new Promise((resolve) => {
    const id = `agent-${nextId++}`;
    waiting.set(id, resolve);
    send({ id, method, params });
  });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The session's options, as opencode offers them (config options of type select), kept by this process only: a
// session loaded by a new process starts from the defaults again, as an agent that does not keep them would.
const chosen = new Map();
const choices = {
  model: { name: 'Model', category: 'model', options: [['m1', 'Model One'], ['m2', 'Model Two']] },
  mode: { name: 'Mode', category: 'mode', options: [['ask', 'Ask'], ['code', 'Code']] },
};
function configOptions(sessionId) {
  const current = chosen.get(sessionId) ?? { model: 'm1', mode: 'ask' };
  return Object.entries(choices).map(([id, { name, category, options }]) => ({
    id, name, category, type: 'select', currentValue: current[id],
    options: options.map(([value, name]) => ({ value, name })),
  }));
}
function offerCommands(sessionId) {
  setTimeout(() => update(sessionId, { sessionUpdate: 'available_commands_update', availableCommands: [
    { name: 'review', description: 'review changes', input: { hint: 'commit|branch' } },
    { name: 'init', description: 'write AGENTS.md' },
  ] }), 0);
}

function knownSessions() {
  return existsSync(SESSIONS) ? readFileSync(SESSIONS, 'utf8').split('\n').filter(Boolean) : [];
}

/** True the first time in this workspace: the misbehaviour happens once. */
function firstTime() {
  if (existsSync('.fake-acp-misbehaved')) return false;
  writeFileSync('.fake-acp-misbehaved', '');
  return true;
}

async function prompt(id, { sessionId, prompt }) {
  const text = prompt.filter((block) => block.type === 'text').map((block) => block.text).join('\n');
  if (MISBEHAVIOURS.includes(behaviour) && firstTime()) return misbehave(id, sessionId);
  if (recorded.has(sessionId)) record(sessionId, { sessionUpdate: 'user_message_chunk', messageId: `user-${id}`, content: { type: 'text', text } });
  if (text.includes('describe the prompt')) {
    // Says what content blocks the prompt held, so a test can see what chatwire sent for its attachments.
    const described = prompt.map((block) => {
      if (block.type === 'text') return `text ${JSON.stringify(block.text)}`;
      if (block.type === 'image') return `image ${block.mimeType} ${Buffer.from(block.data, 'base64').length} bytes`;
      if (block.type === 'resource') return `resource ${block.resource.uri} ${block.resource.mimeType} ${JSON.stringify(block.resource.text)}`;
      return block.type;
    });
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: described.join('; ') } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('history')) {
    // What the agent remembers of the session: the user's earlier messages.
    const said = history().filter((line) => line.sessionId === sessionId && line.update.sessionUpdate === 'user_message_chunk');
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `You said: ${said.map((line) => line.update.content.text).join(' | ')}` } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  cancelled = null;
  update(sessionId, { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'Thinking about it.' } });
  if (text.includes('slow')) {
    for (let i = 0; i < 600 && !cancelled; i++) {
      update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${i} ` } });
      await sleep(50);
    }
    return send({ id, result: { stopReason: cancelled ? 'cancelled' : 'end_turn' } });
  }
  if (text.includes('terminal')) return terminals(id, sessionId);
  if (text.includes('permission')) {
    const toolCall = { toolCallId: 'call-1', title: 'bash', kind: 'execute', status: 'pending', rawInput: { command: 'rm -rf build' } };
    update(sessionId, { sessionUpdate: 'tool_call', ...toolCall });
    const answer = await ask('session/request_permission', {
      sessionId,
      toolCall,
      options: [
        { optionId: 'once', kind: 'allow_once', name: 'Allow once' },
        { optionId: 'always', kind: 'allow_always', name: 'Always allow' },
        { optionId: 'reject', kind: 'reject_once', name: 'Reject' },
        { optionId: 'never', kind: 'reject_always', name: 'Always reject' },
      ],
    });
    const outcome = answer.result?.outcome;
    if (outcome?.outcome === 'cancelled') {
      update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'call-1', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'Tool execution aborted' } }] });
      return send({ id, result: { stopReason: 'cancelled' } });
    }
    const allowed = outcome?.optionId === 'once' || outcome?.optionId === 'always';
    update(sessionId, {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'call-1',
      status: allowed ? 'completed' : 'failed',
      content: [{ type: 'content', content: { type: 'text', text: allowed ? 'removed\n' : 'The user rejected this call.' } }],
      rawOutput: allowed ? { exit: 0 } : { error: 'rejected' },
    });
    const said = allowed ? `Done with ${outcome.optionId}.` : `Not allowed: ${outcome?.optionId}.`;
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: said } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('files')) {
    const inside = await ask('fs/write_text_file', { sessionId, path: 'from-agent.txt', content: 'written by the agent\n' });
    const read = await ask('fs/read_text_file', { sessionId, path: 'from-agent.txt' });
    const outside = await ask('fs/write_text_file', { sessionId, path: '../outside.txt', content: 'escape' });
    const said = [
      `write: ${inside.error ? 'refused' : 'ok'}`,
      `read: ${JSON.stringify(read.result?.content ?? null)}`,
      `outside: ${outside.error ? 'refused' : 'written'}`,
    ].join('; ');
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: said } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  const stamps = text.match(/^stamp (\d+)/);
  if (stamps) {
    // Each chunk carries the wall-clock microseconds at which it was written (the latency bench reads them).
    for (let i = 0; i < Number(stamps[1]); i++) {
      const micros = Math.round((performance.timeOrigin + performance.now()) * 1000);
      update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `<${micros}>` } });
      if (i % 50 === 49) await sleep(1);
    }
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('take your time')) {
    for (let i = 0; i < 20; i++) {
      update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${i} ` } });
      await sleep(50);
    }
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.startsWith('/review')) {
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `reviewing ${text.slice(7).trim()}` } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('which model')) {
    const { model, mode } = chosen.get(sessionId) ?? { model: 'm1', mode: 'ask' };
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `model ${model}, mode ${mode}` } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('pid')) {
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `pid ${process.pid}` } });
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (text.includes('refuse')) {
    update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'I would rather not' } });
    return send({ id, result: { stopReason: 'refusal' } });
  }
  update(sessionId, { sessionUpdate: 'plan', entries: [
    { content: 'Say hello', priority: 'high', status: 'completed' },
    { content: 'Run echo', priority: 'medium', status: 'in_progress' },
  ] });
  update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hello from the fake agent.' } });
  update(sessionId, { sessionUpdate: 'tool_call', toolCallId: 'echo-1', title: 'bash', kind: 'execute', status: 'pending', rawInput: {} });
  update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'echo-1', status: 'in_progress', title: 'echo hi', rawInput: { command: 'echo hi' } });
  update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'echo-1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'hi\n' } }], rawOutput: { output: 'hi\n', metadata: { exit: 0 } } });
  update(sessionId, { sessionUpdate: 'some_future_update', anything: true });
  update(sessionId, { sessionUpdate: 'usage_update', used: 1200, size: 200000, cost: { amount: 0.01, currency: 'USD' } });
  send({ id, result: { stopReason: 'end_turn', usage: { inputTokens: 1000, outputTokens: 200, totalTokens: 1200 } } });
}

async function misbehave(id, sessionId) {
  update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Starting…' } });
  switch (behaviour) {
    case 'exit':
      process.stderr.write('fatal: the model went away\n');
      process.exit(3);
    case 'garbage':
      process.stdout.write('Traceback (most recent call last): not JSON\n');
      return;
    case 'huge-line':
      process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x'.repeat(10_000_000) } } } }) + '\n');
      return;
    case 'flood':
      for (let i = 0; i < 20000; i++) update('someone-else', { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'noise' } });
      update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Done despite the noise.' } });
      return send({ id, result: { stopReason: 'end_turn' } });
  }
}

function handle(message) {
  if (message.method === undefined) {
    const resolve = waiting.get(message.id);
    waiting.delete(message.id);
    return resolve?.(message);
  }
  const { id, method, params } = message;
  switch (method) {
    case 'initialize':
      if (behaviour === 'silent-init' && firstTime()) return;
      return send({ id, result: { protocolVersion: 1, agentCapabilities: {
        loadSession: true,
        // FAKE_ACP_TAKES=image,embeddedContext: the content it takes besides text (none by default).
        promptCapabilities: {
          image: (process.env.FAKE_ACP_TAKES ?? '').split(',').includes('image'),
          embeddedContext: (process.env.FAKE_ACP_TAKES ?? '').split(',').includes('embeddedContext'),
        },
        sessionCapabilities: behaviour === 'no-list' ? {} : { list: {} },
      }, agentInfo: { name: 'fake-acp', version: '1' } } });
    case 'session/new': {
      const sessionId = `fake-${knownSessions().length + 1}`;
      writeFileSync(SESSIONS, [...knownSessions(), sessionId].join('\n') + '\n');
      recorded.add(sessionId);
      send({ id, result: { sessionId, configOptions: configOptions(sessionId) } });
      return offerCommands(sessionId);
    }
    case 'session/list': {
      const lines = history();
      const sessions = knownSessions().map((sessionId) => {
        const own = lines.filter((line) => line.sessionId === sessionId);
        const first = own.find((line) => line.update.sessionUpdate === 'user_message_chunk');
        const at = own.length ? own[own.length - 1].at : 0;
        return { sessionId, cwd: params.cwd ?? process.cwd(), title: first?.update.content.text, updatedAt: new Date(at).toISOString() };
      });
      return send({ id, result: { sessions: sessions.reverse() } });
    }
    case 'session/load':
      if (!knownSessions().includes(params.sessionId)) return send({ id, error: { code: -32602, message: 'unknown session' } });
      replaying = true;
      for (const line of history().filter((line) => line.sessionId === params.sessionId)) update(params.sessionId, line.update);
      replaying = false;
      recorded.add(params.sessionId);
      send({ id, result: { configOptions: configOptions(params.sessionId) } });
      return offerCommands(params.sessionId);
    case 'session/set_config_option': {
      const { sessionId, configId, value } = params;
      const offered = choices[configId];
      if (!offered) return send({ id, error: { code: -32602, message: `unknown config option: ${configId}` } });
      if (!offered.options.some(([known]) => known === value)) return send({ id, error: { code: -32602, message: `no value ${value}` } });
      chosen.set(sessionId, { ...(chosen.get(sessionId) ?? { model: 'm1', mode: 'ask' }), [configId]: value });
      // Like opencode: a model change is also told as an update, before the answer.
      if (configId === 'model') update(sessionId, { sessionUpdate: 'config_option_update', configOptions: configOptions(sessionId) });
      return send({ id, result: { configOptions: configOptions(sessionId) } });
    }
    case 'session/prompt':
      return prompt(id, params);
    case 'session/cancel':
      cancelled = params.sessionId;
      return;
    default:
      if (id !== undefined) send({ id, error: { code: -32601, message: `no ${method}` } });
  }
}

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
process.stdin.on('end', () => process.exit(0));

/**
 * Runs commands in terminals chatwire serves: one whose output the Bash row streams (it prints `one`, waits for the
 * file named by FAKE_ACP_GO, prints `two` and exits 3), one killed, one refused (its cwd is outside the workspace),
 * and says what each `terminal/*` answered.
 */
async function terminals(id, sessionId) {
  const command = 'echo one; while [ ! -e "$GO" ]; do sleep 0.05; done; echo two; exit 3';
  const env = [{ name: 'GO', value: process.env.FAKE_ACP_GO ?? '/nonexistent' }];
  const created = await ask('terminal/create', { sessionId, command, env });
  const terminalId = created.result.terminalId;
  update(sessionId, {
    sessionUpdate: 'tool_call', toolCallId: 'call-t', title: 'Run it', kind: 'execute', status: 'in_progress',
    rawInput: { command }, content: [{ type: 'terminal', terminalId }],
  });
  const exited = await ask('terminal/wait_for_exit', { sessionId, terminalId });
  const output = await ask('terminal/output', { sessionId, terminalId });
  const sleeper = (await ask('terminal/create', { sessionId, command: 'sleep', args: ['30'] })).result.terminalId;
  await ask('terminal/kill', { sessionId, terminalId: sleeper });
  const killed = await ask('terminal/wait_for_exit', { sessionId, terminalId: sleeper });
  const outside = await ask('terminal/create', { sessionId, command: 'pwd', cwd: '/' });
  await ask('terminal/release', { sessionId, terminalId });
  await ask('terminal/release', { sessionId, terminalId: sleeper });
  const gone = await ask('terminal/output', { sessionId, terminalId });
  update(sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'call-t', status: 'completed' });
  const said = [
    `exit ${exited.result.exitCode}`,
    `output ${JSON.stringify(output.result.output)} ${JSON.stringify(output.result.exitStatus)}`,
    `killed ${killed.result.signal}`,
    `outside ${outside.error ? 'refused' : 'ran'}`,
    `released ${gone.error ? 'gone' : 'kept'}`,
  ].join('; ');
  update(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: said } });
  send({ id, result: { stopReason: 'end_turn' } });
}
