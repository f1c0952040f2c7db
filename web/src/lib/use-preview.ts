/**
 * An API dry run of what the trader is typing (an order or a strategy, on any venue's preview
 * route): asked 250 ms after the body last changed, then every `refreshMs` if given (the book moves
 * under a resting body), and shown only while it answers the body as it stands (an answer to an
 * older body is dropped). An error is kept in words, to be shown where the preview would be.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ExchangeClient } from '../../../sdk/src/index.ts';
import { describeError } from './notify.ts';

export interface PreviewState<R> {
  readonly key: string;
  readonly result: R | null;
  readonly error: string | null;
}

export function usePreview<B, R>(
  client: ExchangeClient | null,
  body: B | null,
  ask: (client: ExchangeClient, body: B) => Promise<R>,
  refreshMs?: number,
): PreviewState<R> | null {
  const [state, setState] = useState<PreviewState<R> | null>(null);
  const key = body === null ? '' : JSON.stringify(body);
  useEffect(() => {
    if (client === null || body === null) return undefined;
    let stopped = false;
    const read = () => {
      ask(client, body)
        .then((result) => !stopped && setState({ key, result, error: null }))
        .catch((e: unknown) => !stopped && setState({ key, result: null, error: describeError(e) }));
    };
    const first = setTimeout(read, 250);
    const again = refreshMs === undefined ? undefined : setInterval(read, refreshMs);
    return () => {
      stopped = true;
      clearTimeout(first);
      clearInterval(again);
    };
  }, [client, key]);
  return state !== null && state.key === key ? state : null;
}
