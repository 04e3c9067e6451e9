import { Router, json, type Request, type RequestHandler, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import { requireOwner, requireUuid, sendJson } from '../http/v1Requests';
import { isEventType, type EventType } from './events';
import type { SubscriberIndex } from './SubscriberIndex';
import { refuseUrl, type UrlPolicy } from './urlPolicy';
import { TooManyWebhooks, type WebhookStore } from './WebhookStore';

/** The largest webhook registration body read. */
const BODY_LIMIT = '16kb';

/**
 * /v1/{ownerId}/webhooks: an owner's webhooks, created (the signing secret is answered once,
 * here), listed without secrets, deleted. Another owner's webhook is answered 404, as unknown.
 */
export function webhooksRouter(store: WebhookStore, index: SubscriberIndex, policy: UrlPolicy): Router {
  const router = Router();
  const parse = json({ limit: BODY_LIMIT, type: () => true });
  // A body that is not JSON (or too long) is the caller's mistake, answered in the /v1 error format.
  const body: RequestHandler = (req, res, next) =>
    parse(req, res, (error?: unknown) =>
      next(
        error
          ? ServiceError.of('invalidWebhook', 'the body must be a JSON object {"url","events"} of at most 16 KiB')
          : undefined,
      ),
    );

  // The owner is checked before the body is read: another owner's caller learns nothing from it.
  const owner: RequestHandler = (req, _res, next) => {
    requireOwner(req);
    next();
  };

  router.post('/:ownerId/webhooks', owner, body, async function createWebhook(req, res) {
    const ownerId = requireOwner(req);
    const { url, events } = readRegistration(req, policy);
    let created;
    try {
      created = await store.create(ownerId, url, events, new Date());
    } catch (error) {
      if (error instanceof TooManyWebhooks) throw ServiceError.of('tooManyWebhooks', error.message);
      throw error;
    }
    index.noteCreated(ownerId);
    res.locals.webhookId = created.id; // for its audit record
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 201, created);
  });

  router.get('/:ownerId/webhooks', async function listWebhooks(req, res) {
    const ownerId = requireOwner(req);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 200, { items: await store.list(ownerId) });
  });

  router.delete('/:ownerId/webhooks/:webhookId', async function deleteWebhook(req: Request, res: Response) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.webhookId), 'webhookId');
    if (!(await store.remove(ownerId, id)))
      throw ServiceError.of('webhookNotFound', `owner ${ownerId} has no webhook ${id}`);
    res.status(204).end();
  });

  return router;
}

function readRegistration(req: Request, policy: UrlPolicy): { url: string; events: EventType[] } {
  const given: unknown = req.body;
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw ServiceError.of('invalidWebhook', 'the body must be a JSON object {"url","events"}');
  const { url, events } = given as { url?: unknown; events?: unknown };
  if (typeof url !== 'string') throw ServiceError.of('invalidWebhookUrl', 'url must be a string');
  const refused = refuseUrl(url, policy);
  if (refused) throw ServiceError.of('invalidWebhookUrl', refused);
  if (!Array.isArray(events) || events.length === 0)
    throw ServiceError.of('invalidWebhookEvents', 'events must be a non-empty list of event types');
  const unknown = events.filter((e) => !isEventType(e));
  if (unknown.length > 0)
    throw ServiceError.of(
      'invalidWebhookEvents',
      `unknown event types: ${unknown.map((e) => JSON.stringify(e).slice(0, 60)).join(', ')}`,
    );
  return { url, events: events as EventType[] };
}
