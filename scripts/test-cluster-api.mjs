#!/usr/bin/env node
/**
 * The API suite, unchanged, against the distributed mode (`npm run test:cluster-api`): every test
 * file below runs with EXCHANGE_TEST_TARGET=cluster, so the harness's startService() starts a
 * leader and a standby core, a projector and two gateways on real PostgreSQL and NATS, behind a
 * round-robin balancer that alternates the gateways request by request (test/support/cluster-target.ts).
 * One file at a time: a deployment is five processes and two servers, and this machine may have two cores.
 *
 *   node scripts/test-cluster-api.mjs           the whole list
 *   node scripts/test-cluster-api.mjs --quick   the part `npm test` runs (most coverage per second)
 *   node scripts/test-cluster-api.mjs --list    what runs, what is left out, and why
 *   node scripts/test-cluster-api.mjs FILE…     those files of the list
 *
 * A test the list leaves out of a file it runs is skipped by name (--test-name-pattern), never edited.
 */
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import process from 'node:process';

/**
 * Files that run, each with the tests of it that cannot: `test` is a regular expression for the
 * whole name, `in` those of the suites holding it (a test runs when any ancestor's name matches,
 * so they must not), `why` one line.
 */
const BALANCER = 'the balancer\'s own HTTP parser answers first (the gateway never sees it)';
const BUDGETS = 'shared rate budgets count exactly only per gateway (adapters/postgres/rate-budgets.ts: a key may pass its limit by one allowance per gateway, refreshed every 100 ms)';
const STATS = 'reads the in-process stream hub\'s counters (service.streams.stats())';
const RUN = {
  'test/api/api-keys.test.ts': [
    { test: 'no byte of the SQLite files holds the plaintext secret; api_keys holds its SHA-256', in: ['creating and listing keys'], why: 'scans the embedded SQLite files (keys are in PostgreSQL here)' },
  ],
  'test/api/clob-options.test.ts': [],
  'test/api/clob-spot.test.ts': [],
  'test/api/clob-strategy.test.ts': [],
  'test/api/errors-and-limits.test.ts': [
    { test: '.*VALIDATION_ERROR envelope with the usual headers, connection closed', in: ['the main service', 'requests the HTTP parser refuses \\(no route ever runs\\)'], why: BALANCER },
    { test: '200, 400, 401, 404, 413 and 415 responses carry X-RateLimit-\\* and X-Api-Version: 1', in: ['headers on every response'], why: 'the gateway answers 413 and closes while the balancer still sends the body: the balancer answers 502' },
    { test: 'anonymous and authenticated requests report their own budgets', in: ['headers on every response'], why: BUDGETS },
    { test: '/openapi\\.json is OpenAPI 3\\.1 and documents exactly the routes the app serves', in: ['documentation and health'], why: 'lists the routes of the in-process app (service.app)' },
    { test: 'the 6th anonymous request in a window is 429 RATE_LIMITED with Retry-After', in: ['the anonymous budget \\(RATE_LIMIT_ANONYMOUS=5, 60 s window\\)'], why: BUDGETS },
    { test: 'authenticated requests do not draw on the spent anonymous budget|an account\'s session, cookie and keys share one budget; another account has its own', in: ['the account budget \\(RATE_LIMIT_ACCOUNT=6, RATE_LIMIT_ANONYMOUS=4\\)'], why: BUDGETS },
    { test: 'the third order action of an account is 429 whoever sends it; other requests pass', in: ['order actions have a budget of their own \\(RATE_LIMIT_ORDERS=2\\)'], why: BUDGETS },
    { test: 'a spent budget is whole again in the next window', in: ['budgets reset after the window \\(RATE_LIMIT_WINDOW_MS=500, RATE_LIMIT_ANONYMOUS=3\\)'], why: BUDGETS },
  ],
  'test/api/market-data.test.ts': [],
  'test/api/perps-maker-bound.test.ts': [],
  'test/api/perps.test.ts': [],
  'test/api/security.test.ts': [
    { test: 'created 0700, every file 0600, snapshots and journal segments included|a folder or a file open to group or others refuses the start, naming the path|as npm start runs it: exit code 2 and the path on stderr', in: ['the data folder is private to the service'], why: 'the embedded service\'s data folder and snapshots (a gateway keeps nothing there)' },
    { test: 'the folder holds no secret; the maker signs in with the key from the file', in: ['secrets from files'], why: 'reads the in-process core (service.exchange)' },
    { test: 'signs everyone out; a new sign-in works', in: ['session secret rotation'], why: 'rotates the secret in the embedded SQLite store (npm run rotate-session-secret on DATA_DIR)' },
  ],
  'test/api/session.test.ts': [],
  'test/api/siwe.test.ts': [],
  'test/api/spot-market-data.test.ts': [],
  'test/api/trade-tape.test.ts': [],
  'test/streams/book-stream.test.ts': [
    { test: 'subscribers of one \\(market, depth, interval\\) share a group; it stops with the last', in: ['GET /perps/book-stream'], why: STATS },
    { test: 'out-of-range and unknown parameters are refused with 400 before any stream opens', in: ['GET /perps/book-stream'], why: STATS },
    { test: 'a spot pair /perps/markets lists streams its book too; an option instrument is not a perps market', in: ['GET /perps/book-stream'], why: 'reads the in-process core (service.exchange)' },
    { test: 'an HTTP/1\\.0 request is refused with 400 \\(streams are chunked HTTP/1\\.1\\)', in: ['GET /perps/book-stream'], why: 'the balancer speaks HTTP/1.1 to the gateways' },
    { test: 'an eventSeq from a previous instance of the group gives a snapshot, numbered above it', in: ['resume after a reconnect'], why: STATS },
  ],
  'test/streams/options-events-stream.test.ts': [
    { test: 'no credentials, a bad token or a token in the query string: 401 before any stream', in: ['authentication'], why: STATS },
    { test: 'out-of-range or unknown parameters: 400; unknown instrument: 404; spot pair: 400', in: ['parameters'], why: STATS },
  ],
  'test/streams/perps-private.test.ts': [
    { test: 'no credentials, a bad token, or a token in the query string: 401 before any stream', in: ['authentication of private streams'], why: STATS },
  ],
  'test/streams/trades-stream.test.ts': [
    { test: 'a snapshot without resume=true, for an unknown Last-Event-ID, and from a previous instance of the group', in: ['resume after a reconnect'], why: STATS },
    { test: 'the per-address stream cap applies; the refused stream opens once a slot is free', in: ['opening'], why: 'SSE_MAX_PER_IP holds per gateway: the second stream opens on the other one (and the test then reads it as a reply, forever)' },
  ],
};

