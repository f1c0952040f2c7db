/**
 * The SDK's HTTP layer: one typed `request(method, path, args)` for every operation of the served
 * OpenAPI document, over Node's (or any WHATWG) fetch.
 *
 * What the interface contract asks of a client, done here once:
 * - 429 and 503 are retried after the server's `Retry-After` (seconds or an HTTP date; a jittered
 *   backoff when absent), at most `maxAttempts` attempts in all; a wait longer than
 *   `maxRetryDelayMs` is not slept through but thrown, so a caller is never stalled for minutes.
 * - A network failure or another 5xx is retried only for a request that is safe to repeat: a GET,
 *   or one marked `idempotent` (an order carrying its clientOrderId, a transfer its clientTransferId:
 *   the body, and so the id, is the same on every attempt, and the server refuses a second apply).
 * - A 401 is answered once per request by the credentials' `renew` (sign in again), then retried.
 * - Any other status throws an `ApiError` with the server's `{ error, message }`.
 */
import type { BodyOf, Method, PathOf, RequestArgs, ResponseOf } from './types.ts';

export interface RetryPolicy {
  /** Attempts in all, the first included (default 5). */
  readonly maxAttempts: number;
  /** Longest wait before one retry; a longer Retry-After is thrown as is (default 30 s). */
  readonly maxRetryDelayMs: number;
  /** First backoff when the server names no wait, doubled each attempt (default 250 ms). */
  readonly baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, maxRetryDelayMs: 30_000, baseDelayMs: 250 };

/** Headers that authenticate a request, and how to renew them after a 401. */
export interface Credentials {
  headers(): Promise<Record<string, string>>;
  /** Obtains fresh credentials (signs in again); false when it cannot. */
  renew?(): Promise<boolean>;
}

export interface TransportOptions {
  readonly baseUrl: string;
  readonly fetch?: typeof fetch;
  readonly retry?: Partial<RetryPolicy>;
  /** Per attempt (default 30 s). */
  readonly timeoutMs?: number;
  /** Told of every retry (the CLI prints them with --verbose). */
  readonly onRetry?: (info: RetryInfo) => void;
  /** Told of every answer, before it is read (e.g. to follow the X-RateLimit-* budget). */
  readonly onResponse?: (info: ResponseInfo) => void;
}

export interface ResponseInfo {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly headers: Headers;
}

export interface RetryInfo {
  readonly method: string;
  readonly path: string;
  readonly attempt: number;
  readonly delayMs: number;
  readonly reason: string;
}

/** A non-2xx answer: `status`, the server's stable `code` (e.g. INSUFFICIENT_MARGIN) and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
    /** Milliseconds the server asked to wait (Retry-After), when it did. */
    readonly retryAfterMs: number | null,
    /** An earlier attempt of this request may have reached the server (its outcome was lost). */
    readonly afterUncertainAttempt: boolean,
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'ApiError';
  }
}

/** The request never got an answer (connection refused or reset, timeout) after every attempt. */
export class NetworkError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'NetworkError';
  }
}

export interface CallOptions {
  /** Safe to repeat after a lost answer (the body carries an idempotency id). GETs always are. */
  readonly idempotent?: boolean;
  readonly signal?: AbortSignal;
  /** Send no credentials (public routes, sign-in). */
  readonly anonymous?: boolean;
  readonly headers?: Record<string, string>;
}

const NO_CREDENTIALS: Credentials = { headers: async () => ({}) };

export class Transport {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  credentials: Credentials = NO_CREDENTIALS;

  constructor(private readonly options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** The URL of `path` with its path parameters and query filled in. */
  url(path: string, params?: Record<string, string | number>, query?: object): string {
    const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = params?.[name];
      if (value === undefined) throw new TypeError(`${path}: path parameter ${name} is missing`);
      return encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      if (typeof v === 'number' && !Number.isInteger(v)) throw new TypeError(`query ${k}: ${v} is not an integer (decimals are strings)`);
      search.set(k, String(v));
    }
    const qs = search.toString();
    return `${this.baseUrl}${filled}${qs === '' ? '' : `?${qs}`}`;
  }

  async request<M extends Method, P extends PathOf<M>>(
    method: M,
    path: P,
    args: RequestArgs<P, M>,
    options: CallOptions = {},
  ): Promise<ResponseOf<P, M>> {
    const a = args as { params?: Record<string, string>; query?: object; body?: BodyOf<P, M> };
    const url = this.url(path, a.params, a.query);
    const text = a.body === undefined ? undefined : JSON.stringify(a.body);
    const safe = method === 'get' || options.idempotent === true;
    let renewed = false;
    let uncertain = false;
    for (let attempt = 1; ; attempt++) {
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...(options.anonymous === true ? {} : await this.credentials.headers()),
        ...options.headers,
      };
      if (text !== undefined) headers['content-type'] = 'application/json';
      let res: Response;
      try {
        const signal = options.signal === undefined
          ? AbortSignal.timeout(this.timeoutMs)
          : AbortSignal.any([options.signal, AbortSignal.timeout(this.timeoutMs)]);
        res = await this.fetchImpl(url, { method: method.toUpperCase(), headers, body: text, signal });
      } catch (error) {
        if (options.signal?.aborted === true) throw error;
        uncertain = true;
        if (!safe || attempt >= this.retry.maxAttempts) {
          throw new NetworkError(`${method.toUpperCase()} ${path}: ${describe(error)} (attempt ${attempt})`, error);
        }
        await this.pause(method, path, attempt, this.backoff(attempt), `network: ${describe(error)}`);
        continue;
      }
      this.options.onResponse?.({ method: method.toUpperCase(), path, status: res.status, headers: res.headers });
      const body = await readBody(res);
      if (res.ok) return body as ResponseOf<P, M>;
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
      const { code, message } = errorFields(res.status, body);
      const error = new ApiError(res.status, code, message, body, retryAfterMs, uncertain);
      if (res.status === 401 && !renewed && this.credentials.renew !== undefined && options.anonymous !== true) {
        renewed = true;
        if (await this.credentials.renew()) continue;
      }
      const refused = res.status === 429 || res.status === 503; // the server did not act on it
      const retryable = refused || (res.status >= 500 && safe);
      if (!retryable || attempt >= this.retry.maxAttempts) throw error;
      const delay = retryAfterMs ?? this.backoff(attempt);
      if (delay > this.retry.maxRetryDelayMs) throw error;
      if (!refused) uncertain = true;
      await this.pause(method, path, attempt, delay, `${res.status} ${code}`);
    }
  }

  private backoff(attempt: number): number {
    const base = Math.min(this.retry.baseDelayMs * 2 ** (attempt - 1), this.retry.maxRetryDelayMs);
    return Math.round(base * (0.5 + Math.random() / 2));
  }

  private async pause(method: string, path: string, attempt: number, delayMs: number, reason: string): Promise<void> {
    this.options.onRetry?.({ method: method.toUpperCase(), path, attempt, delayMs, reason });
    await sleep(delayMs);
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorFields(status: number, body: unknown): { code: string; message: string } {
  if (typeof body === 'object' && body !== null && 'error' in body) {
    const b = body as { error: unknown; message?: unknown };
    return { code: String(b.error), message: typeof b.message === 'string' ? b.message : '' };
  }
  return { code: `HTTP_${status}`, message: typeof body === 'string' ? body.slice(0, 200) : '' };
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
