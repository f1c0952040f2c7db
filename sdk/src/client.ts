/**
 * ExchangeClient: the typed client of the exchange's HTTP interface.
 *
 * - `request(method, path, args)` (and `get`/`post`/`delete`) reaches every operation of the
 *   served OpenAPI document, typed from it (types.ts); the named methods below are the common ones.
 * - Credentials: a signer (private key, viem account or wallet client) signs in with SIWE on first
 *   use and again `renewBeforeMs` before the session expires (and once on a 401); or an API key
 *   (`x-api-key`), or a session token obtained elsewhere.
 * - Money is decimal strings in and out; what the client sends is checked to be one.
 * - Every order gets a fresh clientOrderId unless the caller gives one (and every transfer and
 *   withdrawal a clientTransferId), so a retry after a lost answer cannot apply it twice; when a
 *   retry is refused as a duplicate, the client reads back and returns what the first attempt did.
 * - 429/503 are retried after Retry-After (http.ts); streams reconnect and resnapshot (sse.ts).
 */
import { siweMessage, toSigner, type Session, type SignerInput, type SiweSigner } from './auth.ts';
import { decimal } from './decimal.ts';
import { ApiError, Transport, type CallOptions, type Credentials, type ResponseInfo, type RetryInfo, type RetryPolicy } from './http.ts';
import { Subscription, type StreamOptions } from './sse.ts';
import type { BodyOf, Method, PathOf, RequestArgs, ResponseOf, StreamPath } from './types.ts';

export interface ClientOptions {
  /** The service's origin, e.g. http://127.0.0.1:8080. */
  readonly baseUrl: string;
  /** Signs in with SIWE: a private key (0x + 64 hex), a viem account, or a viem wallet client with an account. */
  readonly signer?: SignerInput;
  /** An API key secret, sent as `x-api-key` (when there is no signer or token). */
  readonly apiKey?: string;
  /** A session token obtained elsewhere (Authorization: Bearer). */
  readonly token?: string;
  /** A session kept from an earlier run (the CLI's cache); used until it is due for renewal. */
  readonly session?: Session;
  /** Told of every new session (to keep it for a later run). */
  readonly onSession?: (session: Session) => void;
  /** Sign in again this long before the session expires (default 1 hour; sessions last 7 days). */
  readonly renewBeforeMs?: number;
  /** The EIP-4361 statement (default "Sign in to the exchange"). */
  readonly statement?: string;
  readonly fetch?: typeof fetch;
  readonly retry?: Partial<RetryPolicy>;
  readonly timeoutMs?: number;
  readonly onRetry?: (info: RetryInfo) => void;
  readonly onResponse?: (info: ResponseInfo) => void;
}

/** Routes whose args can be left out (nothing required). */
type ArgsTuple<P extends PathOf<M>, M extends Method> = object extends RequestArgs<P, M>
  ? [args?: RequestArgs<P, M>, options?: CallOptions]
  : [args: RequestArgs<P, M>, options?: CallOptions];

export type Venue = 'perps' | 'clob';
export type PerpOrderInput = BodyOf<'/perps/orders', 'post'>;
export type ClobOrderInput = BodyOf<'/orders', 'post'>;
export type Order = ResponseOf<'/perps/orders', 'post'>;
export type OrderInput = (PerpOrderInput | ClobOrderInput) & { readonly marketId: string };
export type TransferInput = BodyOf<'/wallet/transfer', 'post'>;
export type BulkQuoteInput = BodyOf<'/perps/quotes/bulk', 'post'>;
export type ApiKeyInput = BodyOf<'/perps/me/api-keys', 'post'>;
export type Market = ResponseOf<'/perps/markets', 'get'>[number];

