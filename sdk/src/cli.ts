#!/usr/bin/env node
/**
 * `exchange`: the command line on top of the SDK. Signs in with SIWE from EXCHANGE_PRIVATE_KEY (or
 * uses EXCHANGE_API_KEY) against EXCHANGE_URL, prints human-readable tables, or JSON with `--json`
 * (one JSON document per command; one JSON line per event for `watch`). Run `exchange help`.
 *
 * The session is kept between runs in EXCHANGE_SESSION_DIR (default ~/.cache/exchange, files 0600;
 * `off` keeps none), so that a run does not open a new session each time (the service allows 60
 * new sessions per address per hour).
 */
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { privateKeyToAccount } from 'viem/accounts';
import type { Hex } from 'viem';
import type { Session } from './auth.ts';
import { LocalBook, type BookFrame } from './book.ts';
import { ExchangeClient, type Order } from './client.ts';
import { ApiError, NetworkError } from './http.ts';
import { StreamError, type StreamEvent } from './sse.ts';
import { record, table } from './table.ts';
import type { StreamPath } from './types.ts';

export interface Io {
  readonly env: Record<string, string | undefined>;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Ends a `watch` (Ctrl-C in a terminal). */
  readonly signal?: AbortSignal;
}

const HELP = `exchange — command line client of the exchange (SDK: @exchange/sdk)

Usage: exchange [--url URL] [--json] [--verbose] <command> [arguments]

Environment:
  EXCHANGE_URL           service origin (default http://127.0.0.1:8080)
  EXCHANGE_PRIVATE_KEY   0x + 64 hex: sign in with Ethereum (SIWE)
  EXCHANGE_API_KEY       an API key secret (x-api-key), instead of a private key
  EXCHANGE_ADMIN_TOKEN   operator token, for \`deposit\` on the simulated chain
  EXCHANGE_SESSION_DIR   where sessions are kept between runs (default ~/.cache/exchange; off: none)

Market data (no credentials):
  markets                               perp, future and spot markets
  book <market> [--depth N]             order book (options: the instrument id)
  board [--underlying BTC]              option board: quotes, marks, IV, delta
  instruments [--underlying BTC]        option instruments

Account:
  whoami                                address and session
  balances                              buckets and assets
  deposit-address                       where to send USDC
  deposit <amount>                      simulated chain deposit (needs EXCHANGE_ADMIN_TOKEN)
  transfer <amount> <from> <to>         move USDC between wallet, perps, options, spot
  withdraw <amount>                     withdraw from the wallet bucket
  orders [--open] [--limit N]           recent (or resting) orders, both venues
  place <market> <buy|sell> <qty> [price] [--market] [--ioc|--fok] [--post-only] [--reduce-only]
        [--client-id ID]                a fresh clientOrderId is made when none is given
  amend <orderId> [--price P] [--quantity Q]     options and spot orders
  cancel <orderId> | cancel --all [--market M]
  positions                             open positions, both venues
  close <market> [--quantity Q] [--price P]      close a perp or future position (market order without --price)
  quotes <market> [--bid PRICE@QTY]... [--ask PRICE@QTY]... [--quote-id ID]
                                        replace your ladder on a market (bulk quote, cancelAll)
  api-keys [list] | api-keys create <name> <read|trade> [--expires-days N] | api-keys revoke <id>

Streams (Ctrl-C to stop; --count N stops after N events):
  watch book <market> [--depth N]       live order book (public)
  watch trades <market>                 the public trade tape of any market (public)
  watch board [--underlying BTC]        option board snapshots (public)
  watch events <market>                 your fills, positions and the book on one market
  watch user                            your fills and positions on every market
  watch balances                        your balances across the four buckets
  watch options <instrument>            an option's book and trade tape
  watch </stream/path> [key=value]...   any other stream route of the OpenAPI document

Amounts, prices and sizes are decimal strings, passed through exactly.`;

