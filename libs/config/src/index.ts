import { z } from 'zod';

export { z };

/** Thrown when an environment variable is missing or malformed; the message names it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly variable: string, problem: string) {
    super(`configuration: ${variable}: ${problem}`);
  }
}

/**
 * Parses the environment once against a schema whose keys are variable names. Libraries never
 * read process.env themselves; each service's main.ts calls this and passes typed values on.
 */
export function parseEnv<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const variable = String(issue.path[0] ?? '(environment)');
  const raw = env[variable];
  const problem = raw === undefined ? `is required (${issue.message})` : `invalid value ${JSON.stringify(raw)}: ${issue.message}`;
  throw new ConfigError(variable, problem);
}

/** Reusable variable types. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  url: () => z.string().url(),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  list: () =>
    z
      .string()
      .default('')
      .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};
