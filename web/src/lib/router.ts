/**
 * Hash routes (#/trade/BTC-PERP): the terminal lives at `/` and never claims an API path, so a
 * reload or a shared link opens the same screen without any server-side routing.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  readonly screen: string;
  readonly arg: string | undefined;
}

function parse(hash: string): Route {
  const [screen, arg] = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { screen: screen !== undefined && screen !== '' ? screen : 'markets', arg };
}

export function navigate(screen: string, arg?: string): void {
  location.hash = arg === undefined ? `#/${screen}` : `#/${screen}/${encodeURIComponent(arg)}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parse(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}
