/**
 * The share of a capacity one client address may hold, for the caps counted per address: open TCP
 * connections (connection-limits.ts) and open streams (streams/admission.ts).
 *
 * A cap per address alone lets a few addresses fill the whole capacity (10,000 streams at 600 per
 * address: 17 addresses), after which everyone is refused. So the last 20 % of the capacity is
 * shared out more thinly: once `open` reaches 80 % of `cap`, an address may hold at most
 *
 *     ceil(perAddress × (free / reserve)²)      free = cap − open, reserve = cap − 80 % of cap
 *
 * which is `perAddress` at 80 %, a quarter of it halfway to the cap, and 1 for the last slots: an
 * address holding nothing is let in until the cap itself, while one holding many is refused first.
 * Filling the cap then takes an attacker many addresses (at the stream defaults about 160 instead
 * of 17), and until it is full any address still gets its first slot.
 */

/** The fraction of a cap past which the per-address ceiling starts to fall. */
export const CROWDED_FRACTION = 0.8;

/** The most one address may hold when a new slot is asked for with `open` of `cap` taken (0: none). */
export function addressCeiling(perAddress: number, open: number, cap: number): number {
  const crowdedAt = Math.floor(cap * CROWDED_FRACTION);
  if (open < crowdedAt) return perAddress;
  const free = cap - open;
  if (free <= 0) return 0;
  const reserve = cap - crowdedAt;
  return Math.min(perAddress, Math.ceil(perAddress * (free / reserve) ** 2));
}
