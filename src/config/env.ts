/**
 * Service settings from environment variables (decisions.md "Running the service"), with a
 * `.env` file in the working directory read first when present. Every value is checked here, at
 * start, and a bad one stops the service with a message naming the variable: a typo must never
 * silently fall back to a default in production.
 *
 * Names beyond decisions.md (TRUST_PROXY, LOG_LEVEL, RATE_LIMIT_*, JOURNAL_*, SNAPSHOT_*, HISTORY_*, *_FILE,
 * MARKET_MAKER_KEY) are additive and documented in
 * the README's configuration table.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface Settings {
  /**
   * Which part of the exchange this process runs (docs/deploy.md): `all` is the embedded default
   * (one process, SQLite); `core`, `gateway` and `projector` (the history writer) are the
   * distributed mode, on `distributed`.
   */
  readonly role: 'all' | 'core' | 'gateway' | 'projector';
  /** The distributed mode's servers (NATS_URL, DATABASE_URL): required by its roles (a projector uses only the database), refused by `all`. */
  readonly distributed: { readonly natsUrl: string; readonly natsSecurity: NatsSecurity; readonly databaseUrl: string } | null;
  /** The simulated chain's SQLite file (default DATA_DIR/chain.sqlite); processes of one host may share it. */
  readonly simulatedChainFile: string | null;
  /** The gateway the market maker trades through when this process has none of its own (ROLE=core). */
  readonly marketMakerGateway: string | null;
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly publicOrigin: string;
  readonly chainId: number;
  /** Session signing secret from JWT_SECRET or JWT_SECRET_FILE; when absent one is generated and kept under DATA_DIR. */
  readonly jwtSecret: string | null;
  /** The reference market maker's private key (0x + 64 hex) from MARKET_MAKER_KEY(_FILE); else generated and kept under DATA_DIR. */
  readonly marketMakerKey: `0x${string}` | null;
  /** Enables /admin/* when set. */
  readonly adminToken: string | null;
  readonly feed: 'simulated' | 'push';
  readonly marketMaker: boolean;
  readonly chainBlockMs: number;
  readonly depositConfirmations: number;
  /** The newest confirmed deposits and withdrawals re-checked for a reorg past the confirmation depth. */
  readonly chainReorgWatch: number;
  /** The longest wait between two payout attempts of a withdrawal the hot wallet could not cover. */
  readonly withdrawalRetryMaxDelayMs: number;
  readonly fundingIntervalMs: number;
  /** Peer addresses whose X-Forwarded-For is believed (empty: trust no proxy). */
  readonly trustProxy: readonly string[];
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  readonly rateLimit: {
    readonly windowMs: number;
    readonly anonymousPerWindow: number;
    readonly accountPerWindow: number;
    readonly orderActionsPerWindow: number;
    /** Every request of a client address (IPv6: /64), signed in or not, beside its account's budget. */
    readonly addressPerWindow: number;
    /** New sessions (SIWE sign-ins) per client address per hour. */
    readonly signInsPerHour: number;
  };
  /** SSE heartbeat period (about 15 s per the contract; tests shorten it). */
  readonly heartbeatMs: number;
  /** Stream limits (gateway/streams): connection caps, per-connection buffer, credential re-check. */
  readonly streams: {
    readonly maxConnections: number;
    readonly maxPerIp: number;
    readonly maxPerAccount: number;
    readonly maxOptionStreamsPerAccount: number;
    readonly maxBufferBytes: number;
    readonly authRecheckMs: number;
  };
  /** Open TCP connections (gateway/connection-limits.ts): in all, and per client address (IPv6: /64; TRUST_PROXY peers excepted). */
  readonly connections: {
    readonly maxTotal: number;
    readonly maxPerAddress: number;
  };
  /** An index input older than this is unavailable (no index, no mark). */
  readonly indexMaxAgeMs: number;
  /** Period of the core's clock tick (marks, triggers, listings, funding, expiry). */
  readonly tickMs: number;
  /** Largest step of the system clock the service clock takes while running (runtime/steady-clock.ts). */
  readonly clockMaxStepMs: number;
  /** Group commit (runtime/sequencer.ts): when a batch goes to the journal worker. */
  readonly journal: {
    /** Commands waiting that send a batch at once rather than at the end of the event-loop turn. */
    readonly earlyFlushAt: number;
    /** Batches sent to the journal worker and not yet durable, at most. */
    readonly maxInFlight: number;
    /** Journaled commands whose history projection may wait while appends keep arriving. */
    readonly maxProjectionLag: number;
    /**
     * A replay that does not reproduce the recorded balances: `strict` stops the start, `warn` logs
     * the accounts and serves the replayed state (an operator's deliberate choice after a change of
     * the core's behaviour).
     */
    readonly replayCheck: 'strict' | 'warn';
  };
  /** Core snapshots (docs/architecture.md "Snapshots"): when one is written, how many are kept. */
  readonly snapshots: {
    readonly everyCommands: number;
    readonly everyMs: number;
    readonly keep: number;
    /** Archived journal segments older than this are deleted once no kept snapshot needs them; 0 keeps them all. */
    readonly segmentRetentionMs: number;
  };
  /** How long orders that ended without a fill stay in the history (docs/architecture.md "History"). */
  readonly history: {
    /** Orders a client placed itself. */
    readonly unfilledOrderRetentionMs: number;
    /** Orders placed by a bulk quote (with a quoteId), replaced on every re-quote. */
    readonly unfilledQuoteRetentionMs: number;
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadSettings(env: Env = readEnv()): Settings {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST;
  const publicOrigin = origin(env.PUBLIC_ORIGIN === undefined || env.PUBLIC_ORIGIN === '' ? listeningOrigin(host, port) : env.PUBLIC_ORIGIN);
  const jwtSecret = secret(env, 'JWT_SECRET');
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 bytes (RFC 8725 3.5: HMAC keys need real entropy)');
  }
  const makerKey = secret(env, 'MARKET_MAKER_KEY');
  if (makerKey !== null && !/^(0x)?[0-9a-fA-F]{64}$/.test(makerKey)) {
    throw new ConfigError('MARKET_MAKER_KEY must be a private key of 32 bytes in hex (64 hex digits, optionally 0x-prefixed)');
  }
  const adminToken = env.ADMIN_TOKEN ?? null;
  if (adminToken !== null && adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN must be at least 16 characters');
  const feed = oneOf(env, 'FEED', ['simulated', 'push'] as const, 'simulated');
  // The push feed is POST /admin/index: without the admin routes no price could ever arrive.
  if (feed === 'push' && adminToken === null) throw new ConfigError('FEED=push needs ADMIN_TOKEN (prices arrive through POST /admin/index)');
  const fundingIntervalMs = int(env, 'FUNDING_INTERVAL_MS', 3_600_000, 1000, 7 * 86_400_000);
  const tickMs = int(env, 'TICK_MS', 1000, 10, 60_000);
  // Funding is paid on the first tick past a funding time, and a funding time no tick passed through
  // (downtime) is skipped: the clock must tick many times per interval, or it would skip them all.
  if (fundingIntervalMs < 10 * tickMs) {
    throw new ConfigError(`FUNDING_INTERVAL_MS (${fundingIntervalMs}) must be at least 10 × TICK_MS (${tickMs})`);
  }
  const streams = {
    maxConnections: int(env, 'SSE_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    maxPerIp: int(env, 'SSE_MAX_PER_IP', 600, 1, 1_000_000),
    maxPerAccount: int(env, 'SSE_MAX_PER_ACCOUNT', 20, 1, 1_000_000),
    maxOptionStreamsPerAccount: int(env, 'SSE_MAX_OPTION_STREAMS_PER_ACCOUNT', 500, 1, 1_000_000),
    maxBufferBytes: int(env, 'SSE_MAX_BUFFER_BYTES', 262_144, 1024, 67_108_864),
    authRecheckMs: int(env, 'SSE_AUTH_RECHECK_MS', 1000, 50, 60_000),
  };
  const role = oneOf(env, 'ROLE', ['all', 'core', 'gateway', 'projector'] as const, 'all');
  // A core's maker is funded through the gateway's admin routes and must keep one key across cores.
  if (nonEmpty(env.MARKET_MAKER_GATEWAY) !== null && (makerKey === null || adminToken === null)) {
    throw new ConfigError('MARKET_MAKER_GATEWAY needs MARKET_MAKER_KEY (every core trades as the same maker) and ADMIN_TOKEN (the maker is funded through the admin routes)');
  }
  return {
    role,
    distributed: distributedServers(env, role),
    simulatedChainFile: nonEmpty(env.SIMULATED_CHAIN_FILE),
    marketMakerGateway: gatewayUrl(nonEmpty(env.MARKET_MAKER_GATEWAY)),
    port,
    host,
    dataDir: env.DATA_DIR ?? './data',
    publicOrigin,
    chainId: int(env, 'CHAIN_ID', 1, 1, 2 ** 53 - 1),
    jwtSecret,
    marketMakerKey: makerKey === null ? null : `0x${makerKey.replace(/^0x/, '').toLowerCase()}`,
    adminToken,
    feed,
    marketMaker: oneOf(env, 'MARKET_MAKER', ['on', 'off'] as const, 'on') === 'on',
    chainBlockMs: int(env, 'CHAIN_BLOCK_MS', 1000, 10, 3_600_000),
    depositConfirmations: int(env, 'DEPOSIT_CONFIRMATIONS', 3, 1, 1000),
    chainReorgWatch: int(env, 'CHAIN_REORG_WATCH', 256, 0, 100_000),
    withdrawalRetryMaxDelayMs: int(env, 'WITHDRAWAL_RETRY_MAX_DELAY_MS', 300_000, 1000, 86_400_000),
    fundingIntervalMs,
    trustProxy: (env.TRUST_PROXY ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const, 'info'),
    rateLimit: {
      windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 10_000, 100, 3_600_000),
      anonymousPerWindow: int(env, 'RATE_LIMIT_ANONYMOUS', 200, 1, 1e9),
      accountPerWindow: int(env, 'RATE_LIMIT_ACCOUNT', 1000, 1, 1e9),
      orderActionsPerWindow: int(env, 'RATE_LIMIT_ORDERS', 1000, 1, 1e9),
      addressPerWindow: int(env, 'RATE_LIMIT_IP', 5000, 1, 1e9),
      signInsPerHour: int(env, 'RATE_LIMIT_SIGNIN_PER_HOUR', 60, 1, 1e9),
    },
    heartbeatMs: int(env, 'SSE_HEARTBEAT_MS', 15_000, 10, 600_000),
    streams,
    connections: connectionLimits(env, streams),
    indexMaxAgeMs: int(env, 'INDEX_MAX_AGE_MS', 10_000, 100, 86_400_000),
    tickMs,
    clockMaxStepMs: int(env, 'CLOCK_MAX_STEP_MS', 60_000, 100, 86_400_000),
    journal: {
      earlyFlushAt: int(env, 'JOURNAL_EARLY_FLUSH_AT', 16, 1, 65_536),
      maxInFlight: int(env, 'JOURNAL_MAX_IN_FLIGHT', 4, 1, 64),
      maxProjectionLag: int(env, 'JOURNAL_MAX_PROJECTION_LAG', 1024, 1, 65_536),
      replayCheck: oneOf(env, 'JOURNAL_REPLAY_CHECK', ['strict', 'warn'] as const, 'strict'),
    },
    snapshots: {
      everyCommands: int(env, 'SNAPSHOT_EVERY_COMMANDS', 20_000, 100, 1e9),
      everyMs: int(env, 'SNAPSHOT_EVERY_MS', 120_000, 1000, 7 * 86_400_000),
      keep: int(env, 'SNAPSHOT_KEEP', 3, 1, 1000),
      segmentRetentionMs: int(env, 'JOURNAL_SEGMENT_RETENTION_MS', 0, 0, 100 * 365 * 86_400_000),
    },
    history: {
      unfilledOrderRetentionMs: int(env, 'HISTORY_UNFILLED_ORDER_RETENTION_MS', 3 * 86_400_000, 1000, 3650 * 86_400_000),
      unfilledQuoteRetentionMs: int(env, 'HISTORY_UNFILLED_QUOTE_RETENTION_MS', 3_600_000, 1000, 3650 * 86_400_000),
    },
  };
}

/** NATS_URL and DATABASE_URL: both required by the distributed roles, refused by the embedded one. */
function distributedServers(env: Env, role: Settings['role']): Settings['distributed'] {
  const natsUrl = nonEmpty(env.NATS_URL);
  const databaseUrl = nonEmpty(env.DATABASE_URL);
  if (role === 'all') {
    const natsSettings = ['NATS_TOKEN', 'NATS_TOKEN_FILE', 'NATS_USER', 'NATS_PASSWORD', 'NATS_PASSWORD_FILE', 'NATS_TLS_CA_FILE', 'NATS_TLS_CERT_FILE', 'NATS_TLS_KEY_FILE'];
    const stray = natsSettings.find((name) => nonEmpty(env[name]) !== null);
    if (stray !== undefined) throw new ConfigError(`${stray} is a setting of the distributed mode: set ROLE=core or gateway with NATS_URL and DATABASE_URL`);
    if (natsUrl !== null || databaseUrl !== null) throw new ConfigError('NATS_URL and DATABASE_URL select the distributed mode: set ROLE=core, gateway or projector with them');
    return null;
  }
  if (natsUrl === null || databaseUrl === null) throw new ConfigError(`ROLE=${role} needs NATS_URL and DATABASE_URL (docs/deploy.md)`);
  if (!natsUrl.split(',').every((u) => /^nats:\/\/\S+$/.test(u.trim()))) throw new ConfigError('NATS_URL must be nats:// URLs, comma-separated');
  if (!/^postgres(ql)?:\/\/[^\s]+$/.test(databaseUrl)) throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  return { natsUrl, natsSecurity: natsSecurity(env), databaseUrl };
}

/**
 * How a process proves itself to NATS and checks the server (docs/deploy.md "What each server must
 * provide"): a token, or a user and password, each secret from its variable or its `_FILE`; and TLS,
 * verifying the server against NATS_TLS_CA_FILE, with a client certificate when the server asks for one.
 */
export interface NatsSecurity {
  readonly token: string | null;
  readonly user: string | null;
  readonly password: string | null;
  readonly tls: { readonly caFile: string; readonly certFile: string | null; readonly keyFile: string | null } | null;
}

function natsSecurity(env: Env): NatsSecurity {
  const token = secret(env, 'NATS_TOKEN');
  const user = nonEmpty(env.NATS_USER);
  const password = secret(env, 'NATS_PASSWORD');
  if (token !== null && (user !== null || password !== null)) throw new ConfigError('set NATS_TOKEN or NATS_USER with NATS_PASSWORD, not both');
  if ((user === null) !== (password === null)) throw new ConfigError('NATS_USER and NATS_PASSWORD go together');
  const caFile = nonEmpty(env.NATS_TLS_CA_FILE);
  const certFile = nonEmpty(env.NATS_TLS_CERT_FILE);
  const keyFile = nonEmpty(env.NATS_TLS_KEY_FILE);
  if ((certFile === null) !== (keyFile === null)) throw new ConfigError('NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together');
  if (certFile !== null && caFile === null) throw new ConfigError('a NATS client certificate needs NATS_TLS_CA_FILE (the server is verified first)');
  for (const [name, file] of [['NATS_TLS_CA_FILE', caFile], ['NATS_TLS_CERT_FILE', certFile], ['NATS_TLS_KEY_FILE', keyFile]] as const) {
    if (file !== null && !existsSync(file)) throw new ConfigError(`${name}: ${file} does not exist`);
  }
  return { token, user, password, tls: caFile === null ? null : { caFile, certFile, keyFile } };
}

/** MARKET_MAKER_GATEWAY: the base URL of a gateway (http or https, no path). */
function gatewayUrl(raw: string | null): string | null {
  if (raw === null) return null;
  const url = URL.canParse(raw) ? new URL(raw) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/') {
    throw new ConfigError(`MARKET_MAKER_GATEWAY must be a gateway's base URL such as http://10.0.0.5:8080, got ${JSON.stringify(raw)}`);
  }
  return url.origin;
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value.trim() === '' ? null : value.trim();
}

