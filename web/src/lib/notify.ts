/**
 * Notices shown to the trader: every error from the API in words (its code and message, never
 * swallowed), and confirmations of what the service accepted. Kept a few seconds, errors longer.
 */
import { ApiError, NetworkError } from '../../../sdk/src/index.ts';
import { Store } from './store.ts';

export interface Notice {
  readonly id: number;
  readonly kind: 'error' | 'ok' | 'info';
  readonly text: string;
}

export const notices = new Store<readonly Notice[]>([]);
let nextId = 1;

export function notify(kind: Notice['kind'], text: string): void {
  const id = nextId++;
  notices.update((list) => [...list.slice(-4), { id, kind, text }]);
  setTimeout(() => dismiss(id), kind === 'error' ? 12_000 : 5_000);
}

export function dismiss(id: number): void {
  notices.update((list) => list.filter((n) => n.id !== id));
}

/** What went wrong, in words a trader reads: the API's own message, with its code. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    const wait = error.retryAfterMs !== null ? ` (retry in ${Math.ceil(error.retryAfterMs / 1000)} s)` : '';
    const message = (error.body as { message?: string } | null)?.message ?? error.message;
    return `${message} [${error.code}]${wait}`;
  }
  if (error instanceof NetworkError) return `the service cannot be reached: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

export function reportError(error: unknown, doing?: string): void {
  notify('error', doing === undefined ? describeError(error) : `${doing}: ${describeError(error)}`);
}
