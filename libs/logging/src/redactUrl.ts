/** Query parameters whose values are credentials: named exactly, or by what their names contain. */
const SECRET_NAMES = new Set(['apikey', 'api-key', 'auth.sid', 'sid', 'refresh-token', 'refreshtoken']);
const SECRET_PARTS = /key|token|sid|secret|password|passwd|auth|signature|credential/i;

export const REDACTED = '[redacted]';

/** Whether a query parameter's value must never be written to a log. */
export function isSecretParameter(name: string): boolean {
  const n = name.toLowerCase();
  return SECRET_NAMES.has(n) || SECRET_PARTS.test(n);
}

/**
 * The request target with the value of every secret query parameter replaced, for logs.
 * Works on the raw text (no decoding and re-encoding), so what is logged is what was sent,
 * less the secrets; a parameter name that is percent-encoded is decoded only to be judged.
 */
export function redactUrl(target: string): string {
  const q = target.indexOf('?');
  if (q === -1) return target;
  const hash = target.indexOf('#', q);
  const query = target.slice(q + 1, hash === -1 ? undefined : hash);
  const masked = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      return isSecretParameter(decodeName(pair.slice(0, eq))) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
  return `${target.slice(0, q)}?${masked}`;
}

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}
