/**
 * Stable codes of the errors the services raise for their own use, in the style of undici's
 * `UND_ERR_*`: each such error class carries one as `readonly code = 'CP_ERR_...'`, so a log line
 * (`err.code`) and a check in another package (`hasErrorCode`) name the error without its class.
 * None is ever answered: the error handlers turn them into codes of `ERROR_CATALOGUE` (the
 * /internal/* ones included) or a bare 500.
 *
 * A class writes its code as a literal, so packages without a dependency on this one (libs/protocol,
 * libs/config, libs/redis, libs/credentials) declare theirs too; `libs/errors/test/catalogue.test.ts`
 * checks that each code here is declared by exactly one class, that every `CP_ERR_` literal in the
 * sources is here, and that docs/operations.md lists them all.
 */
export const INTERNAL_ERRORS = {
  CP_ERR_BODY_LENGTH: 'a request body is shorter or longer than its range or Content-Length names',
  CP_ERR_CLIENT_DISCONNECTED: 'the client closed the connection before its request body was complete',
  CP_ERR_STORAGE_TIMEOUT: 'S3 did not answer a call in time, or stopped taking or sending a body',
  CP_ERR_S3_REFUSAL: 'S3 answered a direct call with an error status',
  CP_ERR_STALE_BOOK_READ: 'a part was read as of an upload version that is no longer the latest',
  CP_ERR_UPSTREAM_SILENT: 'a service sent the gateway nothing for UPSTREAM_TIMEOUT_MS',
  CP_ERR_REDIS_UNAVAILABLE: 'Redis is not connected, did not answer in time, or failed a command',
  CP_ERR_RANGE_SYNTAX: 'a Range or Content-Range header cannot be understood',
  CP_ERR_DIGEST_SYNTAX: 'a Content-Digest header cannot be understood',
  CP_ERR_DIGEST_MISMATCH: 'a request body does not have the digest its Content-Digest names',
  CP_ERR_CHECKSUM_REFUSED: 'S3 refused a write whose bytes did not have the checksum it carried',
  CP_ERR_INVALID_BEARER_TOKEN: 'a Bearer token is not acceptable',
  CP_ERR_CONFIG: 'an environment variable is missing or malformed',
  CP_ERR_CERT_UNREADABLE: 'a body is not a certificate in any accepted form',
  CP_ERR_TOO_MANY_CERTIFICATES: 'a body holds more certificates than a chain may have',
  CP_ERR_UNSUPPORTED_KEY: "a certificate's key cannot receive an EncryptedKey",
  CP_ERR_THUMBPRINT_TAKEN: 'a certificate is already registered to another user',
  CP_ERR_TUS_CHECKSUM_MISMATCH: 'a tus body does not have the digest its Upload-Checksum names',
  CP_ERR_TOO_MANY_WEBHOOKS: 'an owner has as many webhooks as allowed already',
  CP_ERR_DELIVERY_FAILED: 'a webhook delivery got no answer: refused address, DNS, connection or timeout',
  CP_ERR_WEBHOOK_SECRET_UNREADABLE: "a webhook's stored secret opens under no key of WEBHOOK_SECRET_KEYS",
  CP_ERR_OWNED_LIMIT_REACHED: "an owner's index of unfinished uploads holds as many as its quota allows",
  CP_ERR_UPLOAD_LOST: 'S3 holds neither the multipart upload of an unfinished content nor its object',
} as const satisfies Record<`CP_ERR_${string}`, string>;

export type InternalErrorCode = keyof typeof INTERNAL_ERRORS;

/** Whether `error` carries the internal code `code`, whatever its class or the copy of the package it came from. */
export function hasErrorCode(error: unknown, code: InternalErrorCode): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
