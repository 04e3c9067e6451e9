// The Redis users are written out in deploy/compose.yaml (where services/*/test/redisAcl.int.test.ts
// runs each service's calls as them), in the local overlay's Redis and in the Secrets examples for
// a managed Redis: all must grant the same keys and commands.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { renderKustomization, ROOT } from './support/render';

const USERS = ['default', 'content-service', 'session-service', 'auth-service'];

/** user → rules, from `--user` arguments, without the password. */
function usersIn(args: string[]): Record<string, string> {
  const users: Record<string, string> = {};
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] !== '--user') continue;
    const [name, ...rules] = args[i + 1]!.split(/\s+/);
    users[name!] = rules.filter((r) => !r.startsWith('>')).join(' ');
  }
  return users;
}

describe('Redis users', () => {
  const compose = usersIn(
    (
      parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8')) as {
        services: { redis: { command: string[] } };
      }
    ).services.redis.command,
  );

  it('compose gives each service its own user and the default user only PING', () => {
    expect(Object.keys(compose).sort()).toEqual([...USERS].sort());
    expect(compose.default).toBe('on nopass resetkeys resetchannels -@all +ping');
    expect(compose['content-service']).toMatch(
      /^on resetkeys %R~sess:\* ~up:\* ~rl:v1:\* ~wh:\* resetchannels -@all \+get \+ping /,
    );
  });

  it('the local overlay runs Redis with the same users', () => {
    const redis = renderKustomization(join('k8s', 'overlays', 'local')).find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'redis',
    )!;
    expect(usersIn(redis.spec.template.spec.containers[0].args)).toEqual(compose);
  });

  it.each(['content-service', 'session-service', 'auth-service'])(
    'the Secrets example of %s shows the same ACL and a REDIS_URL with that user',
    (service) => {
      const example = readFileSync(join(ROOT, 'k8s', 'secrets', `${service}-secrets.env.example`), 'utf8');
      const acl = new RegExp(`ACL SETUSER ${service} (.*)$`, 'm').exec(example)?.[1];
      expect(
        acl
          ?.split(/\s+/)
          .filter((r) => !r.startsWith('>'))
          .join(' '),
      ).toBe(compose[service]);
      expect(example).toMatch(new RegExp(`^REDIS_URL=rediss?://${service}:`, 'm'));
    },
  );
});
