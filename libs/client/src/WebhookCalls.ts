import type { CreatedWebhook, Webhook, WebhookEventType, WebhookList } from './api';
import type { ApiCalls } from './ApiCalls';

/** An owner's webhooks (`client.webhooks`): create (the only answer with the secret), list, delete. */
export class WebhookCalls {
  constructor(private readonly api: ApiCalls) {}

  /** Registers `url` for `events`; keep the answer's `secret`: it is not shown again. */
  async create(
    owner: string,
    webhook: { url: string; events: WebhookEventType[] },
    signal?: AbortSignal,
  ): Promise<CreatedWebhook> {
    const body = Buffer.from(JSON.stringify({ url: webhook.url, events: webhook.events }));
    const res = await this.api.call({
      method: 'POST',
      url: this.api.url(`/v1/${owner}/webhooks`),
      headers: { 'content-type': 'application/json' },
      body: () => body,
      contentLength: body.length,
      signal,
      // Sent again after a lost answer, it would register a second webhook whose secret nobody has.
      once: true,
    });
    return JSON.parse(res.text) as CreatedWebhook;
  }

  /** The owner's webhooks, oldest first, without secrets. */
  async list(owner: string, signal?: AbortSignal): Promise<Webhook[]> {
    const res = await this.api.call({ method: 'GET', url: this.api.url(`/v1/${owner}/webhooks`), headers: {}, signal });
    return (JSON.parse(res.text) as WebhookList).items;
  }

  /** Deletes a webhook; an unknown one (or another owner's) is an ApiError 404 `webhookNotFound`. */
  async delete(owner: string, id: string, signal?: AbortSignal): Promise<void> {
    await this.api.call({ method: 'DELETE', url: this.api.url(`/v1/${owner}/webhooks/${id}`), headers: {}, signal });
  }
}
