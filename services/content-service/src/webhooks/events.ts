import { createHash } from 'node:crypto';

/** The facts a webhook may subscribe to. */
export const EVENT_TYPES = ['content.completed', 'content.deleted', 'content.expired'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);
}

/** What an event tells of its content (as far as known when the fact happened). */
export interface EventContent {
  id: string;
  size?: number | null;
  'content-type'?: string | null;
  'repr-digest'?: string | null;
}

/** An event as delivered (the JSON body of the POST). */
export interface WebhookEvent {
  id: string;
  type: EventType;
  'occurred-at': string;
  owner: string;
  content: EventContent;
}

/** What became of an intent's fact: it happened (with what is known of its content), or is not seen (yet). */
export type FactSeen = { happened: true; content: Partial<EventContent> } | { happened: false };

/**
 * The one id of the event of a fact: derived from the content and the kind of fact (each content
 * completes, is deleted or expires at most once), so every writer of the same fact, and every
 * retry of its delivery, names the same event. A UUID (version 8, name-based).
 */
export function eventIdOf(type: EventType, contentId: string): string {
  const h = createHash('sha256').update(`${type}\n${contentId}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
