/**
 * The dictionary of the journal's compact command encoding (command-codec.ts): the strings a
 * command record names again and again (field names, command types, order enums, buckets, the
 * default markets and sources) and the object shapes the gateway, the feed and the chain watcher
 * build (the key lists, in their order). A record refers to an entry by its index instead of
 * writing it; anything not in the dictionary is written out in the record, so a command this
 * table never heard of still round-trips, only larger.
 *
 * Append-only and versioned: an index, once written to a journal, must mean the same entry for
 * ever. So entries are only ever added at the end of STRINGS or SHAPES, and each format (the
 * record's first byte) names how much of each list it may use: FORMATS[n] is format n. Adding
 * entries means adding a format with the new lengths and writing it from then on; a record of an
 * older format still reads, because the entries it used have not moved. Reordering, removing or
 * editing an entry breaks old journals: command-codec.test.ts decodes fixed records of every
 * format ever written to catch it.
 */

/** Strings referred to by index (field names and values alike). Append only. */
export const STRINGS: readonly string[] = [
  // Field names of the commands (core/commands.ts, core/clob/commands.ts) and their parts.
  'type', 'account', 'request', 'orderId', 'filter', 'quote', 'close', 'from', 'to', 'amount',
  'clientId', 'txHash', 'confirmations', 'id', 'move', 'underlying', 'price', 'sourceTs', 'observations', 'source',
  'ts', 'marketId', 'side', 'quantity', 'timeInForce', 'postOnly', 'reduceOnly', 'marginMode', 'clientOrderId', 'stopPrice',
  'takeProfitPrice', 'stopLossPrice', 'selfTradePrevention', 'quoteId', 'cancelAll', 'replaceQuoteId', 'levels', 'strategy', 'name', 'allOrNone',
  'cancelOnFailure', 'legs', 'config', 'windowMs', 'frozenMs', 'quantityLimit', 'deltaLimit', 'vegaLimit', 'asset', 'reason',
  // Command types.
  'wallet.transfer', 'wallet.withdraw', 'chain.deposit_observed', 'chain.deposit_reorged', 'withdrawal.move',
  'index.publish', 'prices.observe', 'clock.tick', 'perp.place', 'perp.cancel',
  'perp.cancel_all', 'perp.quote', 'perp.close', 'clob.place', 'clob.cancel',
  'clob.cancel_all', 'clob.modify', 'clob.quote', 'clob.strategy', 'clob.mmp_set',
  'clob.mmp_reset', 'treasury.grant',
  // Order enums (core/records.ts, core/book/types.ts), buckets, withdrawal moves.
  'limit', 'market', 'gtc', 'ioc', 'fok', 'cross', 'isolated', 'cancel_maker', 'cancel_taker', 'cancel_both',
  'wallet', 'perps', 'options', 'spot', 'processing', 'sent', 'confirmed', 'insufficient_liquidity', 'failed',
  // The embedded default's assets, markets, the reference market maker's quote id, the simulated sources.
  'BTC', 'ETH', 'USDC', 'BTC-PERP', 'ETH-PERP', 'BTC-USDC', 'ETH-USDC', 'mm',
  'coinbase-sim', 'kraken-sim', 'bitstamp-sim', 'binance-sim',
  // Format 2: the dead-man switch and the cancel of everything (core/commands.ts).
  'orders.cancel_all_after', 'orders.cancel_all', 'timeoutMs',
  // Format 3: the perp amend (its shape is the CLOB amend's).
  'perp.modify',
  // Format 4: an isolated order's chosen leverage.
  'leverage',
];

/** Object key lists, in the order their builders write them. Append only. */
export const SHAPES: readonly (readonly string[])[] = [
  // An order request (core/linear/order.ts OrderRequest, as gateway/order-requests.ts builds it).
  ['marketId', 'side', 'type', 'quantity', 'price', 'timeInForce', 'postOnly', 'reduceOnly', 'marginMode',
    'clientOrderId', 'stopPrice', 'takeProfitPrice', 'stopLossPrice', 'selfTradePrevention', 'quoteId'],
  ['type', 'account', 'request'],
  ['type', 'account', 'orderId'],
  ['type', 'account', 'filter'],
  ['type', 'account', 'quote'],
  ['marketId', 'quoteId', 'cancelAll', 'replaceQuoteId', 'levels'],
  ['type', 'account', 'close'],
  ['marketId', 'marginMode', 'quantity', 'type', 'price', 'timeInForce'],
  ['type', 'account', 'from', 'to', 'amount', 'clientId'],
  ['type', 'account', 'from', 'to', 'amount'],
  ['type', 'account', 'amount', 'clientId'],
  ['type', 'txHash', 'account', 'amount', 'confirmations'],
  ['type', 'txHash'],
  ['type', 'id', 'move'],
  ['to'],
  ['to', 'txHash'],
  ['to', 'confirmations'],
  ['to', 'reason'],
  ['type', 'underlying', 'price', 'sourceTs'],
  ['type', 'underlying', 'observations'],
  ['source', 'price', 'ts'],
  ['type'],
  ['type', 'account', 'orderId', 'price', 'quantity'],
  ['type', 'account', 'strategy'],
  ['name', 'allOrNone', 'cancelOnFailure', 'legs'],
  ['marketId', 'side', 'quantity', 'price'],
  ['type', 'account', 'underlying', 'config'],
  ['windowMs', 'frozenMs', 'quantityLimit', 'deltaLimit', 'vegaLimit'],
  ['type', 'account', 'underlying'],
  ['type', 'account', 'asset', 'amount'],
  // Format 2.
  ['type', 'account', 'timeoutMs'],
  ['type', 'account'],
  // Format 4: an order request with a leverage (the gateway appends it only when given).
  ['marketId', 'side', 'type', 'quantity', 'price', 'timeInForce', 'postOnly', 'reduceOnly', 'marginMode',
    'clientOrderId', 'stopPrice', 'takeProfitPrice', 'stopLossPrice', 'selfTradePrevention', 'quoteId', 'leverage'],
];

/** What a format may refer to: the first `strings` of STRINGS and the first `shapes` of SHAPES. */
export interface Format {
  readonly byte: number;
  readonly strings: readonly string[];
  readonly shapes: readonly (readonly string[])[];
}

const format = (byte: number, strings: number, shapes: number): Format => {
  if (strings > STRINGS.length || shapes > SHAPES.length) throw new Error(`command table format ${byte} names entries the table lacks`);
  return { byte, strings: STRINGS.slice(0, strings), shapes: SHAPES.slice(0, shapes) };
};

/** Every format ever written, by its byte (index 0 unused: a record never starts with 0). */
export const FORMATS: readonly (Format | undefined)[] = [undefined, format(1, 103, 30), format(2, 106, 32), format(3, 107, 32), format(4, 108, 33)];

/** The format new records are written in: the newest. */
export const CURRENT_FORMAT: Format = FORMATS[FORMATS.length - 1]!;
