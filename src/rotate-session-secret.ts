/**
 * `npm run rotate-session-secret`: replaces the session signing secret kept in the data folder
 * (docs/architecture.md "Threat model"). Every session token was signed with the old secret, so
 * every user is signed out; API keys are not affected. Run it with the service stopped (a running
 * service keeps signing with the secret it read at start until it restarts), then start it again.
 * When JWT_SECRET or JWT_SECRET_FILE is set, the stored secret is not used: rotate by changing that
 * value instead (the command says so and changes nothing).
 *
 *   npm run rotate-session-secret                  # DATA_DIR or ./data
 *   npm run rotate-session-secret -- --data-dir /var/lib/exchange
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { AuthStore } from './adapters/store/auth-store.ts';
import { checkPrivate } from './adapters/store/data-dir.ts';
import { openDatabase } from './adapters/store/database.ts';
import { loadSettings } from './config/env.ts';

/** Rotates the stored secret of `dataDir`; returns what was done, for the operator. */
export function rotateSessionSecret(dataDir: string, fromEnvironment: boolean): string {
  if (fromEnvironment) {
    return 'JWT_SECRET or JWT_SECRET_FILE is set: the service signs with that value, not the stored one; change it and restart to sign everyone out';
  }
  const dbPath = join(dataDir, 'exchange.sqlite');
  if (!existsSync(dbPath)) throw new Error(`${dbPath} does not exist: nothing to rotate`);
  process.umask(0o077);
  checkPrivate(dataDir);
  const db = openDatabase(dbPath);
  try {
    new AuthStore(db).rotateSessionSecret(randomBytes(32));
  } finally {
    db.close();
  }
  return `session secret of ${dataDir} replaced: every session is signed out once the service (re)starts`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
  const settings = loadSettings();
  try {
    console.log(rotateSessionSecret(values['data-dir'] ?? settings.dataDir, settings.jwtSecret !== null));
  } catch (error) {
    console.error(`rotate-session-secret: ${(error as Error).message}`);
    process.exit(1);
  }
}
