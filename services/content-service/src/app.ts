import express from 'express';
import type { BearerVerifier } from './http/BearerVerifier';
import { ServiceError } from '@cp/errors';
import type { AuditLog, Logger } from '@cp/logging';
import type { RequestRateLimiter } from '@cp/rate-limit';
import { audited, type ServiceMetrics, serviceApp } from '@cp/service-kit';
import type { DownloadService } from './downloads/DownloadService';
import { describeContentRequest } from './http/auditContents';
import { authenticate, type SessionValidator } from './http/authenticate';
import { contentsRouter } from './http/contentsRouter';
import { directRouter } from './http/directRouter';
import { ownerRateLimit } from './http/ownerRateLimit';
import { errorHandler } from './http/errorHandler';
import type { ContentListing } from './listing/ContentListing';
import type { ContentReceipts } from './receipts/ContentReceipts';
import { startTimings } from './uploads/UploadMetrics';
import type { UploadService } from './uploads/UploadService';
import { TusDoor } from './tus/TusDoor';
import { tusDiscovery, tusRouter } from './tus/tusRouter';
import { resumableDiscovery, resumableRouter } from './tus/resumableRouter';
import { webhooksRouter, type SubscriberIndex, type UrlPolicy, type WebhookStore } from './webhooks';

export interface ContentAppDeps {
  logger: Logger;
  /** The audit trail: each content's creation, completion, download and deletion; webhooks created and deleted. */
  audit: AuditLog;
  metrics: ServiceMetrics;
  uploads: UploadService;
  downloads: DownloadService;
  receipts: ContentReceipts;
  listing: ContentListing;
  bearer: BearerVerifier | null;
  /** Requests per owner on /v1; null: no limit. */
  ownerLimit?: RequestRateLimiter | null;
  sessions: SessionValidator | null;
  webhooks: { store: WebhookStore; index: SubscriberIndex; policy: UrlPolicy };
}

/** The in-order doors onto the contents: tus 1.0 and the IETF resumable upload draft. */
function resumableDoors(door: TusDoor): express.Router[] {
  return [tusRouter(door), resumableRouter(door)];
}

/** The content-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: ContentAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics });
  app.use(
    '/v1',
    audited(deps.audit, describeContentRequest),
    startTimings,
    tusDiscovery(),
    resumableDiscovery(),
    authenticate(deps.bearer, deps.sessions),
    ...(deps.ownerLimit ? [ownerRateLimit(deps.ownerLimit)] : []),
    contentsRouter(deps.uploads, deps.downloads, deps.receipts, deps.listing),
    directRouter(deps.uploads),
    ...resumableDoors(new TusDoor(deps.uploads, deps.downloads)),
    webhooksRouter(deps.webhooks.store, deps.webhooks.index, deps.webhooks.policy),
  );
  app.use((req, _res, next) => {
    next(ServiceError.of('routeNotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
