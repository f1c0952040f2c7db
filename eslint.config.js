// Lint rules: typescript-eslint's recommended set plus the layering rule of docs/architecture.md:
// src/core and src/pricing are pure (no I/O, no framework, no clock), so they may not import
// node built-ins, the web framework, the store or anything outside their own folders; and their
// assertions build no message unless they fail. src/runtime owns its ports (the journal, the
// chain) and imports no adapter, and so does src/gateway/auth (the identity stores), so that the
// composition root can plug in another store.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const pureImportBan = {
  patterns: [
    { group: ['node:*', 'fs', 'net', 'http', 'https', 'child_process', 'timers'], message: 'core/pricing are pure: no I/O or timers' },
    { group: ['fastify', '@fastify/*', 'better-sqlite3', 'viem', 'viem/*', 'jose'], message: 'core/pricing import no frameworks or drivers' },
    { group: ['**/gateway/**', '**/adapters/**', '**/agents/**', '**/config/**'], message: 'dependencies point inward' },
  ],
};

// The sequencer and its drivers depend on ports they own (runtime/journal-port.ts,
// runtime/chain-port.ts); adapters implement them. Tests may wire real adapters.
const runtimeImportBan = {
  patterns: [
    { group: ['**/adapters/**'], message: 'runtime/ owns its ports (journal-port.ts, chain-port.ts): adapters implement them, the composition root wires them' },
  ],
};

// Sign-in, sessions and API keys reach their records through gateway/auth/identity-store.ts. The
// rest of gateway/ still reads the history projections and the simulated chain from adapters/
// (issue 31, the query surface), so the ban covers auth/ only until that seam exists.
const identityImportBan = {
  patterns: [
    { group: ['**/adapters/**'], message: 'gateway/auth owns its ports (identity-store.ts): adapters implement them, the composition root wires them' },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules', 'data', 'dist', 'coverage', 'sdk/dist', 'web/dist', 'test-artifacts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['src/core/**/*.ts', 'src/pricing/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', pureImportBan],
      // assert()'s message is built on every call: one naming values goes behind an if (assert.ts fail()).
      'no-restricted-syntax': ['error', {
        selector: "CallExpression[callee.name='assert'] > TemplateLiteral.arguments:nth-child(2)",
        message: 'a template message is built even when the assertion holds: write if (!cond) fail(`...`)',
      }],
    },
  },
  {
    files: ['src/runtime/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', runtimeImportBan],
    },
  },
  {
    files: ['src/gateway/auth/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', identityImportBan],
    },
  },
  {
    files: ['src/pricing/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [...pureImportBan.patterns, { group: ['**/core/exchange*', '**/core/linear/**', '**/core/clob/**'], message: 'pricing does not depend on the engines' }] }],
    },
  },
);
