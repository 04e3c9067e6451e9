import { createLogger } from '../src';

/** The redaction paths of createLogger as pino's redactor reads them (pino 10 brought its own). */
describe('createLogger', () => {
  it('masks credentials in request headers, whatever key syntax the path uses', () => {
    const lines: string[] = [];
    const logger = createLogger({ service: 'test', destination: { write: (line: string) => void lines.push(line) } });
    logger.info(
      {
        req: {
          headers: {
            authorization: 'Bearer abc',
            cookie: 'auth.sid=s1',
            'x-kontur-apikey': 'k1',
            'x-refresh-token': 'r1',
            'x-internal-secret': 'i1',
            host: 'h',
          },
        },
        headers: { authorization: 'auth.sid s2', cookie: 'auth.sid=s3', accept: '*/*' },
      },
      'request',
    );
    const line = JSON.parse(lines[0]!) as {
      service: string;
      req: { headers: Record<string, string> };
      headers: Record<string, string>;
    };
    expect(line.service).toBe('test');
    expect(line.req.headers).toEqual({
      authorization: '[redacted]',
      cookie: '[redacted]',
      'x-kontur-apikey': '[redacted]',
      'x-refresh-token': '[redacted]',
      'x-internal-secret': '[redacted]',
      host: 'h',
    });
    expect(line.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]', accept: '*/*' });
  });
});
