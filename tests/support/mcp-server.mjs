#!/usr/bin/env node
// A small MCP server over stdio (newline-delimited JSON-RPC 2.0) for the tests: the external component chatwire's MCP
// client talks to, like fake-pi.mjs stands in for pi. Its tools:
//   lookup    read-only; returns a city's weather as structuredContent (and as text, as the spec recommends)
//   add_note  changes something (no readOnlyHint), so `--approve writes` holds it
//   fail      answers with isError
//   slow      waits `ms` (default 60 s) unless cancelled; a cancelled call is never answered
//   crash     exits the process in the middle of the call
// tools/list answers in two pages (nextCursor). Every message received is appended, one JSON a line, to the file
// named by MCP_TEST_LOG, if set, with `{"started": pid}` at startup; tests read it to see what the client sent.
// `--exit-at-start` exits at once with a message on stderr (a server that cannot start); `--exit-at-start-if FILE`
// does so while FILE exists (a server that cannot be started again).
import fs from 'node:fs';
import readline from 'node:readline';

const LOG = process.env.MCP_TEST_LOG;
const record = (entry) => {
  if (LOG) fs.appendFileSync(LOG, `${JSON.stringify(entry)}\n`);
};

const gate = process.argv.indexOf('--exit-at-start-if');
if (process.argv.includes('--exit-at-start') || (gate > 0 && fs.existsSync(process.argv[gate + 1]))) {
  process.stderr.write('mcp test server: cannot start without a token\n');
  process.exit(2);
}
record({ started: process.pid, cwd: process.cwd(), greeting: process.env.MCP_TEST_GREETING ?? null });
process.stderr.write(`mcp test server ${process.pid} ready\n`);

const object = (properties, required = []) => ({ type: 'object', properties, required });
const TOOLS = [
  {
    name: 'lookup',
    title: 'Weather lookup',
    description: 'The current weather of a city.',
    inputSchema: object({ city: { type: 'string' }, units: { type: 'string', enum: ['C', 'F'] } }, ['city']),
    annotations: { readOnlyHint: true },
  },
  {
    name: 'add_note',
    description: 'Adds a note to the notebook.',
    inputSchema: object({ text: { type: 'string' } }, ['text']),
    annotations: { readOnlyHint: false, destructiveHint: false },
  },
  {
    name: 'fail',
    description: 'Always fails.',
    inputSchema: object({ why: { type: 'string' } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: 'slow',
    description: 'Waits a while.',
    inputSchema: object({ ms: { type: 'number' } }),
    annotations: { readOnlyHint: true },
  },
  { name: 'crash', description: 'Exits in the middle of the call.', inputSchema: object({}) },
];
const PAGE = 3;

const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
const text = (value) => ({ type: 'text', text: value });
const slowCalls = new Map();

function callTool(id, name, args) {
  switch (name) {
    case 'lookup': {
      const weather = { city: args.city, temperature: { value: 21.5, unit: args.units ?? 'C' }, sky: 'clear' };
      return send({ id, result: { content: [text(JSON.stringify(weather))], structuredContent: weather } });
    }
    case 'add_note':
      return send({ id, result: { content: [text(`Noted: ${args.text}`)] } });
    case 'fail':
      return send({ id, result: { content: [text(`lookup failed: ${args.why ?? 'no reason'}`)], isError: true } });
    case 'slow': {
      const timer = setTimeout(() => {
        slowCalls.delete(id);
        send({ id, result: { content: [text('finally done')] } });
      }, args.ms ?? 60_000);
      slowCalls.set(id, timer);
      return undefined;
    }
    case 'crash':
      process.stderr.write('mcp test server: crashing on purpose\n');
      return process.exit(3);
    default:
      return send({ id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
}

function handle(message) {
  record(message);
  const { id, method, params = {} } = message;
  switch (method) {
    case 'initialize': {
      const supported = ['2025-06-18', '2025-03-26'];
      const protocolVersion = supported.includes(params.protocolVersion) ? params.protocolVersion : supported[0];
      return send({
        id,
        result: { protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'chatwire-test', version: '1.0.0' } },
      });
    }
    case 'notifications/initialized':
      return undefined;
    case 'tools/list': {
      const start = params.cursor === 'page-2' ? PAGE : 0;
      const tools = TOOLS.slice(start, start + PAGE);
      return send({ id, result: start === 0 ? { tools, nextCursor: 'page-2' } : { tools } });
    }
    case 'tools/call':
      return callTool(id, params.name, params.arguments ?? {});
    case 'notifications/cancelled': {
      const timer = slowCalls.get(params.requestId);
      if (timer) clearTimeout(timer);
      slowCalls.delete(params.requestId);
      return undefined;
    }
    default:
      if (id !== undefined) send({ id, error: { code: -32601, message: `Method not found: ${method}` } });
      return undefined;
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim()) handle(JSON.parse(line));
});
lines.on('close', () => process.exit(0));
