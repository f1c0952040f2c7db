/**
 * An API dry run of what the trader is typing (an order or a strategy): asked 250 ms after the
 * body last changed, and shown only while it answers the body as it stands (an answer to an older
 * body is dropped). An error is kept in words, to be shown where the preview would be.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { describeError } from '../../lib/notify.ts';

export interface PreviewState<R> {
  readonly key: string;
  readonly result: R | null;
  readonly error: string | null;
}

export function usePreview<B, R>(client: ExchangeClient | null, body: B | null, ask: (client: ExchangeClient, body: B) => Promise<R>): PreviewState<R> | null {
  const [state, setState] = useState<PreviewState<R> | null>(null);
  const key = body === null ? '' : JSON.stringify(body);
  useEffect(() => {
    if (client === null || body === null) return undefined;
    let stopped = false;
    const timer = setTimeout(() => {
      ask(client, body)
        .then((result) => !stopped && setState({ key, result, error: null }))
        .catch((e: unknown) => !stopped && setState({ key, result: null, error: describeError(e) }));
    }, 250);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [client, key]);
  return state !== null && state.key === key ? state : null;
}
