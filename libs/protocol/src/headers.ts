/**
 * The names of the headers the gateway, the content-service and the client share, as the API
 * description (services/gateway/openapi.yaml) spells them. Node reports request headers in lower
 * case: look them up with `headerKey`.
 */
export const HEADERS = {
  /** An upload's byte range: `bytes a-b/total` or `bytes a-b/*`; a download answer's range. */
  contentRange: 'Content-Range',
  /** An upload request's digest of its body, RFC 9530: `sha-256=:<base64>:` (see `parseContentDigest`). */
  contentDigest: 'Content-Digest',
  /** A ready content's digest, RFC 9530: `sha-256=:<base64>:` on GET and HEAD, where the service has it. */
  reprDigest: 'Repr-Digest',
  /** A download's range (see `parseRange`). */
  range: 'Range',
  /** `HEAD /v1/{owner}/contents/{id}`: `uploading` or `ready`. */
  uploadState: 'X-Upload-State',
  /** `HEAD /v1/{owner}/contents/{id}`: the content's length, once known. */
  contentTotal: 'X-Content-Total',
  /** `HEAD /v1/{owner}/contents/{id}`: the bytes received, `0-99,200-299` (inclusive, merged). */
  receivedRanges: 'X-Received-Ranges',
  /** Every /v1 error: `urn:error:contents:<code>`, also on HEAD answers (which have no body). */
  errorId: 'X-Error-Id',
  /** The request id every service takes (when sane) or makes, and answers with. */
  requestId: 'X-Request-Id',
  /** The api key of /auth and /sessions. */
  apiKey: 'X-Kontur-Apikey',
  /** The refresh token of `POST /sessions/v5.13/sessions/refresh`. */
  refreshToken: 'X-Refresh-Token',
} as const;

/** A header's name as Node reports it among a request's or an answer's headers: lower case. */
export function headerKey<N extends string>(name: N): Lowercase<N> {
  return name.toLowerCase() as Lowercase<N>;
}
