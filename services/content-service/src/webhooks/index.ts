// The webhooks' face to the rest of the content-service: its settings, their start in a replica,
// the /v1/{ownerId}/webhooks routes and the types the app hands them. Files inside import each other directly.
export { webhookSettings } from './settings';
export { startWebhooks } from './startWebhooks';
export { webhooksRouter } from './webhooksRouter';
export type { SubscriberIndex } from './SubscriberIndex';
export type { UrlPolicy } from './urlPolicy';
export type { WebhookStore } from './WebhookStore';
