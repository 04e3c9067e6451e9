// Request rate limits per api key and per client address, shared through Redis.
export { RequestRateLimiter, apiKeyInRequest, type Limit, type RequestRateLimiterOptions } from './RequestRateLimiter';
export { clientAddress } from './clientAddress';
export { type RateLimitConfig } from './settings';