/**
 * A secret from `NAME` or from the file `NAME_FILE` names (one of the two; the file's trailing newline
 * dropped), or null when neither is set. A file keeps the secret out of the process environment.
 */
function secret(env: Env, name: string): string | null {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if (direct !== undefined && direct !== '' && file !== undefined && file !== '') {
    throw new ConfigError(`set ${name} or ${name}_FILE, not both`);
  }
  if (file === undefined || file === '') return direct === undefined || direct === '' ? null : direct;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new ConfigError(`${name}_FILE: ${file} is empty`);
  return value;
}

/**
 * TCP connection caps. Every stream holds a connection, so each must stay above its stream cap with
 * room for requests: by default 20,000 in all and 1,000 per address, raised with the stream caps
 * (2 × SSE_MAX_CONNECTIONS, SSE_MAX_PER_IP + 400); a value at or below its stream cap is refused.
 */
function connectionLimits(env: Env, streams: { maxConnections: number; maxPerIp: number }): Settings['connections'] {
  const maxTotal = int(env, 'MAX_CONNECTIONS', Math.max(20_000, 2 * streams.maxConnections), 1, 10_000_000);
  const maxPerAddress = int(env, 'MAX_CONNECTIONS_PER_IP', Math.max(1000, streams.maxPerIp + 400), 1, 10_000_000);
  if (maxTotal <= streams.maxConnections) {
    throw new ConfigError(`MAX_CONNECTIONS (${maxTotal}) must be above SSE_MAX_CONNECTIONS (${streams.maxConnections}): every stream holds a connection`);
  }
  if (maxPerAddress <= streams.maxPerIp) {
    throw new ConfigError(`MAX_CONNECTIONS_PER_IP (${maxPerAddress}) must be above SSE_MAX_PER_IP (${streams.maxPerIp}): every stream holds a connection`);
  }
  return { maxTotal, maxPerAddress };
}

function readEnv(): Env {
  if (existsSync('.env')) process.loadEnvFile('.env');
  return process.env;
}

function int(env: Env, name: string, fallback: number, lo: number, hi: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < lo || value > hi) throw new ConfigError(`${name} must be between ${lo} and ${hi}, got ${raw}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

/**
 * PUBLIC_ORIGIN's default: where the service listens, `http://HOST:PORT` (so a browser on the
 * default start's `http://127.0.0.1:8080` signs in: the SIWE domain and the Origin rule both check
 * this one origin), and `http://localhost:PORT` when HOST is a wildcard (0.0.0.0, ::), which names
 * no address a client would use.
 */
function listeningOrigin(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '::' || host === '[::]') return `http://localhost:${port}`;
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

function origin(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_ORIGIN must be an origin such as https://exchange.example, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('PUBLIC_ORIGIN must be http(s)');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new ConfigError('PUBLIC_ORIGIN must be a bare origin (scheme, host, optional port)');
  }
  return url.origin;
}
