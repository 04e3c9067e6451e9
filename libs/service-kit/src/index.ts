export { requestId, REQUEST_ID_HEADER } from './requestId';
export { ServiceMetrics } from './ServiceMetrics';
export { healthRoutes, livenessRoute, type ReadinessCheck } from './healthRoutes';
export { BODY_SOCKET_HIGH_WATER_MARK, runServer, type RunServerOptions, type RunningServer } from './runServer';
export { coalesceWrites, sendBody } from './coalescedWrites';
export { closeAfterAnswer, namesClose } from './lingerAfterAnswer';
export { accessLog } from './accessLog';
export { whenDone, type DoneHook } from './whenDone';
export { requireInternalSecret, INTERNAL_SECRET_HEADER, type InternalCaller } from './requireInternalSecret';
export { adminApp, serviceApp, type ServiceAppDeps } from './serviceApp';
export { jsonErrorHandler, type JsonErrorHandlerOptions } from './jsonErrorHandler';
export { isValidMediaType, MAX_MEDIA_TYPE_LENGTH } from './mediaType';
export { codeErrorHandler, type CodeErrorHandlerOptions } from './codeErrorHandler';
export { unavailableDependency, type Dependency, type OwnedDependencies } from './unavailableDependency';
export { mongoUnavailable, type MongoDriverErrors } from './mongoUnavailable';
export {
  startService,
  type Backend,
  type BaseServiceConfig,
  type BuiltService,
  type ServiceContext,
  type StartServiceOptions,
} from './startService';
export { connectMongo, type MongoConnection } from './connectMongo';
export { InternalClient, type InternalAnswer, type InternalClientOptions } from './InternalClient';
export { closeIdleSockets } from './idleSockets';
export { systemClock, type Clock } from './Clock';
export { audited, forwardedChain, type Described } from './audited';
