/** Longest Content-Type the services accept: S3 and the stored record carry it verbatim. */
export const MAX_MEDIA_TYPE_LENGTH = 255;

// RFC 9110 §8.3.1: media-type = type "/" subtype parameters, with tokens and quoted strings;
// §5.6.6 parameters = *( OWS ";" OWS [ parameter ] ). ASCII only: obs-text is refused, since S3
// signs header values as ASCII and a byte outside it fails the signature (answered 500 before).
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\t \\x21-\\x7E])*"';
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);

/** Whether a Content-Type value follows RFC 9110's media-type grammar, in ASCII, within the length limit. */
export function isValidMediaType(value: string): boolean {
  return value.length <= MAX_MEDIA_TYPE_LENGTH && MEDIA_TYPE.test(value);
}
