/**
 * The bottom line: how many live streams are open, each one that is not (reconnecting, and why;
 * closed with an error), and the server's clock (GET /time, so expiries and funding countdowns
 * read against the service, not this computer).
 */
import { useEffect, useState } from 'preact/hooks';
import { market } from '../api/account.ts';
import { streams } from '../lib/use-stream.ts';
import { useStore } from '../lib/store.ts';

export function StatusBar() {
  const all = [...useStore(streams).values()];
  const open = all.filter((s) => s.status.state === 'open').length;
  const troubled = all.filter((s) => s.status.state === 'reconnecting' || (s.status.state === 'closed' && s.status.error !== undefined));
  const offset = useServerOffset();
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return (
    <footer class="statusbar">
      <span class={troubled.length > 0 ? 'warn' : 'ok'} data-testid="stream-status">
        {troubled.length > 0 ? '●' : '●'} {open} live stream{open === 1 ? '' : 's'}
      </span>
      {troubled.map((s) => (
        <span key={s.name} class="warn" role="status">
          {s.name}: {s.status.state === 'reconnecting' ? `reconnecting in ${Math.ceil(s.status.delayMs / 1000)} s (${s.status.reason})` : `stopped: ${s.status.state === 'closed' ? s.status.error?.message : ''}`}
        </span>
      ))}
      <span class="spacer" />
      <span class="muted">server time {offset === null ? '—' : new Date(now + offset).toISOString().slice(0, 19).replace('T', ' ')} UTC</span>
    </footer>
  );
}

/** Server time minus this computer's, from GET /time (half the round trip taken as the transit). */
function useServerOffset(): number | null {
  const [offset, setOffset] = useState<number | null>(null);
  useEffect(() => {
    const sent = Date.now();
    market
      .get('/time')
      .then((t) => {
        const received = Date.now();
        setOffset(t.epochMs - (sent + received) / 2);
      })
      .catch(() => setOffset(null));
  }, []);
  return offset;
}
