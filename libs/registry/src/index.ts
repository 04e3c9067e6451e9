// The registry of who may sign in: users and their owners, their certificates, and api keys.
// The auth-service writes it (its operator command) and reads it at sign-in; the session-service
// reads the same database at refresh, so neither service calls the other to check a key or a
// registration.
export { ApiKeyStore, type ApiKeyChecker, type ApiKeyDoc, type ApiKeyGrant } from './ApiKeyStore';
export {
  ThumbprintTaken,
  UserRegistry,
  type CertificateDoc,
  type Registration,
  type RegistrationChecker,
  type UserDoc,
} from './UserRegistry';
