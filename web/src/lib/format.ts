/**
 * Display of the API's decimal strings: digits grouped, signs and colours, times. Formatting only:
 * no arithmetic on money happens in the browser (margins, fees, PnL and prices come from the API).
 */

/** "96968.4" -> "96,968.4"; null/undefined -> "—". Keeps every digit the service sent. */
export function num(value: string | null | undefined, fixed?: number): string {
  if (value === null || value === undefined || value === '') return '—';
  const [int = '', rawFrac] = value.split('.');
  let frac = rawFrac;
  if (fixed !== undefined) frac = (frac ?? '').padEnd(fixed, '0').slice(0, fixed);
  const negative = int.startsWith('-');
  const digits = negative ? int.slice(1) : int;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${frac !== undefined && frac !== '' ? `.${frac}` : ''}`;
}

/** The sign of a decimal string: -1, 0 or 1. */
export function sign(value: string | null | undefined): -1 | 0 | 1 {
  if (value === null || value === undefined || !/[1-9]/.test(value)) return 0;
  return value.startsWith('-') ? -1 : 1;
}

/** A CSS class for a value that is good when positive (PnL, change). */
export function tone(value: string | null | undefined): string {
  const s = sign(value);
  return s > 0 ? 'up' : s < 0 ? 'down' : '';
}

export function pct(value: string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return `${sign(value) > 0 ? '+' : ''}${value}%`;
}

export function time(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const d = new Date(iso);
  return d.toISOString().slice(11, 19);
}

export function dateTime(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  return new Date(iso).toISOString().replace('T', ' ').slice(0, 19);
}

/** "in 42m 10s" until a future instant. */
export function countdown(iso: string | null | undefined, now: number): string {
  if (iso === null || iso === undefined) return '—';
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return 'now';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h ${m}m` : `${m}m ${s % 60}s`;
}

export function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}
