import { tracingChannel } from 'node:diagnostics_channel';
import { context, SpanKind, trace, type Span } from '@opentelemetry/api';
import { failSpan } from './spans';

/** What node-redis publishes on `node-redis:command` (its client/tracing.ts); the arguments are never read. */
interface RedisCommandMessage {
  command?: string;
  database?: number;
  serverAddress?: string;
  serverPort?: number;
  batchMode?: string;
  error?: unknown;
}

/**
 * A CLIENT span per Redis command sent under an active span, from the tracing channel node-redis 6
 * publishes every command on (no wrapper around the client, nothing when nobody subscribes). The
 * span names the command alone: keys and arguments may hold a sid's hash or a webhook's secret.
 * Answers the unsubscribe.
 */
export function traceRedisCommands(): () => void {
  const channel = tracingChannel<unknown, RedisCommandMessage>('node-redis:command');
  const spans = new WeakMap<object, Span>();
  const end = (message: RedisCommandMessage) => {
    const span = spans.get(message);
    if (!span) return;
    spans.delete(message);
    if (message.error !== undefined) failSpan(span, message.error);
    span.end();
  };
  const handlers = {
    start: (message: RedisCommandMessage) => {
      if (!trace.getSpan(context.active())) return;
      const command = String(message.command ?? 'command').toUpperCase();
      const span = trace.getTracer('content-platform').startSpan(`redis ${command}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': 'redis',
          'db.operation.name': command,
          ...(message.batchMode ? { 'db.operation.batch.mode': message.batchMode } : {}),
          ...(message.serverAddress ? { 'server.address': message.serverAddress } : {}),
          ...(message.serverPort ? { 'server.port': message.serverPort } : {}),
        },
      });
      spans.set(message, span);
    },
    // A command that threw before it was sent has no asynchronous end.
    end: (message: RedisCommandMessage) => {
      if (message.error !== undefined) end(message);
    },
    asyncEnd: end,
    error: () => undefined,
    asyncStart: () => undefined,
  };
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
}
