/**
 * What a gateway of the distributed mode needs to share identity and rate budgets with the other
 * gateways, opened together on DATABASE_URL for the composition root (docs/architecture.md
 * "Distributed mode: identity and rate budgets"): the identity store, its change feed, the request
 * budgets and the sign-in counts, on one pool, plus the session signing secret made once for all.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { postgresPool } from './database.ts';
import { PostgresIdentityChanges, type IdentityChangesOptions } from './identity-changes.ts';
import { PostgresIdentityStore } from './identity-store.ts';
import { PostgresRateBudgets, PostgresSignInCounts, type SharedBudgetOptions } from './rate-budgets.ts';

/** The `secrets` row of the session signing secret (the embedded store names its row the same). */
export const SESSION_SECRET = 'jwt';

export interface GatewayIdentity {
  readonly pool: pg.Pool;
  readonly store: PostgresIdentityStore;
  readonly changes: PostgresIdentityChanges;
  readonly rateBudgets: PostgresRateBudgets;
  readonly signInCounts: PostgresSignInCounts;
  /** `JWT_SECRET` when set, else the database's, made by the first gateway that asks. */
  sessionSecret(jwtSecret: string | null): Promise<Buffer>;
  /** Sends the counted budgets, stops listening and closes the pool. */
  close(): Promise<void>;
}

export interface GatewayIdentityOptions {
  /** RATE_LIMIT_WINDOW_MS. */
  readonly windowMs: number;
  readonly budgets?: Omit<SharedBudgetOptions, 'windowMs'>;
  readonly changes?: IdentityChangesOptions;
  /** Connections of the pool (the LISTEN connection is one more). */
  readonly poolSize?: number;
}

/** Opens them on a migrated database (migratePostgres first); resolves once the change feed listens. */
export async function openGatewayIdentity(databaseUrl: string, options: GatewayIdentityOptions): Promise<GatewayIdentity> {
  const pool = postgresPool(databaseUrl, options.poolSize ?? 10);
  let changes: PostgresIdentityChanges;
  try {
    changes = await PostgresIdentityChanges.start(databaseUrl, pool, options.changes);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const store = new PostgresIdentityStore(pool);
  const rateBudgets = new PostgresRateBudgets(pool, { ...options.budgets, windowMs: options.windowMs });
  return {
    pool,
    store,
    changes,
    rateBudgets,
    signInCounts: new PostgresSignInCounts(pool),
    sessionSecret: async (jwtSecret) =>
      jwtSecret !== null ? Buffer.from(jwtSecret) : store.secret(SESSION_SECRET, () => randomBytes(32)),
    close: async () => {
      await rateBudgets.close().catch(() => undefined);
      await changes.close();
      await pool.end();
    },
  };
}
