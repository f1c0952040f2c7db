// Lint rules: typescript-eslint's recommended set plus the layering rule of docs/architecture.md:
// src/core and src/pricing are pure (no I/O, no framework, no clock), so they may not import
// node built-ins, the web framework, the store or anything outside their own folders; and their
// assertions build no message unless they fail. src/runtime owns its ports (the journal, the
// chain) and imports no adapter, and so does src/gateway (the identity stores, the history read
// port, the chain port; live state through core/queries.ts), so that the composition root can
// plug in another store or a replica of the core.
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

// The gateway reaches stores and the chain through ports it owns (auth/identity-store.ts,
// history-port.ts, chain-port.ts) and live state through the core's query surface
// (core/queries.ts), so one gateway serves a local core or a replica of it. Tests may wire adapters.
const gatewayImportBan = {
  patterns: [
    { group: ['**/adapters/**'], message: 'gateway/ owns its ports (auth/identity-store.ts, history-port.ts, chain-port.ts): adapters implement them, the composition root wires them' },
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
    files: ['src/gateway/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', gatewayImportBan],
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
