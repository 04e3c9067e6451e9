export { BearerVerifier, InvalidBearerToken, type BearerVerifierOptions } from './BearerVerifier';
export { type Principal } from './Principal';
export { parseAuthorization, type PresentedCredential } from './parseAuthorization';
export { DevKeys, DEV_ISSUER, DEV_AUDIENCE } from './DevKeys';
export { DevReceiptSigner, selfSignedCertificate } from './DevReceiptSigner';