const OPTIONS = {
  url: { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  depth: { type: 'string' },
  underlying: { type: 'string' },
  open: { type: 'boolean' },
  limit: { type: 'string' },
  market: { type: 'boolean' },
  ioc: { type: 'boolean' },
  fok: { type: 'boolean' },
  'post-only': { type: 'boolean' },
  'reduce-only': { type: 'boolean' },
  'client-id': { type: 'string' },
  price: { type: 'string' },
  quantity: { type: 'string' },
  all: { type: 'boolean' },
  bid: { type: 'string', multiple: true },
  ask: { type: 'string', multiple: true },
  'quote-id': { type: 'string' },
  'expires-days': { type: 'string' },
  count: { type: 'string' },
} as const;

class UsageError extends Error {}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  const [command, ...args] = positionals;
  if (command === undefined || command === 'help' || flags.help === true) {
    io.out(HELP);
    return command === undefined && flags.help !== true ? 2 : 0;
  }
  const print = (human: () => string, json: unknown) => io.out(flags.json === true ? JSON.stringify(json, null, 2) : human());
  const client = makeClient(flags.url ?? io.env.EXCHANGE_URL ?? 'http://127.0.0.1:8080', io, flags.verbose === true);
  try {
    await run(command, args, flags, client, print, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message} (exchange help)`);
      return 2;
    }
    if (error instanceof ApiError || error instanceof NetworkError || error instanceof StreamError || error instanceof TypeError) {
      io.err(`error: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];
type Print = (human: () => string, json: unknown) => void;

function makeClient(baseUrl: string, io: Io, verbose: boolean): ExchangeClient {
  const key = io.env.EXCHANGE_PRIVATE_KEY?.trim();
  const onRetry = verbose
    ? (r: { method: string; path: string; attempt: number; delayMs: number; reason: string }) =>
        io.err(`retry ${r.method} ${r.path} after ${r.reason} in ${r.delayMs} ms (attempt ${r.attempt})`)
    : undefined;
  if (key === undefined || key === '') {
    const apiKey = io.env.EXCHANGE_API_KEY?.trim();
    return new ExchangeClient({ baseUrl, apiKey: apiKey === '' ? undefined : apiKey, onRetry });
  }
  const signer = (key.startsWith('0x') ? key : `0x${key}`) as Hex;
  const cache = sessionCache(io.env, baseUrl, privateKeyToAccount(signer).address);
  return new ExchangeClient({ baseUrl, signer, session: cache?.load(), onSession: (s) => cache?.save(s), onRetry });
}

/** The session kept between runs, per service and address, in a private file. */
function sessionCache(env: Io['env'], baseUrl: string, address: string) {
  const dir = env.EXCHANGE_SESSION_DIR ?? join(env.HOME ?? homedir(), '.cache', 'exchange');
  if (dir === 'off') return null;
  const file = join(dir, `${new URL(baseUrl).host.replace(/[^A-Za-z0-9.-]/g, '_')}-${address.toLowerCase()}.json`);
  return {
    load(): Session | undefined {
      try {
        const s = JSON.parse(readFileSync(file, 'utf8')) as Session;
        return typeof s.token === 'string' && typeof s.expiresAt === 'number' ? s : undefined;
      } catch {
        return undefined;
      }
    },
    save(s: Session): void {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        writeFileSync(file, JSON.stringify(s), { mode: 0o600 });
        chmodSync(file, 0o600);
      } catch {
        // a read-only home: the next run signs in again
      }
    },
  };
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

function int(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`${what} must be a whole number`);
  return Number(value);
}

const ORDER_COLUMNS = [
  { header: 'ID', value: (o: Order) => o.id },
  { header: 'MARKET', value: (o: Order) => o.marketId },
  { header: 'SIDE', value: (o: Order) => o.side },
  { header: 'TYPE', value: (o: Order) => o.type },
  { header: 'PRICE', value: (o: Order) => o.price },
  { header: 'QTY', value: (o: Order) => o.quantity },
  { header: 'FILLED', value: (o: Order) => o.filledQuantity },
  { header: 'AVG', value: (o: Order) => o.avgFillPrice },
  { header: 'STATUS', value: (o: Order) => o.status },
  { header: 'CLIENT ID', value: (o: Order) => o.clientOrderId },
];

function orderSummary(o: Order): string {
  return record([
    ['order', o.id], ['clientOrderId', o.clientOrderId], ['market', o.marketId], ['side', o.side],
    ['type', o.type], ['price', o.price], ['quantity', o.quantity], ['filled', o.filledQuantity],
    ['avg fill price', o.avgFillPrice], ['status', o.status], ['reject reason', o.rejectReason],
  ]);
}

