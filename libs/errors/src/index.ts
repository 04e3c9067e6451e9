export { ServiceError, type ServiceErrorOptions, type ServiceErrorOfOptions } from './ServiceError';
export { ERROR_CATALOGUE, errorSpec, isErrorCode, type ErrorCode, type ErrorSpec } from './catalogue';
export { contentsErrorBody, type ContentsErrorBody } from './contentsErrorBody';
export { INTERNAL_ERRORS, hasErrorCode, type InternalErrorCode } from './internalErrors';
