/**
 * A button's action against the API: busy while it runs (the button disables itself, so one click
 * sends one request), and any error reported in words (lib/notify.ts) under what was being done.
 * And the focus for a confirmation that appears: on its first button, so a keyboard user goes on.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { reportError } from '../../lib/notify.ts';

export function useAction(): [busy: boolean, run: (doing: string, action: () => Promise<void>) => Promise<boolean>] {
  const [busy, setBusy] = useState(false);
  const run = async (doing: string, action: () => Promise<void>): Promise<boolean> => {
    setBusy(true);
    try {
      await action();
      return true;
    } catch (e) {
      reportError(e, doing);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return [busy, run];
}

/** A ref for the element to focus when the component mounts (a confirmation's button). */
export function useFocusOnMount<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}
