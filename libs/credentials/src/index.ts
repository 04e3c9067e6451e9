export { BearerVerifier, InvalidBearerToken, type BearerVerifierOptions } from './BearerVerifier';
export { type Principal } from './Principal';
export { parseAuthorization, type PresentedCredential } from './parseAuthorization';
