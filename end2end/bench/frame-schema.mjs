// The chat frame union of DESIGN.md §2 (src/protocol/frame.rs is the truth) as a zod 4 schema: what a TypeScript client of chatwire would validate
// each line with, and the decode bench's yardstick (decode.mjs). One object schema per frame type with its fields
// and literals; optional fields are `.optional()` (the wire omits them, never `null`); unknown fields are
// stripped as zod does by default, except on tool parts, which keep them (`...extra`), as chatwire does.
// Discriminated unions wherever the tag is a literal, which is zod's fast path; a tool part's tag is
// `tool-<Name>`, which no literal can name, so a part is the union of the literal-tagged parts and the tool part.
import { z } from 'zod';

const seq = z.number().int().positive().optional();
const count = z.number().int().nonnegative();
const text = z.string();

const toolState = z.enum([
  'input-streaming',
  'input-available',
  'approval-requested',
  'output-available',
  'output-error',
  'output-denied',
]);

export const toolPart = z.looseObject({
  type: z.templateLiteral(['tool-', z.string().min(1)]),
  toolCallId: text,
  state: toolState,
  index: count.optional(),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  errorText: text.optional(),
  durationMs: count.optional(),
  approvalOptions: z.array(z.object({ optionId: text, name: text, kind: text })).optional(),
});

const part = z.union([
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('text'), text }),
    z.object({ type: z.literal('thinking'), text }),
    z.object({ type: z.literal('error'), title: text.optional(), message: text }),
    z.object({ type: z.literal('file'), id: text, name: text, mediaType: text, size: count }),
  ]),
  toolPart,
]);

const changedFile = z.object({
  path: text,
  status: z.enum(['added', 'modified', 'deleted']),
  additions: count,
  deletions: count,
  binary: z.boolean().optional(),
});

const runChanges = { checkpoint: text, files: z.array(changedFile), additions: count, deletions: count };

// Tokens and cost of one model call or of a run's calls together; `cost` in US dollars, absent when unknown.
const tokenUsage = z.object({
  input: count,
  output: count,
  cacheRead: count.optional(),
  cacheWrite: count.optional(),
  cost: z.number().optional(),
});

const contextUse = z.object({ used: count, window: count.optional(), compactAt: count.optional() });

const chatMessage = z.object({
  id: text,
  role: z.enum(['user', 'assistant']),
  parts: z.array(part),
  createdAt: count.optional(),
  changes: z.object(runChanges).optional(),
  usage: z.object({ total: tokenUsage, calls: count, context: contextUse.optional() }).optional(),
});

const mode = z.enum(['agent', 'plan']);

const planState = z.object({
  mode,
  executing: z.boolean(),
  pendingDecision: z.boolean(),
  completed: count,
  total: count,
  todos: z.array(z.object({ step: count, text, completed: z.boolean() })),
  message: text.optional(),
});

const lifecycleName = z.enum([
  'agent_start',
  'agent_end',
  'agent_settled',
  'turn_start',
  'turn_end',
  'message_start',
  'message_end',
]);

export const chatFrame = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('start'),
    seq,
    id: text,
    runId: text,
    sessionId: text,
    sessionFile: text.optional(),
    sessionReset: z.boolean().optional(),
    diagnostics: z.array(text).optional(),
    branch: z.object({ parentId: text.optional() }).optional(),
  }),
  z.object({ type: z.literal('message'), seq, message: chatMessage }),
  z.object({ type: z.literal('delta'), seq, text, messageId: text.optional() }),
  z.object({ type: z.literal('thinking'), seq, text, messageId: text.optional() }),
  z.object({
    type: z.literal('tool_draft'),
    seq,
    toolCallId: text,
    toolName: text,
    index: count,
    messageId: text.optional(),
  }),
  z.object({
    type: z.literal('tool_args_delta'),
    seq,
    toolCallId: text,
    path: z.array(z.union([z.string(), count])),
    text,
    messageId: text.optional(),
  }),
  z.object({ type: z.literal('tool'), seq, part: toolPart, messageId: text.optional() }),
  z.object({
    type: z.literal('plan'),
    seq,
    mode,
    executing: z.boolean(),
    completed: count,
    total: count,
    message: text.optional(),
    state: planState,
  }),
  z.object({ type: z.literal('state'), seq, state: z.object({ name: lifecycleName, message: text.optional() }) }),
  z.object({ type: z.literal('queue'), seq, steering: z.array(text), followUp: z.array(text) }),
  z.object({ type: z.literal('branch'), seq, messageId: text }),
  z.object({
    type: z.literal('agent_options'),
    seq,
    commands: z.array(z.object({ name: text, description: text.optional(), hint: text.optional() })).optional(),
    options: z
      .array(
        z.object({
          id: text,
          name: text,
          description: text.optional(),
          category: text.optional(),
          current: text,
          choices: z.array(z.object({ value: text, name: text, description: text.optional() })),
        }),
      )
      .optional(),
  }),
  z.object({ type: z.literal('changes'), seq, ...runChanges, messageId: text.optional() }),
  z.object({
    type: z.literal('usage'),
    seq,
    runId: text.optional(),
    messageId: text.optional(),
    usage: tokenUsage,
    context: contextUse.optional(),
  }),
  z.discriminatedUnion('phase', [
    z.object({ type: z.literal('compaction'), phase: z.literal('start'), seq, reason: text }),
    z.object({
      type: z.literal('compaction'),
      phase: z.literal('end'),
      seq,
      reason: text,
      aborted: z.boolean(),
      willRetry: z.boolean(),
      errorMessage: text.optional(),
    }),
  ]),
  z.discriminatedUnion('phase', [
    z.object({
      type: z.literal('retry'),
      phase: z.literal('start'),
      seq,
      attempt: count,
      maxAttempts: count,
      delayMs: count,
      errorMessage: text,
    }),
    z.object({
      type: z.literal('retry'),
      phase: z.literal('end'),
      seq,
      success: z.boolean(),
      attempt: count,
      finalError: text.optional(),
    }),
  ]),
  z.object({
    type: z.literal('done'),
    seq,
    runId: text,
    message: chatMessage,
    sessionId: text,
    sessionFile: text.optional(),
    sessionReset: z.boolean().optional(),
  }),
  z.object({ type: z.literal('error'), seq, message: text, runId: text.optional(), code: text.optional() }),
  z.object({ type: z.literal('ping') }),
]);