/**
 * Part of RUN that `npm test` runs, about 3 minutes here: the most tests per second of a
 * deployment's start-up (sign-in, sessions and API keys across gateways; perp trading with
 * read-your-writes across them).
 */
const QUICK = ['test/api/siwe.test.ts', 'test/api/api-keys.test.ts', 'test/api/perps.test.ts'];

/** Files left out, one line each on why. */
const EXCLUDED = {
  'test/api/board.test.ts': 'a manual clock and clock.tick submitted to the in-process sequencer',
  'test/api/cancel-after.test.ts': 'a manual clock and clock.tick submitted to the in-process sequencer',
  'test/api/clock-step.test.ts': 'moves the system clock the in-process service reads (SteadyClock injected)',
  'test/api/connection-limits.test.ts': 'TCP connection caps per process and per peer address: behind the balancer every gateway sees one peer holding pooled connections',
  'test/api/default-origin.test.ts': 'PUBLIC_ORIGIN defaults to where the process listens: each gateway\'s own port, not the balancer\'s (behind one, an operator sets PUBLIC_ORIGIN)',
  'test/api/durable-reads.test.ts': 'holds the in-process journal writer (holdJournal) and restarts on its SQLite folder',
  'test/api/dvol-history.test.ts': 'MARKET_MAKER=on alone starts no maker in this mode (it trades through MARKET_MAKER_GATEWAY with MARKET_MAKER_KEY), so no board is fitted and its before hook waits 30 s in vain',
  'test/api/feed-clock.test.ts': 'an injected clock and reads of the in-process index',
  'test/api/history-retention.test.ts': 'an injected clock driving the SQLite journal worker\'s pruning, restarts on its folder',
  'test/api/observability.test.ts': 'metrics count per gateway process, and two suites read the in-process log stream from their before hook (its X-Request-Id and /metrics access tests pass here: 7 of 12)',
  'test/api/perps-amend.test.ts': 'a held clock (frozenPerpsService) injected into the in-process service',
  'test/api/perps-leverage.test.ts': 'a held clock (frozenPerpsService) injected into the in-process service',
  'test/api/perps-lifecycle.test.ts': 'a manual clock and clock.tick submitted to the in-process sequencer',
  'test/api/perps-preview-estimate.test.ts': 'a held clock (frozenPerpsService) injected into the in-process service',
  'test/api/perps-reads.test.ts': 'an injected clock offset (the service starts with it; one test moves it)',
  'test/api/perps-rejections.test.ts': 'its second service starts with an injected clock (the stale-index tests move it)',
  'test/api/price-candles.test.ts': 'a manual clock and clock.tick submitted to the in-process sequencer',
  'test/api/startup.test.ts': 'writes an embedded SQLite journal and starts the embedded service on it',
  'test/api/udf.test.ts': 'a manual clock and clock.tick submitted to the in-process sequencer',
  'test/api/wallet.test.ts': 'drives the in-process simulated chain object (reorgs) and subscribes to the in-process sequencer',
  'test/streams/balances-stream.test.ts': 'each test reads the in-process hub\'s counters, holds the journal writer, stops the in-process core or ends streams by a graceful shutdown (a deployment\'s close is kill -9)',
  'test/streams/board-stream.test.ts': 'holds the in-process journal writer (holdJournal) and reads the hub\'s counters in its core tests',
  'test/streams/sse.test.ts': 'unit tests of the SSE writer and book mirrors: no service to point at a cluster',
  'test/streams/streams-fair-share.test.ts': 'stream caps per process and the in-process hub\'s counters (each gateway holds its own caps)',
  'test/streams/streams-limits.test.ts': 'stream caps per process and the in-process hub\'s counters and slow-consumer drops (each gateway holds its own caps)',
};