/** A fresh idempotency id (1-36 of [A-Za-z0-9._:/-], as clientOrderId and clientTransferId take). */
export function newClientId(): string {
  // getRandomValues, not randomUUID: browsers offer randomUUID only to secure contexts (https or loopback).
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40; // version 4
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const DECIMAL_FIELDS = ['price', 'quantity', 'amount', 'stopPrice', 'takeProfitPrice', 'stopLossPrice'] as const;

/** Throws unless every money field present in `body` (and its quote levels and legs) is a decimal string. */
function checkDecimals(body: object, where: string): void {
  const b = body as Record<string, unknown>;
  for (const f of DECIMAL_FIELDS) if (b[f] !== undefined) decimal(b[f], `${where}.${f}`);
  for (const list of ['quotes', 'legs'] as const) {
    const items = b[list];
    if (Array.isArray(items)) items.forEach((q, i) => checkDecimals(q as object, `${where}.${list}[${i}]`));
  }
  for (const side of ['bid', 'ask'] as const) if (typeof b[side] === 'object' && b[side] !== null) checkDecimals(b[side] as object, `${where}.${side}`);
}

export class ExchangeClient {
  readonly transport: Transport;
  private readonly signer: SiweSigner | null;
  private session: Session | null = null;
  private signingIn: Promise<Session> | null = null;
  private readonly renewBeforeMs: number;
  private venues: Map<string, Venue> | null = null;

  constructor(private readonly options: ClientOptions) {
    this.transport = new Transport(options);
    this.signer = options.signer === undefined ? null : toSigner(options.signer);
    this.renewBeforeMs = options.renewBeforeMs ?? 3_600_000;
    if (options.token !== undefined) this.session = { token: options.token, walletAddress: '', expiresAt: Number.POSITIVE_INFINITY };
    if (options.session !== undefined) this.session = options.session;
    this.transport.credentials = this.credentials();
  }

  get address(): string | null {
    return this.signer?.address ?? (this.session?.walletAddress || null);
  }

  /** The current session (null before the first sign-in, or with an API key). */
  get currentSession(): Session | null {
    return this.session;
  }

  private credentials(): Credentials {
    return {
      headers: async (): Promise<Record<string, string>> => {
        if (this.signer !== null) {
          const s = this.session;
          if (s === null || s.expiresAt - Date.now() <= this.renewBeforeMs) await this.signIn();
        }
        if (this.session !== null) return { authorization: `Bearer ${this.session.token}` };
        if (this.options.apiKey !== undefined) return { 'x-api-key': this.options.apiKey };
        return {};
      },
      renew: async () => {
        if (this.signer === null) return false;
        await this.signIn();
        return true;
      },
    };
  }

  /** Signs in with SIWE (one sign-in at a time; concurrent callers share it) and keeps the session. */
  signIn(): Promise<Session> {
    if (this.signer === null) return Promise.reject(new Error('this client has no signer to sign in with'));
    this.signingIn ??= this.doSignIn(this.signer).finally(() => {
      this.signingIn = null;
    });
    return this.signingIn;
  }

  private async doSignIn(signer: SiweSigner): Promise<Session> {
    const anonymous = { anonymous: true } as const;
    const nonce = await this.transport.request('post', '/auth/nonce', { body: { walletAddress: signer.address } }, anonymous);
    const message = siweMessage(signer, nonce, this.options.statement ?? 'Sign in to the exchange');
    const signature = await signer.signMessage({ message });
    const reply = await this.transport.request('post', '/auth/siwe', { body: { message, signature } }, anonymous);
    this.session = { token: reply.token, walletAddress: reply.walletAddress, expiresAt: Date.parse(reply.expiresAt) };
    this.options.onSession?.(this.session);
    return this.session;
  }

  /** Revokes the session (POST /auth/logout); the next call signs in again if there is a signer. */
  async logout(): Promise<void> {
    if (this.session === null) return;
    await this.post('/auth/logout');
    this.session = null;
  }

  // --- every operation, typed from the document ---

  async request<M extends Method, P extends PathOf<M>>(method: M, path: P, args: RequestArgs<P, M>, options?: CallOptions): Promise<ResponseOf<P, M>> {
    const body = (args as { body?: unknown }).body;
    if (typeof body === 'object' && body !== null) checkDecimals(body, `${method.toUpperCase()} ${path}`);
    return this.transport.request(method, path, args, options);
  }

  get<P extends PathOf<'get'>>(path: P, ...rest: ArgsTuple<P, 'get'>): Promise<ResponseOf<P, 'get'>> {
    return this.request('get', path, (rest[0] ?? {}) as RequestArgs<P, 'get'>, rest[1]);
  }

  post<P extends PathOf<'post'>>(path: P, ...rest: ArgsTuple<P, 'post'>): Promise<ResponseOf<P, 'post'>> {
    return this.request('post', path, (rest[0] ?? {}) as RequestArgs<P, 'post'>, rest[1]);
  }

  delete<P extends PathOf<'delete'>>(path: P, ...rest: ArgsTuple<P, 'delete'>): Promise<ResponseOf<P, 'delete'>> {
    return this.request('delete', path, (rest[0] ?? {}) as RequestArgs<P, 'delete'>, rest[1]);
  }

  /** A typed Server-Sent Events subscription to any stream route (sse.ts). */
  stream<P extends StreamPath>(path: P, options: StreamOptions<P> = {}): Subscription<P> {
    const transport = this.transport;
    const fetchImpl = this.options.fetch ?? globalThis.fetch.bind(globalThis);
    return new Subscription(
      { baseUrl: transport.baseUrl, fetch: fetchImpl, credentials: () => transport.credentials, url: (p, params, q) => transport.url(p, params, q) },
      path,
      options,
    );
  }

  // --- market data ---

  markets() {
    return this.get('/perps/markets');
  }

  instruments(query: RequestArgs<'/options/instruments', 'get'>['query'] = {}) {
    return this.get('/options/instruments', { query });
  }

  /** The order book of a perp, future or spot market, or of an option instrument. */
  book(marketId: string, depth?: number) {
    const query = depth === undefined ? {} : { depth };
    return isOptionId(marketId)
      ? this.get('/orderbook/{marketId}', { params: { marketId }, query })
      : this.get('/perps/orderbook/{marketId}', { params: { marketId }, query });
  }

  board(underlying?: string) {
    return this.get('/markets/board', { query: underlying === undefined ? {} : { underlying } });
  }

  /** Which engine trades a market: perps and dated futures the linear one, options and spot the CLOB. */
  async venueOf(marketId: string): Promise<Venue> {
    if (this.venues === null || !this.venues.has(marketId)) {
      const markets = await this.markets();
      this.venues = new Map(markets.map((m) => [m.id, m.marketType === 'spot' ? 'clob' : 'perps']));
    }
    return this.venues.get(marketId) ?? 'clob';
  }

  // --- wallet ---

  balance() {
    return this.get('/wallet/balance');
  }

  assets() {
    return this.get('/wallet/assets');
  }

  depositAddress() {
    return this.get('/wallet/deposit-address');
  }

  /** Moves money between buckets; a fresh clientTransferId makes a retried transfer move it once. */
  transfer(input: TransferInput) {
    const body = { ...input, clientTransferId: input.clientTransferId ?? newClientId() };
    return this.post('/wallet/transfer', { body }, { idempotent: true });
  }

  withdraw(input: BodyOf<'/wallet/withdraw', 'post'>) {
    const body = { ...input, clientTransferId: input.clientTransferId ?? newClientId() };
    return this.post('/wallet/withdraw', { body }, { idempotent: true });
  }

  // --- orders ---

  /**
   * Places an order on the market's venue (perps/futures: POST /perps/orders; options and spot:
   * POST /orders) with a fresh clientOrderId unless one is given. Safe to retry: a duplicate
   * refused after a lost answer is read back and returned.
   */
  async placeOrder(input: OrderInput): Promise<Order> {
    const venue = await this.venueOf(input.marketId);
    const body = { ...input, clientOrderId: input.clientOrderId ?? newClientId() };
    try {
      return venue === 'perps'
        ? await this.post('/perps/orders', { body: body as PerpOrderInput }, { idempotent: true })
        : await this.post('/orders', { body: body as ClobOrderInput }, { idempotent: true });
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'DUPLICATE_CLIENT_ORDER_ID' && error.afterUncertainAttempt)) throw error;
      const existing = await this.findOrder(venue, body.marketId, body.clientOrderId);
      if (existing === null) throw error;
      return existing;
    }
  }

  /** The order placed with `clientOrderId`, or null. */
  async findOrder(venue: Venue, marketId: string, clientOrderId: string): Promise<Order | null> {
    const list = venue === 'perps'
      ? await this.get('/perps/orders', { query: { clientOrderId, marketId } })
      : await this.get('/orders/me', { query: { marketId, limit: 200 } });
    return list.find((o) => o.clientOrderId === clientOrderId) ?? null;
  }

  /**
   * Amends a resting order in one atomic step (price and/or new total quantity, filled part
   * included; the id stays): without a venue, the perps venue is asked first, then the CLOB.
   */
  async amendOrder(id: string, change: BodyOf<'/perps/orders/{id}/modify', 'post'>, venue?: Venue): Promise<Order> {
    if (venue === 'clob') return this.post('/orders/{id}/modify', { params: { id }, body: change });
    try {
      return await this.post('/perps/orders/{id}/modify', { params: { id }, body: change });
    } catch (error) {
      if (venue === undefined && error instanceof ApiError && error.status === 404) {
        return this.post('/orders/{id}/modify', { params: { id }, body: change });
      }
      throw error;
    }
  }

  /** Cancels one resting order; without a venue, the perps venue is asked first, then the CLOB. */
  async cancelOrder(id: string, venue?: Venue): Promise<Order> {
    if (venue === 'clob') return this.post('/orders/{id}/cancel', { params: { id }, body: {} }, { idempotent: true });
    try {
      return await this.post('/perps/orders/{id}/cancel', { params: { id }, body: {} }, { idempotent: true });
    } catch (error) {
      if (venue === undefined && error instanceof ApiError && error.status === 404) {
        return this.post('/orders/{id}/cancel', { params: { id }, body: {} }, { idempotent: true });
      }
      throw error;
    }
  }

  /** Cancels the caller's resting orders on both venues, or on one market's. */
  async cancelAll(marketId?: string): Promise<string[]> {
    const body = marketId === undefined ? {} : { marketId };
    const venues: Venue[] = marketId === undefined ? ['perps', 'clob'] : [await this.venueOf(marketId)];
    const out: string[] = [];
    for (const v of venues) {
      const r = v === 'perps'
        ? await this.post('/perps/orders/cancel-all', { body }, { idempotent: true })
        : await this.post('/orders/cancel-all', { body }, { idempotent: true });
      out.push(...r.cancelled);
    }
    return out;
  }

  /**
   * The dead-man switch: unless called again within `timeoutMs`, every live order of the account
   * is cancelled (0 disarms). Call it periodically, well within the timeout.
   */
  cancelAllAfter(timeoutMs: number) {
    return this.post('/orders/cancel-all-after', { body: { timeoutMs } });
  }

  /** Resting orders on both venues. */
  async openOrders(): Promise<Order[]> {
    const [perps, clob] = await Promise.all([this.get('/perps/orders/open'), this.get('/orders/open')]);
    return [...perps, ...clob];
  }

  /** Recent orders on both venues, newest first. */
  async orders(limit = 50): Promise<Order[]> {
    const [perps, clob] = await Promise.all([this.get('/perps/orders', { query: { limit } }), this.get('/orders/me', { query: { limit } })]);
    return [...perps, ...clob].sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit);
  }

  /** Open positions: perps and futures, then options and spot. */
  async positions() {
    const [perps, clob] = await Promise.all([this.get('/perps/positions'), this.get('/positions/me')]);
    return { perps, clob };
  }

  /** Closes a perp or future position (all of it without `quantity`). */
  closePosition(input: BodyOf<'/perps/positions/close', 'post'>) {
    return this.post('/perps/positions/close', { body: input });
  }

  /** Replaces the caller's ladder on a market in one atomic step (`cancelAll`, a `quoteId`). */
  async bulkQuote(input: BulkQuoteInput) {
    return (await this.venueOf(input.marketId)) === 'perps'
      ? this.post('/perps/quotes/bulk', { body: input })
      : this.post('/quotes/bulk', { body: input });
  }

  // --- API keys (session only) ---

  apiKeys() {
    return this.get('/perps/me/api-keys');
  }

  createApiKey(input: ApiKeyInput) {
    return this.post('/perps/me/api-keys', { body: input });
  }

  revokeApiKey(id: string) {
    return this.delete('/perps/me/api-keys/{id}', { params: { id } });
  }
}

/** An option instrument id ends in its strike and C or P (BTC-25DEC26-100000-C). */
function isOptionId(marketId: string): boolean {
  return /-\d+(\.\d+)?-[CP]$/.test(marketId);
}