async function run(command: string, args: string[], flags: Flags, client: ExchangeClient, print: Print, io: Io): Promise<void> {
  switch (command) {
    case 'markets': {
      const markets = await client.markets();
      return print(() => table(markets, [
        { header: 'MARKET', value: (m) => m.id }, { header: 'TYPE', value: (m) => m.marketType },
        { header: 'MARK', value: (m) => m.markPrice }, { header: 'INDEX', value: (m) => m.indexPrice },
        { header: 'TICK', value: (m) => m.tickSize }, { header: 'STEP', value: (m) => m.stepSize },
        { header: 'EXPIRY', value: (m) => m.expiry }, { header: 'STATUS', value: (m) => m.status },
      ]), markets);
    }
    case 'book': {
      const marketId = need(args[0], 'market');
      const book = await client.book(marketId, int(flags.depth, '--depth') ?? 10);
      return print(() => bookText(marketId, book.bids.map(([price = '', size = '']) => ({ price, size })), book.asks.map(([price = '', size = '']) => ({ price, size }))), book);
    }
    case 'board': {
      const board = await client.board(flags.underlying);
      return print(() => [
        `${board.underlyingSymbol}  index ${board.underlyingPrice ?? '-'}  DVOL ${board.volatilityIndex?.dvol ?? '-'}  at ${board.computedAt}`,
        table(board.options, [
          { header: 'INSTRUMENT', value: (o) => o.id }, { header: 'BID', value: (o) => o.bid },
          { header: 'ASK', value: (o) => o.ask }, { header: 'MARK', value: (o) => o.mark },
          { header: 'IV', value: (o) => o.iv }, { header: 'DELTA', value: (o) => o.delta },
        ]),
      ].join('\n'), board);
    }
    case 'instruments': {
      const list = await client.instruments(flags.underlying === undefined ? {} : { underlying: flags.underlying });
      return print(() => table(list, [
        { header: 'INSTRUMENT', value: (i) => i.id }, { header: 'TYPE', value: (i) => i.type },
        { header: 'STRIKE', value: (i) => i.strike }, { header: 'EXPIRY', value: (i) => i.expiry },
        { header: 'BID', value: (i) => i.bestBid }, { header: 'ASK', value: (i) => i.bestAsk },
      ]), list);
    }
    case 'whoami': {
      const addr = await client.depositAddress();
      const s = client.currentSession;
      const info = { address: client.address, session: s === null ? null : { expiresAt: new Date(s.expiresAt).toISOString() }, chainId: addr.chainId };
      return print(() => record([['address', info.address], ['session expires', info.session?.expiresAt ?? '(API key)'], ['chain id', info.chainId]]), info);
    }
    case 'balances': {
      const [b, assets] = await Promise.all([client.balance(), client.assets()]);
      return print(() => [
        record([
          ['wallet', b.walletBalance], ['perps', b.perpsBalance], ['options', b.optionsBalance], ['spot', b.spotBalance],
          ['deposited (on chain)', b.onchainDepositTotal], ['pending deposits', b.pendingDepositTotal],
          ['pending withdrawals', b.pendingWithdrawalTotal],
        ]),
        '',
        table(assets, [
          { header: 'ASSET', value: (a) => a.asset }, { header: 'BUCKET', value: (a) => a.bucket },
          { header: 'AVAILABLE', value: (a) => a.available }, { header: 'LOCKED', value: (a) => a.locked },
          { header: 'TOTAL', value: (a) => a.total },
        ]),
      ].join('\n'), { balance: b, assets });
    }
    case 'deposit-address': {
      const a = await client.depositAddress();
      return print(() => record([['address', a.address], ['asset', a.asset], ['chain id', a.chainId], ['confirmations', a.confirmationsRequired]]), a);
    }
    case 'deposit': {
      const amount = need(args[0], 'amount');
      const token = need(io.env.EXCHANGE_ADMIN_TOKEN, 'EXCHANGE_ADMIN_TOKEN (operator token) in the environment');
      const address = client.address ?? (await client.signIn()).walletAddress;
      const r = await client.post('/admin/chain/deposits', { body: { walletAddress: address, amount } }, {
        anonymous: true, headers: { authorization: `Bearer ${token}` },
      });
      return print(() => record([['deposited', `${amount} USDC`], ['tx', r.txHash], ['to', r.depositAddress], ['credited', 'after the confirmations (see balances)']]), r);
    }
    case 'transfer': {
      const [amount, from, to] = [need(args[0], 'amount'), need(args[1], 'from bucket'), need(args[2], 'to bucket')];
      const r = await client.transfer({ amount, from: from as 'wallet', to: to as 'wallet' });
      return print(() => record([['wallet', r.walletBalance], ['perps', r.perpsBalance], ['options', r.optionsBalance], ['spot', r.spotBalance]]), r);
    }
    case 'withdraw': {
      const r = await client.withdraw({ amount: need(args[0], 'amount') });
      return print(() => record([['withdrawal', r.withdrawalId]]), r);
    }
    case 'orders': {
      const limit = int(flags.limit, '--limit') ?? 50;
      const list = flags.open === true ? await client.openOrders() : await client.orders(limit);
      return print(() => table(list, ORDER_COLUMNS), list);
    }
    case 'place': {
      const [marketId, side, quantity, price] = [need(args[0], 'market'), need(args[1], 'side (buy or sell)'), need(args[2], 'quantity'), args[3]];
      if (side !== 'buy' && side !== 'sell') throw new UsageError('side is buy or sell');
      const market = flags.market === true;
      if (!market && price === undefined) throw new UsageError('a limit order needs a price (or --market)');
      const timeInForce = flags.ioc === true ? 'ioc' : flags.fok === true ? 'fok' : undefined;
      const order = await client.placeOrder({
        marketId, side, quantity,
        ...(market ? { type: 'market' as const } : { type: 'limit' as const, price }),
        ...(timeInForce === undefined ? {} : { timeInForce }),
        ...(flags['post-only'] === true ? { postOnly: true } : {}),
        ...(flags['reduce-only'] === true ? { reduceOnly: true } : {}),
        ...(flags['client-id'] === undefined ? {} : { clientOrderId: flags['client-id'] }),
      });
      return print(() => orderSummary(order), order);
    }
    case 'amend': {
      const id = need(args[0], 'order id');
      if (flags.price === undefined && flags.quantity === undefined) throw new UsageError('amend needs --price and/or --quantity');
      const order = await client.amendOrder(id, {
        ...(flags.price === undefined ? {} : { price: flags.price }),
        ...(flags.quantity === undefined ? {} : { quantity: flags.quantity }),
      });
      return print(() => orderSummary(order), order);
    }
    case 'cancel': {
      if (flags.all === true) {
        const ids = await client.cancelAll(args[0] ?? undefined);
        return print(() => (ids.length === 0 ? 'nothing to cancel' : `cancelled ${ids.length}: ${ids.join(' ')}`), { cancelled: ids });
      }
      const order = await client.cancelOrder(need(args[0], 'order id (or --all)'));
      return print(() => orderSummary(order), order);
    }
    case 'positions': {
      const { perps, clob } = await client.positions();
      const rows = [...perps, ...clob].filter((p) => p.status !== 'closed');
      return print(() => table(rows, [
        { header: 'MARKET', value: (p) => p.marketId }, { header: 'SIDE', value: (p) => p.side },
        { header: 'SIZE', value: (p) => p.size }, { header: 'ENTRY', value: (p) => p.entryPrice },
        { header: 'MARK', value: (p) => p.markPrice }, { header: 'UNREALIZED', value: (p) => p.unrealizedPnl },
        { header: 'REALIZED', value: (p) => p.realizedPnl }, { header: 'LIQ', value: (p) => p.liquidationPrice },
        { header: 'LEV', value: (p) => p.leverage }, { header: 'MODE', value: (p) => p.marginMode },
      ]), { perps, clob });
    }
    case 'close': {
      const marketId = need(args[0], 'market');
      const order = await client.closePosition({
        marketId,
        ...(flags.quantity === undefined ? {} : { quantity: flags.quantity }),
        ...(flags.price === undefined ? { orderType: 'market' as const } : { orderType: 'limit' as const, price: flags.price }),
      });
      return print(() => orderSummary(order), order);
    }
    case 'quotes': {
      const marketId = need(args[0], 'market');
      const level = (side: 'buy' | 'sell') => (spec: string) => {
        const [price, quantity] = spec.split('@');
        if (price === undefined || quantity === undefined) throw new UsageError(`--${side === 'buy' ? 'bid' : 'ask'} is PRICE@QUANTITY`);
        return { side, price, quantity, postOnly: true };
      };
      const quotes = [...(flags.bid ?? []).map(level('buy')), ...(flags.ask ?? []).map(level('sell'))];
      const r = await client.bulkQuote({ marketId, quoteId: flags['quote-id'] ?? 'cli', cancelAll: true, quotes });
      return print(() => [
        `quote ${r.quoteId ?? '-'}: ${r.orders.length} placed, ${r.cancelled.length} replaced, ${r.rejected.length} rejected`,
        table(r.orders, ORDER_COLUMNS.slice(0, 9)),
        ...r.rejected.map((x) => `level ${x.index} rejected: ${x.error} ${x.message}`),
      ].join('\n'), r);
    }
    case 'api-keys': {
      const [sub = 'list', ...rest] = args;
      if (sub === 'list') {
        const keys = await client.apiKeys();
        return print(() => table(keys, [
          { header: 'ID', value: (k) => k.id }, { header: 'NAME', value: (k) => k.name }, { header: 'SCOPE', value: (k) => k.scope },
          { header: 'STATUS', value: (k) => k.status }, { header: 'EXPIRES', value: (k) => k.expiresAt }, { header: 'LAST USED', value: (k) => k.lastUsedAt },
        ]), keys);
      }
      if (sub === 'create') {
        const [name, scope] = [need(rest[0], 'key name'), need(rest[1], 'scope (read or trade)')];
        if (scope !== 'read' && scope !== 'trade') throw new UsageError('scope is read or trade');
        const days = int(flags['expires-days'], '--expires-days');
        const k = await client.createApiKey({ name, scope, ...(days === undefined ? {} : { expiresInDays: days }) });
        return print(() => record([['id', k.id], ['name', k.name], ['scope', k.scope], ['expires', k.expiresAt], ['secret', k.secret], ['', k.message]]), k);
      }
      if (sub === 'revoke') {
        await client.revokeApiKey(need(rest[0], 'key id'));
        return print(() => `revoked ${rest[0]}`, { revoked: rest[0] });
      }
      throw new UsageError(`api-keys ${sub}: list, create or revoke`);
    }
    case 'watch':
      return watch(args, flags, client, io);
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

function bookText(marketId: string, bids: readonly { price: string; size: string }[], asks: readonly { price: string; size: string }[]): string {
  const rows = Array.from({ length: Math.max(bids.length, asks.length) }, (_, i) => ({ bid: bids[i], ask: asks[i] }));
  return `${marketId}\n${table(rows, [
    { header: 'BID SIZE', value: (r) => r.bid?.size, right: true }, { header: 'BID', value: (r) => r.bid?.price, right: true },
    { header: 'ASK', value: (r) => r.ask?.price, right: true }, { header: 'ASK SIZE', value: (r) => r.ask?.size, right: true },
  ])}`;
}

const WATCH: Record<string, { path: StreamPath; key?: string; param?: string; query?: (flags: Flags) => Record<string, string> }> = {
  book: { path: '/perps/book-stream', key: 'marketId' },
  trades: { path: '/markets/{marketId}/trades/stream', param: 'marketId' },
  events: { path: '/perps/stream/events', key: 'marketId' },
  user: { path: '/perps/stream/user' },
  balances: { path: '/portfolio/balances/stream' },
  board: { path: '/markets/board/stream', query: (f): Record<string, string> => (f.underlying === undefined ? {} : { underlying: f.underlying }) },
  options: { path: '/options/stream/events', key: 'marketId' },
};

async function watch(args: string[], flags: Flags, client: ExchangeClient, io: Io): Promise<void> {
  const what = need(args[0], 'what to watch (book, trades, board, events, user, balances, options or a stream path)');
  const known = WATCH[what];
  let path: StreamPath;
  const query: Record<string, string> = {};
  const params: Record<string, string> = {};
  if (known !== undefined) {
    path = known.path;
    if (known.param !== undefined) params[known.param] = need(args[1], 'market');
    if (known.key !== undefined) query[known.key] = need(args[1], known.key === 'marketId' ? 'market' : known.key);
    Object.assign(query, known.query?.(flags) ?? {});
    if (flags.depth !== undefined && what === 'book') query.depth = flags.depth;
  } else if (what.startsWith('/')) {
    path = what as StreamPath;
    for (const kv of args.slice(1)) {
      const at = kv.indexOf('=');
      if (at <= 0) throw new UsageError(`stream parameters are key=value, not ${kv}`);
      query[kv.slice(0, at)] = kv.slice(at + 1);
    }
  } else {
    throw new UsageError(`watch ${what}: book, trades, board, events, user, balances, options or a stream path`);
  }
  const count = int(flags.count, '--count');
  const book = new LocalBook();
  let seen = 0;
  const stop = new AbortController();
  io.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  const sub = client.stream(path, {
    query: query as never,
    params,
    signal: stop.signal,
    onStatus: (s) => {
      if (s.state === 'reconnecting') io.err(`stream: reconnecting in ${s.delayMs} ms (${s.reason})`);
      else if (s.state === 'open' && s.connection > 1) io.err(`stream: connection ${s.connection} open`);
    },
  });
  for await (const event of sub) {
    io.out(flags.json === true ? JSON.stringify(event) : eventText(what, event, book));
    if (count !== undefined && ++seen >= count) {
      sub.close();
      break;
    }
  }
  await sub.done;
}

function eventText(what: string, event: StreamEvent<StreamPath>, book: LocalBook): string {
  const head = `${new Date().toISOString().slice(11, 23)} #${event.seq} ${event.kind}`;
  const payload = (event.message as { payload: unknown }).payload as Record<string, unknown>;
  if (what === 'book' || what === 'options' || what === 'events') {
    const frame = (what === 'book' ? payload : payload.orderbook) as BookFrame;
    book.apply(event.kind, frame, event.seq);
    const { bids, asks } = book.levels(1);
    const top = `bid ${bids[0] === undefined ? '-' : `${bids[0].size} @ ${bids[0].price}`} | ask ${asks[0] === undefined ? '-' : `${asks[0].size} @ ${asks[0].price}`}`;
    const trades = Array.isArray(payload.trades) && payload.trades.length > 0 ? `  trades ${JSON.stringify(payload.trades)}` : '';
    const positions = what === 'events' && payload.positions !== undefined ? `  positions ${JSON.stringify(payload.positions)}` : '';
    return `${head}  ${top}${trades}${positions}`;
  }
  if (what === 'balances') {
    const b = payload as Record<string, { total?: string } | string>;
    const bucket = (k: string) => (typeof b[k] === 'object' ? (b[k] as { total?: string }).total : b[k]) ?? '-';
    return `${head}  wallet ${bucket('wallet')}  perps ${bucket('perps')}  options ${bucket('options')}  spot ${bucket('spot')}`;
  }
  if (what === 'board') {
    const options = Array.isArray(payload.options) ? payload.options.length : 0;
    const marked = Array.isArray(payload.options) ? payload.options.filter((o: { mark?: unknown }) => o.mark !== null).length : 0;
    const dvol = (payload.volatilityIndex as { dvol?: string } | undefined)?.dvol ?? '-';
    return `${head}  ${String(payload.underlyingSymbol)} index ${String(payload.underlyingPrice ?? '-')}  DVOL ${dvol}  ${marked}/${options} options marked`;
  }
  return `${head}  ${JSON.stringify(payload)}`;
}

/** Run as a program (the `bin` of @exchange/sdk, and scripts/exchange.mjs in the repository). */
export function runCli(): void {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  // `exchange watch … | head`: the reader went away; stop quietly.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stop.abort();
    process.exit(0);
  });
  main(process.argv.slice(2), {
    env: process.env,
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    signal: stop.signal,
  }).then((code) => {
    process.exitCode = code;
  }, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/** True when this module is the program (run directly, or through the symlink npm makes for a bin). */
function isMain(): boolean {
  const argv1 = process.argv[1];
  if (argv1 === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(argv1)).href;
  } catch {
    return false;
  }
}

if (isMain()) runCli();
