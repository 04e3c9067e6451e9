import { context, SpanKind, trace, type Span } from '@opentelemetry/api';
import { failSpan, isTracing } from './spans';

/** The command-monitoring events of the MongoDB driver this reads (never the command's body or reply). */
interface CommandStarted {
  requestId: number;
  commandName: string;
  databaseName: string;
  command?: Record<string, unknown>;
}
interface CommandEnded {
  requestId: number;
  failure?: unknown;
}

/** The part of a MongoClient this needs. */
export interface CommandMonitoredClient {
  on(event: 'commandStarted', listener: (event: CommandStarted) => void): unknown;
  on(event: 'commandSucceeded' | 'commandFailed', listener: (event: CommandEnded) => void): unknown;
}

/**
 * A CLIENT span per MongoDB command sent under an active span, from the driver's command
 * monitoring (the client must be made with `monitorCommands: true`): operation, database and
 * collection, never the filter or the document.
 */
export function traceMongo(client: CommandMonitoredClient): void {
  if (!isTracing()) return;
  const spans = new Map<number, Span>();
  client.on('commandStarted', (event) => {
    if (!trace.getSpan(context.active())) return;
    const target = event.command?.[event.commandName];
    const collection = typeof target === 'string' ? target : undefined;
    spans.set(
      event.requestId,
      trace
        .getTracer('content-platform')
        .startSpan(`mongodb ${event.commandName}${collection ? ` ${collection}` : ''}`, {
          kind: SpanKind.CLIENT,
          attributes: {
            'db.system.name': 'mongodb',
            'db.operation.name': event.commandName,
            'db.namespace': event.databaseName,
            ...(collection ? { 'db.collection.name': collection } : {}),
          },
        }),
    );
  });
  const end = (event: CommandEnded) => {
    const span = spans.get(event.requestId);
    if (!span) return;
    spans.delete(event.requestId);
    if (event.failure !== undefined) failSpan(span, event.failure);
    span.end();
  };
  client.on('commandSucceeded', end);
  client.on('commandFailed', end);
}
