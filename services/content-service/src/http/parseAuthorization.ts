/** What a request presents as its credential, before anything checks it. */
export type PresentedCredential =
  | { scheme: 'bearer'; token: string }
  | { scheme: 'auth.sid'; sid: string }
  | { scheme: 'none' }
  | { scheme: 'malformed'; reason: string };

/** Reads `Authorization: Bearer`, `Authorization: auth.sid`, or `Cookie: auth.sid=`. */
export function parseAuthorization(authorization: string | undefined, cookie: string | undefined): PresentedCredential {
  if (authorization !== undefined && authorization.trim() !== '') {
    const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(authorization);
    if (!m) return { scheme: 'malformed', reason: 'Authorization is not "<scheme> <credentials>"' };
    const scheme = m[1]!.toLowerCase();
    if (scheme === 'bearer') return { scheme: 'bearer', token: m[2]! };
    if (scheme === 'auth.sid') return { scheme: 'auth.sid', sid: m[2]! };
    return { scheme: 'malformed', reason: `unsupported Authorization scheme ${JSON.stringify(m[1])}` };
  }
  if (cookie) {
    for (const part of cookie.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === 'auth.sid') {
        const sid = part.slice(eq + 1).trim();
        if (sid) return { scheme: 'auth.sid', sid };
      }
    }
  }
  return { scheme: 'none' };
}
