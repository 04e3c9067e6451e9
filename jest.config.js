// Two projects: `unit` needs no servers; `system` (integration + end-to-end) runs against the real
// backing servers (versitygw for S3, FerretDB/MongoDB, Redis) that scripts/test.sh starts, with one
// stack of the services started by test-e2e/support/globalSetup.js.
const path = require('node:path');

const shared = {
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  moduleNameMapper: { '^@cp/([a-z-]+)$': path.join(__dirname, 'libs/$1/src') },
  testEnvironment: 'node',
};

module.exports = {
  reporters: ['default', '<rootDir>/scripts/jest-summary-reporter.js'],
  testTimeout: 300_000,
  projects: [
    {
      ...shared,
      displayName: 'unit',
      rootDir: __dirname,
      testMatch: ['<rootDir>/{libs,services}/*/test/**/*.test.ts', '<rootDir>/deploy/test/**/*.test.ts'],
      testPathIgnorePatterns: ['\\.int\\.test\\.ts$', '/node_modules/'],
    },
    {
      ...shared,
      displayName: 'system',
      rootDir: __dirname,
      testMatch: ['<rootDir>/{libs,services}/*/test/**/*.int.test.ts', '<rootDir>/test-e2e/**/*.e2e.test.ts'],
      globalSetup: '<rootDir>/test-e2e/support/globalSetup.js',
      globalTeardown: '<rootDir>/test-e2e/support/globalTeardown.js',
    },
  ],
};