const args = new Set(process.argv.slice(2));
const named = [...args].filter((a) => !a.startsWith('--'));
for (const file of named) if (!(file in RUN)) throw new Error(`${file} is not in the list (${EXCLUDED[file] ?? 'not an API test file'})`);
const files = named.length > 0 ? named : args.has('--quick') ? QUICK : Object.keys(RUN);

if (args.has('--list')) {
  for (const file of files) {
    console.log(`run   ${file}`);
    for (const skip of RUN[file]) console.log(`        skip /${skip.test}/: ${skip.why}`);
  }
  for (const [file, why] of Object.entries(EXCLUDED)) console.log(`leave ${file}: ${why}`);
  process.exit(0);
}

/**
 * Runs every test but the skipped ones: a test runs when its name or an ancestor's matches, so the
 * pattern refuses the skipped names and their suites' (whose other tests then match one by one),
 * and the runner's own root test, `<root>`, which would match and run everything.
 */
function namePattern(skipped) {
  if (skipped.length === 0) return [];
  const refused = [...new Set(skipped.flatMap((s) => [s.test, ...s.in].map((name) => `(?:${name})`)))];
  return [`--test-name-pattern=^(?!<root>$)(?!(?:${refused.join('|')})$)`];
}

const skipped = files.flatMap((file) => RUN[file]);
const started = Date.now();
const run = spawnSync(process.execPath, [
  '--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...namePattern(skipped), ...files,
], { stdio: 'inherit', env: { ...process.env, EXCHANGE_TEST_TARGET: 'cluster' } });
console.log(`cluster API run: ${files.length} files in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(run.status ?? 1);
