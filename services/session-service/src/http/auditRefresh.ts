import type { Request, Response } from 'express';
import type { Described } from '@cp/service-kit';

const REFRESH = /^\/sessions\/v5\.\d+\/sessions\/refresh\/?$/;

/** The audit record of a refresh, done or refused, by the session's user once the session is known. */
export function describeRefresh(req: Request, res: Response): Described[] {
  if (!REFRESH.test(req.originalUrl.split('?')[0]!)) return [];
  const user = res.locals.user as { userId: string; thumbprint?: string } | undefined;
  return [
    {
      event: 'session.refresh',
      actor: {
        kind: 'session',
        subject: user?.userId ?? null,
        ...(user?.thumbprint ? { certificate: user.thumbprint } : {}),
      },
    },
  ];
}
