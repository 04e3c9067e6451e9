// What `content --help` prints, and the error of a command line that cannot be run as given.

export const USAGE = `usage: content <command> [options]

commands:
  login --cert <pem> --key <pem> --api-key <key>   sign in with a certificate; the session is saved
  upload <file> [--resume <id>] [--parallel 4] [--content-type <type>] [--direct]
  upload - [--size <bytes>] ...                     upload standard input (a pipe); see the README
  download <id> <file> [--parallel 4] [--sha256 <hex>] [--restart] [--direct]
                                                     --direct: 64 MiB parts and downloads straight to and
                                                     from S3 where the service offers it (else through it)
  status <id>
  receipt <id> [--out <file>] [--cert <pem>]        the content's signed receipt, checked and printed; --cert:
                                                     the platform's receipt certificate (else only the one the
                                                     receipt carries is checked); --out: keep the DER
  ls [--limit 100] [--all]                           the owner's contents (id, state, size, type, created),
                                                     in id order: one page, or with --all every page
  rm <id>                                            delete a content (or abort its unfinished upload)
  webhook add <url> [--events <list>]                register a receiver of the owner's events (default all:
                                                     content.completed,content.deleted,content.expired); prints
                                                     its signing secret, shown only this once
  webhook ls | webhook rm <id>                       the owner's webhooks; delete one
  refresh                                            rotate the saved session
  --version, -V                                      print the version
  --help, -h                                         print this

options for every command (a flag beats its environment variable, which beats the saved login):
  --url <gateway>      the API (default: $CONTENT_URL, else saved, else http://127.0.0.1:8080)
  --owner <uuid>       the owner to act for (default: $CONTENT_OWNER, else saved)
  --token <jwt>        a Bearer token instead of the saved session (also $CONTENT_TOKEN)
  --json               machine-readable output on stdout, no progress
  --config <file>      where the session is saved (default $XDG_CONFIG_HOME/content-platform/config.json,
                       $XDG_CONFIG_HOME defaulting to ~/.config; written with mode 0600)
  --retry-for <time>   how long each request (each part) keeps being retried while the service is
                       unavailable (503, 429, 408, 500, 502, 504, refused or broken connections): 30s, 5m ...
                       (default 2m; 0 for no retries)

environment: CONTENT_URL, CONTENT_OWNER, CONTENT_TOKEN; HTTPS_PROXY, HTTP_PROXY and NO_PROXY (or
lower case) send requests through a proxy

exit codes: 0 ok, 1 unexpected, 2 usage, 3 credentials (401/403, unusable --cert/--key), 4 not found, 5 conflict or
refused input (400/409/411/413/416), 6 service unavailable or network, 7 verification failed
(length or SHA-256 of a download, length of an upload stream, a receipt's signature), 130 interrupted`;

/** A command line that cannot be run as given: exit code 2, with a pointer to `content --help`. */
export class UsageError extends Error {}
