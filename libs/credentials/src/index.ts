// Development credentials for the tooling (tests, benchmarks, the deploy suites, `pnpm token`): a
// local signing key with its JWKS, and a receipt signer with a self-signed certificate. No
// deployable imports this package; the content-service's Bearer verification is its own
// (services/content-service/src/http/BearerVerifier.ts).
export { DevKeys, DEV_ISSUER, DEV_AUDIENCE } from './DevKeys';
export { DevReceiptSigner, selfSignedCertificate } from './DevReceiptSigner';
