/**
 * A value read from the API every `everyMs` while the component is mounted (and at once when
 * `key` changes). For what has no stream (24-hour statistics, fees, history pages). A failed read
 * keeps the last value and is reported once until a read succeeds again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { reportError } from './notify.ts';

export function usePoll<T>(read: (() => Promise<T>) | null, everyMs: number, key: string): [T | null, () => void] {
  const [value, setValue] = useState<T | null>(null);
  const reader = useRef(read);
  reader.current = read;
  const [tick, setTick] = useState(0);
  useEffect(() => {
    setValue(null);
  }, [key]);
  useEffect(() => {
    let stopped = false;
    let failing = false;
    const run = async () => {
      const r = reader.current;
      if (r === null) return;
      try {
        const v = await r();
        failing = false;
        if (!stopped) setValue(() => v);
      } catch (e) {
        if (!failing && !stopped) reportError(e);
        failing = true;
      }
    };
    void run();
    const timer = setInterval(run, everyMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [key, everyMs, tick, read === null]);
  return [value, () => setTick((t) => t + 1)];
}
