// Starts one stack (gateway + services) for the whole `system` test run, against the backing
// servers scripts/test.sh started. Tests read where it listens from process.env.
const fs = require('node:fs');
const path = require('node:path');
const { startStack, ROOT } = require('../../tools/devstack/stack');

module.exports = async () => {
  const prefix = `t${Date.now().toString(36)}`;
  const logDir = path.join(ROOT, '.local', 'test-logs', prefix);
  // One origin whose pages may call the API (test-e2e/cors.e2e.test.ts); only the gateway reads it.
  const env = { LOG_LEVEL: 'warn', CORS_ALLOWED_ORIGINS: 'http://app.cors.test:5173' };
  const stack = await startStack({ prefix, logDir, env });
  globalThis.__STACK__ = stack;
  const info = {
    prefix,
    gatewayUrl: stack.gatewayUrl,
    gatewayAdminUrl: stack.gatewayAdminUrl,
    keysDir: stack.keysDir,
    receiptCertificateFile: stack.receiptCertificateFile,
    auditFile: stack.auditFile,
    logDir,
    backing: stack.backing,
    services: Object.fromEntries(stack.services.map((s) => [s.name, { url: s.url, adminUrl: s.adminUrl, pid: s.pid }])),
    authDatabase: stack.authDatabase,
    internalSecrets: stack.internalSecrets,
    sessionEnv: stack.sessionEnv,
    authEnv: stack.authEnv,
  };
  process.env.CP_TEST_STACK = JSON.stringify(info);
  Object.assign(process.env, stack.backing);
  fs.mkdirSync(path.join(ROOT, '.local'), { recursive: true });
};
