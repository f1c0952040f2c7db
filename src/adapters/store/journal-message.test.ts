/**
 * The journal worker's message format: packing a committed command and unpacking it gives back the
 * command and exactly its projected events, field for field, for every event type the projections
 * consume (events from a real core: a deposit, a transfer, a resting order, a fill).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coreConfig } from '../../config/core.ts';
import { BUY, SELL } from '../../core/book/order-book.ts';
import type { Command } from '../../core/commands.ts';
import type { ExchangeEvent } from '../../core/events.ts';
import { Exchange } from '../../core/exchange.ts';
import { PLAIN_ORDER } from '../../core/linear/order.ts';
import { fx } from '../../core/money.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { FILL_FIELDS, FILL_SIDE_FIELDS, LEDGER_FIELDS, ORDER_FIELDS, packCommitted, unpackCommitted } from './journal-message.ts';

const MAKER = `0x${'3'.repeat(40)}`;
const TAKER = `0x${'1'.repeat(40)}`;
const PROJECTED = new Set<ExchangeEvent['type']>(['order', 'fill', 'ledger', 'settlement']);

function committedCommands(): CommittedCommand[] {
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 86_400_000 }));
  const out: CommittedCommand[] = [];
  let now = Date.UTC(2026, 10, 22);
  const run = (command: Command) => {
    const outcome = exchange.execute(command, ++now);
    if (!outcome.ok) throw new Error(`${command.type}: ${outcome.code} ${outcome.message}`);
    out.push({ ts: now, command, events: outcome.events });
  };
  for (const [i, account] of [MAKER, TAKER].entries()) {
    run({ type: 'chain.deposit_observed', txHash: `0x${i}`, account, amount: fx('100000'), confirmations: 1 });
    run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx('100000') });
  }
  run({ type: 'index.publish', underlying: 'BTC', price: fx('10000'), sourceTs: now });
  const order = { marketId: 'BTC-PERP', quantity: fx('0.5'), postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER } as const;
  run({ type: 'perp.place', account: MAKER, request: { ...order, side: SELL, type: 'limit', price: fx('10001'), timeInForce: 'gtc', clientOrderId: 'mk-1' } });
  run({ type: 'perp.place', account: TAKER, request: { ...order, side: BUY, type: 'market', price: null, timeInForce: 'ioc', quantity: fx('0.2') } });
  return out;
}

test('a packed command unpacks to the same command and projected events, field for field', () => {
  const commands = committedCommands();
  const seen = new Set<string>();
  for (const c of commands) {
    const projected = c.events.filter((e) => PROJECTED.has(e.type));
    for (const e of projected) seen.add(e.type);
    assert.deepStrictEqual(unpackCommitted(packCommitted(c, PROJECTED)), { ts: c.ts, command: c.command, events: projected });
  }
  assert.deepEqual([...seen].sort(), ['fill', 'ledger', 'order', 'settlement'], 'every projected event type was exercised');
});

/** A record whose every field holds its own name: a field packed or read out of place shows. */
function distinct(fields: readonly string[], prefix: string): Record<string, unknown> {
  return Object.fromEntries(fields.map((f) => [f, `${prefix}${f}`]));
}

test('every field comes back in its own place (records whose fields all differ)', () => {
  const fill = { ...distinct(FILL_FIELDS, 'f.'), maker: distinct(FILL_SIDE_FIELDS, 'm.'), taker: distinct(FILL_SIDE_FIELDS, 't.') };
  const events = [
    { type: 'order', order: distinct(ORDER_FIELDS, 'o.') },
    { type: 'fill', fill },
    { type: 'ledger', entry: distinct(LEDGER_FIELDS, 'l.') },
  ] as unknown as ExchangeEvent[];
  const c: CommittedCommand = { ts: 7, command: { type: 'perp.cancel', account: MAKER, orderId: 1 }, events };
  assert.deepStrictEqual(unpackCommitted(packCommitted(c, PROJECTED)), c);
});

test('events of types the projections do not consume are left out', () => {
  const fill = committedCommands().at(-1)!;
  assert.ok(fill.events.some((e) => e.type === 'position'), 'the fill command emits position events');
  const unpacked = unpackCommitted(packCommitted(fill, new Set(['fill'])));
  assert.deepEqual(unpacked.events.map((e) => e.type), ['fill']);
});

test('an unknown event tag is refused, not skipped', () => {
  assert.throws(() => unpackCommitted([1, { type: 'x' }, 9, 'stray']), /unknown event tag 9/);
});
