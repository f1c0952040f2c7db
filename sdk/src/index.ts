/**
 * @exchange/sdk: the typed client of the exchange (client.ts), its HTTP layer with retries
 * (http.ts), SIWE signers (auth.ts), typed SSE subscriptions (sse.ts), a local order book kept
 * from a book stream (book.ts), exact decimal-string helpers (decimal.ts) and the types of every
 * operation generated from the served OpenAPI document (types.ts over schema.ts).
 */
export { ExchangeClient, newClientId } from './client.ts';
export type {
  ApiKeyInput, BulkQuoteInput, ClientOptions, ClobOrderInput, Market, Order, OrderInput, PerpOrderInput, TransferInput, Venue,
} from './client.ts';
export { ApiError, NetworkError, DEFAULT_RETRY, parseRetryAfter } from './http.ts';
export type { CallOptions, ResponseInfo, RetryInfo, RetryPolicy } from './http.ts';
export { toSigner } from './auth.ts';
export type { Session, SignerInput, SiweSigner, WalletClientLike } from './auth.ts';
export { StreamError, Subscription } from './sse.ts';
export type { StreamEvent, StreamKind, StreamOptions, StreamStatus } from './sse.ts';
export { LocalBook } from './book.ts';
export type { BookFrame, BookLevel } from './book.ts';
export { addDecimal, compareDecimal, decimal, isDecimal, negateDecimal } from './decimal.ts';
export type { Decimal } from './decimal.ts';
export type * from './types.ts';
