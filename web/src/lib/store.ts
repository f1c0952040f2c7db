/**
 * A value many components watch: set() replaces it and re-renders every component that reads it
 * through useStore(). The terminal's shared state (the signed-in account, stream states, notices)
 * lives in a few of these; everything else is local to its screen.
 */
import { useEffect, useState } from 'preact/hooks';

export class Store<T> {
  private readonly listeners = new Set<(value: T) => void>();
  constructor(private current: T) {}

  get value(): T {
    return this.current;
  }

  set(value: T): void {
    this.current = value;
    for (const listener of this.listeners) listener(value);
  }

  update(change: (value: T) => T): void {
    this.set(change(this.current));
  }

  subscribe(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export function useStore<T>(store: Store<T>): T {
  const [value, setValue] = useState(store.value);
  useEffect(() => {
    setValue(store.value);
    return store.subscribe(setValue);
  }, [store]);
  return value;
}
