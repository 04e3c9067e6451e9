export { ServiceError, type ServiceErrorOptions } from './ServiceError';
export { contentsErrorBody, type ContentsErrorBody } from './contentsErrorBody';
