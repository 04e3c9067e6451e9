// Two projects: `unit` needs no servers; `system` (integration + end-to-end) runs against the real
// backing servers (versitygw for S3, FerretDB/MongoDB, Redis) that scripts/test.sh starts, with one
// stack of the services started by test-e2e/support/globalSetup.js.
const path = require('node:path');

// Packages published as ES modules only. Node 22 can require() them, but jest's module loader can
// only from Node 24.9 on, so swc turns them into CommonJS for the tests like the project's own code.
const ESM_ONLY = [
  'jose',
  'http-proxy-middleware',
  'httpxy',
  'is-plain-obj',
  'pkijs',
  'asn1js',
  'bytestreamjs',
  '@peculiar/utils',
  '@noble/hashes',
];

// Backing servers stopped, killed and restarted under traffic, each answer held to 5 s: timing
// bounds that other test files running beside them on a 2-core machine could move (an S3 SIGSTOP
// answered in 4.0 s alone, 5.5-6.0 s beside three other files). scripts/test.sh runs this project
// by itself after the others.
const FAULTS = ['test-e2e/outages.e2e.test.ts'];

const shared = {
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
    '/node_modules/.+\\.m?js$': [
      '<rootDir>/scripts/jest-transform.js',
      { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } },
    ],
  },
  // node_modules stay untransformed but for the ESM-only packages (pnpm's `.pnpm/<name>@<version>/` path and the link to it).
  transformIgnorePatterns: [
    `/node_modules/(?!(\\.pnpm/)?(${ESM_ONLY.map((n) => n.replace('/', '[+/]')).join('|')})[@/])`,
  ],
  // The workspace's own packages from their sources; the client's `#protocol` (its compiled copy of
  // @cp/protocol, see libs/client/package.json "imports") from the protocol's.
  moduleNameMapper: {
    '^@cp/([a-z-]+)$': path.join(__dirname, 'libs/$1/src'),
    '^#protocol$': path.join(__dirname, 'libs/protocol/src'),
    '^#protocol/(.*)$': path.join(__dirname, 'libs/protocol/src/$1'),
  },
  testEnvironment: 'node',
};

module.exports = {
  // Longest files first, from a committed table of durations where this machine has none yet.
  testSequencer: '<rootDir>/scripts/jest-sequencer.js',
  reporters: ['default', '<rootDir>/scripts/jest-summary-reporter.js'],
  // Four test files at a time, whatever the cores (jest's default is one fewer than the cores: a
  // single worker on two). The system tests spend most of their time waiting on servers, timers
  // and lease expiries, not computing: on two cores, cold, one worker took 1,041 s, three 511 s and
  // four 368 s. `--maxWorkers N` on the command line overrides it.
  maxWorkers: 4,
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
      testPathIgnorePatterns: FAULTS,
      globalSetup: '<rootDir>/test-e2e/support/globalSetup.js',
      globalTeardown: '<rootDir>/test-e2e/support/globalTeardown.js',
    },
    {
      ...shared,
      displayName: 'faults',
      rootDir: __dirname,
      testMatch: FAULTS.map((f) => `<rootDir>/${f}`),
      globalSetup: '<rootDir>/test-e2e/support/globalSetup.js',
      globalTeardown: '<rootDir>/test-e2e/support/globalTeardown.js',
    },
  ],
};
