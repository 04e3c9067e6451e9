import type * as mongodb from 'mongodb';

/** The MongoDB driver's error classes that say the server does not answer now. */
export type MongoDriverErrors = Pick<
  typeof mongodb,
  'MongoServerSelectionError' | 'MongoNetworkError' | 'MongoNotConnectedError' | 'MongoOperationTimeoutError'
>;

/**
 * Whether an error of the driver says MongoDB does not answer: no server to select, a network
 * failure (MongoNetworkTimeoutError included, it extends MongoNetworkError), a client not
 * connected, or an operation's own deadline (MongoOperationTimeoutError): MongoDB is too slow to
 * serve now; and a socket the server ended under a command (see isDriverSocketEnded).
 *
 * Built from the driver the service imports itself (`mongoUnavailable(mongodb)`), the one
 * connectMongo loads (the workspace catalog pins a single version): service-kit loads the driver
 * only in connectMongo, which the gateway never calls.
 */
export function mongoUnavailable(driver: MongoDriverErrors): (error: unknown) => boolean {
  const types = [
    driver.MongoServerSelectionError,
    driver.MongoNetworkError,
    driver.MongoNotConnectedError,
    driver.MongoOperationTimeoutError,
  ];
  return (error) => types.some((type) => error instanceof type) || isDriverSocketEnded(error);
}

/**
 * Node's own error for a write to a socket the server closed (a MongoDB killed between two
 * commands), which the driver lets through unwrapped from its `Connection.writeCommand`: code
 * EPIPE or ECONNRESET, thrown from inside the driver's package.
 */
function isDriverSocketEnded(error: unknown): boolean {
  const e = error as { code?: unknown; stack?: unknown } | null;
  return (
    (e?.code === 'EPIPE' || e?.code === 'ECONNRESET') &&
    typeof e.stack === 'string' &&
    /[/\\]node_modules[/\\]mongodb[/\\]/.test(e.stack)
  );
}
