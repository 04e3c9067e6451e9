import express from 'express';
import type { BearerVerifier } from '@cp/credentials';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { type ServiceMetrics, serviceApp } from '@cp/service-kit';
import type { DownloadService } from './downloads/DownloadService';
import { authenticate, type SessionValidator } from './http/authenticate';
import { contentsRouter } from './http/contentsRouter';
import { errorHandler } from './http/errorHandler';
import type { ContentListing } from './listing/ContentListing';
import type { ContentReceipts } from './receipts/ContentReceipts';
import { startTimings } from './uploads/StageTimings';
import type { UploadService } from './uploads/UploadService';

export interface ContentAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  uploads: UploadService;
  downloads: DownloadService;
  receipts: ContentReceipts;
  listing: ContentListing;
  bearer: BearerVerifier | null;
  sessions: SessionValidator | null;
}

/** The content-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: ContentAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics });
  app.use(
    '/v1',
    startTimings,
    authenticate(deps.bearer, deps.sessions),
    contentsRouter(deps.uploads, deps.downloads, deps.receipts, deps.listing),
  );
  app.use((req, _res, next) => {
    next(ServiceError.of('routeNotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
