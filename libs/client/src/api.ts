// The parts of the API the client sends and reads, taken from the types generated from
// services/gateway/openapi.yaml (src/generated/openapi.ts; `pnpm --filter @cp/client
// generate:types`). A field, header or parameter renamed in the description stops the client
// from compiling until it follows.
import { HEADERS, headerKey } from '#protocol/headers';
import type { components, operations } from './generated/openapi';

type Operation = keyof operations;
type Answer<
  Op extends Operation,
  Status extends keyof operations[Op]['responses'],
> = operations[Op]['responses'][Status];
type JsonOf<A> = A extends { content: infer C } ? C[keyof C] : never;
/** The named keys of a type, without its `[name: string]` index signature. */
type Named<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] } & string;

/** `POST /v1/{ownerId}/contents` → 201. */
export type UploadCreated = JsonOf<Answer<'Upload', 201>>;
/** `PUT /v1/{ownerId}/contents/{contentId}` → 200 or 201. */
export type PartStored = JsonOf<Answer<'UploadByParts', 200>>;
/** `POST /v1/{ownerId}/contents/{contentId}/direct-parts` → 200: presigned UploadPart requests. */
export type DirectPartTargets = JsonOf<Answer<'DirectParts', 200>>;
/** `POST /auth/v5.13/authenticate-by-cert` → 200. */
export type CertChallenge = JsonOf<Answer<'AuthenticateByCert', 200>>;
/** `POST /auth/v5.13/approve-cert` and `POST /sessions/v5.13/sessions/refresh` → 200. */
export type SessionPairAnswer = JsonOf<Answer<'ApproveCert', 200>> & JsonOf<Answer<'RefreshSession', 200>>;
/** The document a receipt (`GET /v1/{ownerId}/contents/{contentId}/receipt`) signs. */
export type ContentReceipt = components['schemas']['ContentReceipt'];
/** `GET /v1/{ownerId}/contents` → 200: a page of the owner's contents. */
export type ContentList = JsonOf<Answer<'ListContents', 200>>;
/** One content of a listing. */
export type ContentListItem = components['schemas']['ContentListItem'];
/** `POST /v1/{ownerId}/webhooks` → 201: the webhook with its secret (shown only then). */
export type CreatedWebhook = JsonOf<Answer<'CreateWebhook', 201>>;
/** `GET /v1/{ownerId}/webhooks` → 200. */
export type WebhookList = JsonOf<Answer<'ListWebhooks', 200>>;
/** A webhook as listed (without its secret). */
export type Webhook = components['schemas']['Webhook'];
/** The events a webhook may subscribe to. */
export type WebhookEventType = Webhook['events'][number];
/** The error body of /v1. */
export type ContentsError = components['schemas']['ContentsError'];
/** The error body of /auth and /sessions. */
export type CodeError = components['schemas']['CodeError'];
/** `X-Upload-State` of `HEAD /v1/{ownerId}/contents/{contentId}`. */
export type UploadState = Answer<'UploadStatus', 200>['headers'][typeof HEADERS.uploadState];

const requestHeader = <Op extends Operation>(
  _op: Op,
  name: Named<NonNullable<operations[Op]['parameters']['header']>>,
) => headerKey(name);
const queryParameter = <Op extends Operation>(
  _op: Op,
  name: Named<NonNullable<operations[Op]['parameters']['query']>>,
) => name;
const statusHeader = (name: Named<Answer<'UploadStatus', 200>['headers']>) => headerKey(name);
const downloadHeader = (name: Named<Answer<'Download', 206>['headers']>) => headerKey(name);

/** Header and parameter names as the client sends them (lower case: Node reports headers so). */
export const names = {
  contentRange: requestHeader('UploadByParts', HEADERS.contentRange),
  contentType: requestHeader('Upload', 'Content-Type'),
  range: requestHeader('Download', HEADERS.range),
  prefer: requestHeader('Download', 'Prefer'),
  refreshToken: requestHeader('RefreshSession', HEADERS.refreshToken),
  apiKey: headerKey(HEADERS.apiKey),
  thumbprint: queryParameter('ApproveCert', 'thumbprint'),
  uploadState: statusHeader(HEADERS.uploadState),
  contentTotal: statusHeader(HEADERS.contentTotal),
  receivedRanges: statusHeader(HEADERS.receivedRanges),
  etag: statusHeader('ETag'),
  reprDigest: statusHeader(HEADERS.reprDigest),
  answerContentType: statusHeader('Content-Type'),
  answerContentRange: downloadHeader(HEADERS.contentRange),
  errorId: headerKey(HEADERS.errorId),
  requestId: headerKey(HEADERS.requestId),
} as const;
