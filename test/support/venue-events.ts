/**
 * Test and benchmark fixture: the commands a seeded venue (test/support/rich-venue.ts: deposits,
 * withdrawals, perps, futures, spot, options, quotes, liquidations, expiries, marks and DVOL on
 * every tick) had accepted, each with its time and the events the core produced for it, as the
 * sequencer hands them to the journal and a projector follows them.
 */
import type { CommandOf, CommandType } from '../../src/core/commands.ts';
import type { Exchange, Outcome, ResultOf } from '../../src/core/exchange.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { RichVenue } from './rich-venue.ts';

/** The venue's accepted commands with their events, and its core as they left it (its ledger, say). */
export function venueCommands(seed: number, steps: number): { commands: CommittedCommand[]; exchange: Exchange } {
  const venue = new RichVenue(seed);
  const out: CommittedCommand[] = [];
  const execute = venue.ex.execute.bind(venue.ex);
  // Every accepted command with its events (RichVenue keeps the commands only).
  venue.ex.execute = <T extends CommandType>(command: CommandOf<T>, now: number): Outcome<ResultOf<T>> => {
    const outcome = execute(command, now);
    if (outcome.ok) out.push({ ts: now, command, events: outcome.events });
    return outcome;
  };
  venue.run(steps);
  return { commands: out, exchange: venue.ex };
}

/** Batch sizes that vary (1 to 97 commands), as group commits do under changing load. */
export function batches<T>(items: readonly T[]): T[][] {
  const sizes = [1, 5, 17, 2, 64, 9, 97, 33, 1, 40];
  const out: T[][] = [];
  for (let i = 0, k = 0; i < items.length; k++) {
    const size = sizes[k % sizes.length]!;
    out.push(items.slice(i, i + size));
    i += size;
  }
  return out;
}
