import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';
import { REDACTED, redactUrl } from '@cp/logging';

/** Attribute names whose values are credentials whatever they hold (headers, query parameters, keys). */
const SECRET_NAME =
  /authorization|cookie|token|api[-_.]?key|secret|password|signature|credential|(^|[._-])sid($|[._-])/i;
/** What a presigned URL or a credential-carrying query looks like in a value, wherever it appears. */
const SECRET_VALUE = /(X-Amz-(Signature|Credential|Security-Token)|auth\.sid)=(?!\[redacted\])|auth\.sid\s|Bearer\s/i;

/**
 * The last guard before a span leaves the process: the spans this project makes name no
 * credential (operations, buckets, ids, statuses), and this makes sure none slipped in. An
 * attribute named like a credential is replaced, a URL's secret query parameters are masked, a
 * value that still looks like one is replaced whole; the same for the span's name.
 */
export class SanitizingSpanProcessor implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnding(span: Span): void {
    for (const [name, value] of Object.entries(span.attributes)) {
      const clean = sanitizeAttribute(name, value);
      if (clean !== value) span.setAttribute(name, clean);
    }
    const name = sanitizeText(span.name);
    if (name !== span.name) span.updateName(name);
    this.next.onEnding?.(span);
  }

  onEnd(span: ReadableSpan): void {
    this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

/** An attribute's value as it may leave the process. */
export function sanitizeAttribute<V>(name: string, value: V): V | string {
  if (SECRET_NAME.test(name)) return REDACTED;
  return typeof value === 'string' ? sanitizeText(value) : value;
}

/** A text with its URL's secret query parameters masked, or replaced whole when it still carries a credential. */
export function sanitizeText(text: string): string {
  const masked = text.includes('?') ? redactUrl(text) : text;
  return SECRET_VALUE.test(masked) ? REDACTED : masked;
}
