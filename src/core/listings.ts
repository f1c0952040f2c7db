/**
 * The listing calendar (decisions.md "Instruments"): for each underlying the venue keeps a ladder
 * of expiries listed — the next two dailies, the next two weekly Fridays, the last Friday of this
 * and next month, and the last Friday of the next two quarter months (Mar/Jun/Sep/Dec) — all at
 * 08:00 UTC. A dated future is listed for every expiry (the option board's forwards come from
 * them); as expiries pass, the ladder moves forward. Pure: a function of time.
 *
 * Ids: `BTC-25DEC26` for the future expiring 2026-12-25 08:00 UTC.
 */

const DAY = 86_400_000;
const EXPIRY_HOUR_MS = 8 * 3_600_000;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** Expiries (ms) that should be listed at `now`, ascending; each strictly in the future. */
export function listedExpiries(now: number): number[] {
  const out = new Set<number>();
  const todayAt8 = Math.floor(now / DAY) * DAY + EXPIRY_HOUR_MS;
  const firstDaily = todayAt8 > now ? todayAt8 : todayAt8 + DAY;
  out.add(firstDaily);
  out.add(firstDaily + DAY);
  let fridays = 0;
  for (let t = firstDaily; fridays < 2; t += DAY) {
    if (new Date(t).getUTCDay() !== 5) continue;
    out.add(t);
    fridays++;
  }
  const d = new Date(now);
  const year = d.getUTCFullYear();
  let monthlies = 0;
  let quarterlies = 0;
  for (let m = d.getUTCMonth(); monthlies < 2 || quarterlies < 2; m++) {
    const last = lastFriday(year, m);
    if (last <= now) continue;
    if (monthlies < 2) {
      out.add(last);
      monthlies++;
    }
    if (m % 3 === 2 && quarterlies < 2) {
      out.add(last);
      quarterlies++;
    }
  }
  return [...out].sort((a, b) => a - b);
}

/** Last Friday of a month (month may overflow: 13 = next year's February), 08:00 UTC. */
export function lastFriday(year: number, month: number): number {
  const firstOfNext = Date.UTC(year, month + 1, 1);
  let t = firstOfNext - DAY + EXPIRY_HOUR_MS;
  while (new Date(t).getUTCDay() !== 5) t -= DAY;
  return t;
}

/** `25DEC26` for an expiry time. */
export function expiryCode(expiry: number): string {
  const d = new Date(expiry);
  const day = String(d.getUTCDate()).padStart(2, '0');
  return `${day}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear() % 100).padStart(2, '0')}`;
}

export function futureId(underlying: string, expiry: number): string {
  return `${underlying}-${expiryCode(expiry)}`;
}
