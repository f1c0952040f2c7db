/**
 * A live subscription for a component: opens an SDK stream (snapshot, then deltas, reconnecting by
 * itself, sse.ts of the SDK) while the component is mounted and closes it after. Every open stream
 * reports its state to `streams`, so the status bar says when one is reconnecting and why.
 */
import { useEffect, useRef } from 'preact/hooks';
import type { ExchangeClient, StreamEvent, StreamPath, StreamStatus } from '../../../sdk/src/index.ts';
import type { StreamOptions } from '../../../sdk/src/sse.ts';
import { Store } from './store.ts';

export interface StreamState {
  readonly name: string;
  readonly status: StreamStatus;
}

/** Every stream the page holds, by a name that says what it carries. */
export const streams = new Store<ReadonlyMap<number, StreamState>>(new Map());
let nextId = 1;

function report(id: number, state: StreamState | null): void {
  streams.update((all) => {
    const next = new Map(all);
    if (state === null) next.delete(id);
    else next.set(id, state);
    return next;
  });
}

/**
 * Subscribes `client` to `path` while mounted and while `key` stays the same (a new key reopens);
 * `client` null (not signed in) opens nothing. `onEvent` is read through a ref: it may change on
 * every render without reopening the stream.
 */
export function useStream<P extends StreamPath>(
  client: ExchangeClient | null,
  name: string,
  path: P,
  options: Omit<StreamOptions<P>, 'onEvent' | 'onStatus' | 'signal'>,
  onEvent: (event: StreamEvent<P>) => void,
  key: string,
): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    if (client === null) return undefined;
    const id = nextId++;
    const subscription = client.stream(path, {
      ...options,
      maxDelayMs: 5_000,
      onEvent: (event) => handler.current(event),
      onStatus: (status) => report(id, { name, status }),
    });
    return () => {
      subscription.close();
      report(id, null);
    };
  }, [client, key]);
}
