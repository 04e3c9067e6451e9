import type { ErrorSpec } from './ErrorSpec';

/** The codes of the /v1 API (content-service), part of ERROR_CATALOGUE (catalogue.ts). */
export const CONTENTS_ERRORS = {
  invalidId: { status: 400, family: 'contents', message: 'the owner or content id is not a UUID' },
  invalidRange: { status: 400, family: 'contents', message: 'the Range or Content-Range header is not a byte range' },
  missingContentRange: {
    status: 400,
    family: 'contents',
    message: 'PUT needs Content-Range: bytes a-b/total (or bytes a-b/*)',
  },
  invalidDirectParts: {
    status: 400,
    family: 'contents',
    message: 'the body must be JSON naming parts of the content: {"parts":[{"part":1,"sha256":"<base64>"}]}',
  },
  invalidLimit: {
    status: 400,
    family: 'contents',
    message: 'limit must be a whole number from 1 to 1000',
  },
  invalidCursor: {
    status: 400,
    family: 'contents',
    message: 'the cursor is not one a listing gave; start again without it',
  },
  rangePastTotal: { status: 400, family: 'contents', message: "Content-Range ends past the content's total" },
  bodyLengthMismatch: { status: 400, family: 'contents', message: 'the body does not have the length its range names' },
  clientDisconnected: { status: 400, family: 'contents', message: 'the request body broke off before its end' },
  invalidContentDigest: {
    status: 400,
    family: 'contents',
    message: 'Content-Digest must be an RFC 9530 dictionary such as sha-256=:<base64>:',
  },
  contentDigestMismatch: {
    status: 400,
    family: 'contents',
    message: 'the body does not have the digest its Content-Digest names; nothing of it was kept',
  },
  invalidContentType: {
    status: 400,
    family: 'contents',
    message: 'Content-Type must be an ASCII media type (type/subtype; parameters)',
  },
  missingCredentials: {
    status: 401,
    family: 'contents',
    message: 'send Authorization: Bearer <token> or an auth.sid session',
  },
  malformedCredentials: { status: 401, family: 'contents', message: 'the credentials are malformed' },
  bearerNotAccepted: { status: 401, family: 'contents', message: 'this deployment does not accept Bearer tokens' },
  invalidToken: { status: 401, family: 'contents', message: 'the token is not valid' },
  sessionsNotAccepted: {
    status: 401,
    family: 'contents',
    message: 'this deployment does not accept auth.sid sessions',
  },
  invalidSession: { status: 401, family: 'contents', message: 'the session is unknown, expired or revoked' },
  ownerForbidden: { status: 403, family: 'contents', message: 'these credentials may not act for this owner' },
  contentNotFound: { status: 404, family: 'contents', message: 'there is no such content' },
  routeNotFound: { status: 404, family: 'contents', message: 'no route for this method and path' },
  contentNotReady: {
    status: 409,
    family: 'contents',
    message: 'the content is still being uploaded; it can be downloaded once all its parts are in',
  },
  totalConflict: { status: 409, family: 'contents', message: "the total differs from the content's" },
  rangeOverlap: {
    status: 409,
    family: 'contents',
    message: 'these bytes partly overlap bytes already received; resend exactly the same range or only missing bytes',
  },
  rangeAlreadyStored: {
    status: 409,
    family: 'contents',
    message: 'these bytes were already received with other content and are assembled into their part',
  },
  totalUnknown: {
    status: 409,
    family: 'contents',
    message: "the content's total is not known yet: name it in a write's Content-Range first",
  },
  directPartMissing: {
    status: 409,
    family: 'contents',
    message: 'S3 holds no such part of this upload with that ETag and the length of the part: send it to its URL again',
  },
  uploadRestarted: {
    status: 409,
    family: 'contents',
    message:
      'S3 lost the parts of this content stored so far and its upload was begun again: HEAD it and send again every range it shows missing',
  },
  contentAlreadyComplete: {
    status: 409,
    family: 'contents',
    message: 'the content is complete and these bytes differ from the stored ones',
  },
  lengthRequired: { status: 411, family: 'contents', message: 'send Content-Length (or a chunked body)' },
  partTooLarge: { status: 413, family: 'contents', message: 'a part may carry at most 64 MiB' },
  contentTooLarge: { status: 413, family: 'contents', message: 'a content may be at most 30 GiB' },
  partTooFragmented: {
    status: 409,
    family: 'contents',
    message: 'this 64 MiB part already holds the most ranges it may be sent in; send the rest of it in larger ranges',
  },
  rangeNotSatisfiable: { status: 416, family: 'contents', message: 'the range starts past the end of the content' },
  rangeTotalMismatch: { status: 416, family: 'contents', message: "the range names a total other than the content's" },
  internalError: {
    status: 500,
    family: 'contents',
    message: 'the request failed unexpectedly; quote the track-id when reporting it',
  },
  storageQuotaExceeded: {
    status: 403,
    family: 'contents',
    message: "the content does not fit in the owner's storage quota",
  },
  uploadQuotaExceeded: {
    status: 403,
    family: 'contents',
    message: 'the owner has as many unfinished uploads as its quota allows; complete or delete one first',
  },
  tooManyRequests: {
    status: 429,
    family: 'contents',
    message: "too many requests for this owner; retry after the answer's Retry-After seconds",
  },
  directTransferDisabled: {
    status: 501,
    family: 'contents',
    message: 'this deployment does not offer direct transfer to S3: send the bytes through the service',
  },
  receiptsNotConfigured: {
    status: 501,
    family: 'contents',
    message: 'this deployment does not sign receipts: the content-service has no signing key and certificate',
  },
  identityProviderUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the token issuer keys could not be fetched',
  },
  sessionServiceUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the session service does not answer; retry later',
  },
  databaseUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the content database does not answer; retry later',
  },
  invalidWebhook: { status: 400, family: 'contents', message: 'the body must be a JSON object {"url","events"}' },
  invalidWebhookUrl: {
    status: 400,
    family: 'contents',
    message: 'the webhook url is not accepted: https to a public address, of at most 2048 characters',
  },
  invalidWebhookEvents: {
    status: 400,
    family: 'contents',
    message: 'events must be a non-empty list of content.completed, content.deleted, content.expired',
  },
  webhookNotFound: { status: 404, family: 'contents', message: 'there is no such webhook' },
  tooManyWebhooks: {
    status: 409,
    family: 'contents',
    message: 'the owner has as many webhooks as allowed; delete one first',
  },
  storageUnavailable: { status: 503, family: 'contents', message: 'the object storage does not answer; retry later' },
  contentBusy: {
    status: 503,
    family: 'contents',
    message: 'the content is busy with other requests; retry in a moment',
    retryAfterSeconds: 1,
  },
  contentCompleting: {
    status: 503,
    family: 'contents',
    message: 'the content is being completed right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  partAssembling: {
    status: 503,
    family: 'contents',
    message: 'the part these bytes belong to is being assembled right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  partWriting: {
    status: 503,
    family: 'contents',
    message: 'the part these bytes belong to is being written by another request right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  claimLost: {
    status: 503,
    family: 'contents',
    message: 'this request lost its claim (taken over, or the database did not answer in time); send it again',
    retryAfterSeconds: 1,
  },
} as const satisfies Record<string, ErrorSpec>;
