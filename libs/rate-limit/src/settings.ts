/** The settings of RequestRateLimiter.fromConfig, as parsed by rateLimitSettings() of @cp/config. */
export interface RateLimitConfig {
  RATE_LIMIT_ENABLED: boolean;
  RATE_LIMIT_PER_KEY_POINTS: number;
  RATE_LIMIT_PER_KEY_SECONDS: number;
  RATE_LIMIT_PER_ADDRESS_POINTS: number;
  RATE_LIMIT_PER_ADDRESS_SECONDS: number;
  TRUSTED_PROXY_HOPS: number;
}
