/**
 * The journal's compact command encoding: any command-shaped value (and any realistic command of
 * every type) decodes to a deep-equal value, bigints exact, null, undefined and absent kept apart,
 * key order kept; the market maker's quotes take a small fraction of their JSON; records written
 * in format 1, 2, 3 or 4 decode the same for ever (the dictionary is append-only); and a malformed record or
 * a value that is not plain data is refused rather than misread.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { encode } from './codec.ts';
import { decodeCommand, encodeCommand } from './command-codec.ts';
import { commandOfEachType, optionBulkQuote, perpQuoteLadder, seededRandom } from './command-samples.ts';
import { CURRENT_FORMAT, FORMATS, SHAPES, STRINGS } from './command-table.ts';

const roundTrip = (v: unknown) => decodeCommand(encodeCommand(v));

/** Keys and strings as commands have them: the dictionary's, hex addresses, and anything else. */
const text = fc.oneof(
  fc.constantFrom(...STRINGS),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 4 }),
  fc.uint8Array({ minLength: 1, maxLength: 32 }).map((b) => '0x' + Buffer.from(b).toString('hex')),
  fc.constantFrom('0x', '0xAB', '0xabc', '__proto__', ''),
);
const number = fc.oneof(fc.integer({ min: -200, max: 200 }), fc.integer(), fc.maxSafeInteger(), fc.double(), fc.constantFrom(-0, 2 ** 53, -(2 ** 60), 1e300));
const bigint = fc.oneof(
  fc.bigInt(),
  fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 60 })).map(([m, e]) => m * 10n ** BigInt(e)),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    bigint, text, number, fc.boolean(), fc.constant(null), fc.constant(undefined),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(text, tie('value'), { maxKeys: 6, noNullPrototype: true }),
    // Repeated shapes and strings inside one record: the references must resolve.
    fc.tuple(fc.dictionary(text, tie('value'), { maxKeys: 4, noNullPrototype: true }), fc.nat(3)).map(([o, n]) => Array(n + 1).fill(o)),
  ),
}));

test('decode(encode(v)) deep-equals v for arbitrary command-shaped values', () => {
  fc.assert(fc.property(value, (v) => {
    assert.deepStrictEqual(roundTrip(v), v);
  }), { numRuns: 3000 });
});

test('every command type round-trips, realistic values, in less than half its JSON', () => {
  fc.assert(fc.property(fc.integer(), (seed) => {
    const commands = commandOfEachType(seededRandom(seed));
    assert.equal(new Set(commands.map((c) => c.type)).size, 25, 'one of each command type');
    for (const command of commands) {
      const record = encodeCommand(command);
      assert.deepStrictEqual(decodeCommand(record), command);
      assert.ok(record.length < Buffer.byteLength(encode(command)) / 2, `${command.type}: ${record.length} bytes`);
    }
  }), { numRuns: 500 });
});

test('a market maker option bulk quote takes at most 12 % of its JSON, a perp quote ladder at most 8 %', () => {
  for (let seed = 0; seed < 50; seed++) {
    const option = optionBulkQuote(seededRandom(seed));
    const perp = perpQuoteLadder(seededRandom(seed));
    // About 900 and 3,500 bytes of JSON; 96 and 252 bytes here.
    assert.ok(encodeCommand(option).length <= 0.12 * encode(option).length, `option quote ${encodeCommand(option).length} of ${encode(option).length}`);
    assert.ok(encodeCommand(perp).length <= 0.08 * encode(perp).length, `perp quote ${encodeCommand(perp).length} of ${encode(perp).length}`);
  }
});

test('bigints are exact: fixed-point amounts take a few bytes, any size and sign comes back', () => {
  assert.equal(encodeCommand(97079560000000000000000n).length, 7, 'format, tag, exponent, 4-byte mantissa 9707956');
  for (const v of [0n, -1n, 10n ** 18n, -(10n ** 40n) - 7n, 2n ** 70n, 123456789012345678901234567890n, -(2n ** 53n) * 10n ** 18n]) {
    assert.equal(roundTrip(v), v);
  }
});

test('null, undefined and an absent key stay apart; key order and numbers are kept', () => {
  const v = { b: null, a: undefined, c: [undefined, null], n: [-0, 0, 0.1, -1, NaN, Infinity, 2 ** 53, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER] };
  const back = roundTrip(v) as typeof v;
  assert.deepStrictEqual(back, v);
  assert.deepEqual(Object.keys(back), ['b', 'a', 'c', 'n']);
  assert.ok(Object.is(back.n[0], -0));
  assert.ok(!('d' in back));
  const proto = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as object;
  assert.deepStrictEqual(roundTrip(proto), proto);
  assert.equal(Object.getPrototypeOf(roundTrip(proto)), Object.prototype, 'a __proto__ key stays a key');
});

test('records of format 1 decode the same for ever: its dictionary is frozen, later entries only append', () => {
  const f = FORMATS[1]!;
  assert.equal(f.strings.length, 103);
  assert.equal(f.shapes.length, 30);
  const fingerprint = createHash('sha256').update(JSON.stringify([f.strings, f.shapes])).digest('hex');
  assert.equal(fingerprint, '2ceb36e567b7b675504bcbf34c9f37eef0281fefc549606386043dedf35f7139', 'an entry of format 1 was edited, moved or removed');
  assert.equal(new Set(STRINGS).size, STRINGS.length, 'no string twice');
  assert.equal(new Set(SHAPES.map((s) => JSON.stringify(s))).size, SHAPES.length, 'no shape twice');
  const a = `0x${'5c7d'.repeat(10)}`;
  const records: [string, unknown][] = [
    ['0121ba0c145c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d20de41c8070e2a0710b4c3d004ca0302ce0b04636c2d37000000d100', {
      type: 'perp.place', account: a, request: {
        marketId: 'BTC-PERP', side: 1, type: 'limit', quantity: 4200000000000000n, price: 97079560000000000000000n, timeInForce: 'gtc',
        postOnly: true, reduceOnly: false, marginMode: 'isolated', clientOrderId: 'cl-7', stopPrice: null, takeProfitPrice: null,
        stopLossPrice: null, selfTradePrevention: 'cancel_both', quoteId: null,
      },
    }],
    ['0133b8dc1002340b036f6b780710ace01404fbdc81e7a134346007109fe01404c8df81e7a134', {
      type: 'prices.observe', underlying: 'ETH', observations: [
        { source: 'okx', price: 3400120000000000000000n, ts: 1795780800123 }, { source: 'okx', price: 3399990000000000000000n, ts: 1795780800456 }],
    }],
    ['011106800b046c6973740b04746578740b0473616d650b066e65737465640b05616761696e0b13736f6d652e6675747572655f636f6d6d616e64100905050600000000'
      + '00000440060000000000000080042804ffffffffffffff0f03010a000d0c9f2c9cd04674edea400000010700000b09c3bc6ec3af636f6465661102800b03782d790b01'
      + '78003f0b01791000', {
      type: 'some.future_command', list: [-5, 2.5, -0, 40, 2 ** 53 - 1, true, undefined, -(10n ** 30n) - 1n, 0n], text: 'ünïcode', same: 'ünïcode',
      nested: { type: 'x', 'x-y': null }, again: { type: 'y', 'x-y': [] },
    }],
  ];
  for (const [hex, command] of records) {
    assert.deepStrictEqual(decodeCommand(Buffer.from(hex, 'hex')), command);
    if (CURRENT_FORMAT.byte === 1) assert.equal(encodeCommand(command).toString('hex'), hex);
  }
});

test('records of format 2 (the dead-man switch) decode the same for ever, and format 1 records still read', () => {
  const f = FORMATS[2]!;
  assert.equal(f.strings.length, 106);
  assert.equal(f.shapes.length, 32);
  assert.deepStrictEqual(f.strings.slice(0, 103), FORMATS[1]!.strings, 'format 2 only appends to format 1');
  const fingerprint = createHash('sha256').update(JSON.stringify([f.strings, f.shapes])).digest('hex');
  assert.equal(fingerprint, '5604c8134aa7bca9ddc44a5b5a39f10172449ffdd2f7b3ea48c80a5e975a8a90', 'an entry of format 2 was edited, moved or removed');
  const a = `0x${'5c7d'.repeat(10)}`;
  const records: [string, unknown][] = [
    ['023ee70c145c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d04e0d403', { type: 'orders.cancel_all_after', account: a, timeoutMs: 60_000 }],
    ['023fe80c145c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d', { type: 'orders.cancel_all', account: a }],
  ];
  for (const [hex, command] of records) {
    assert.deepStrictEqual(decodeCommand(Buffer.from(hex, 'hex')), command);
    if (CURRENT_FORMAT.byte === 2) assert.equal(encodeCommand(command).toString('hex'), hex);
  }
});

test('records of format 3 (the perp amend) decode the same for ever, and older formats still read', () => {
  const f = FORMATS[3]!;
  assert.equal(f.strings.length, 107);
  assert.equal(f.shapes.length, 32);
  assert.deepStrictEqual(f.strings.slice(0, 106), FORMATS[2]!.strings, 'format 3 only appends to format 2');
  assert.deepStrictEqual(f.shapes, FORMATS[2]!.shapes, 'format 3 adds no shape');
  const fingerprint = createHash('sha256').update(JSON.stringify([f.strings, f.shapes])).digest('hex');
  assert.equal(fingerprint, 'b071f74ea9d65fb6e5d9ad97a8eb168bc3fcd845a29fde9b062d278bdadc1e41', 'an entry of format 3 was edited, moved or removed');
  const a = `0x${'5c7d'.repeat(10)}`;
  const hex = '0336ea0c145c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d04e7240710b4c3d00400';
  const command = { type: 'perp.modify', account: a, orderId: 4711, price: 97079560000000000000000n, quantity: null };
  assert.deepStrictEqual(decodeCommand(Buffer.from(hex, 'hex')), command);
  if (CURRENT_FORMAT.byte === 3) assert.equal(encodeCommand(command).toString('hex'), hex);
});

test('records of format 4 (an isolated order\'s leverage) decode the same for ever', () => {
  const f = FORMATS[4]!;
  assert.equal(f.strings.length, 108);
  assert.equal(f.shapes.length, 33);
  assert.deepStrictEqual(f.strings.slice(0, 107), FORMATS[3]!.strings, 'format 4 only appends to format 3');
  assert.deepStrictEqual(f.shapes.slice(0, 32), FORMATS[3]!.shapes, 'format 4 only appends to format 3');
  const fingerprint = createHash('sha256').update(JSON.stringify([f.strings, f.shapes])).digest('hex');
  assert.equal(fingerprint, '3778022135cab886b97fea3feb7e311130d19953b9b8aa1719cfddaf37324625', 'an entry of format 4 was edited, moved or removed');
  const a = `0x${'5c7d'.repeat(10)}`;
  const hex = '0421ba0c145c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d5c7d1220de40c8070e2a0710b4c3d004ca0202ce00000000cf00071205';
  const command = {
    type: 'perp.place', account: a, request: {
      marketId: 'BTC-PERP', side: 0, type: 'limit', quantity: 4200000000000000n, price: 97079560000000000000000n, timeInForce: 'gtc',
      postOnly: false, reduceOnly: false, marginMode: 'isolated', clientOrderId: null, stopPrice: null, takeProfitPrice: null,
      stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null, leverage: 5000000000000000000n,
    },
  };
  assert.deepStrictEqual(decodeCommand(Buffer.from(hex, 'hex')), command);
  if (CURRENT_FORMAT.byte === 4) assert.equal(encodeCommand(command).toString('hex'), hex);
});

test('a record from a newer build, a truncated record or trailing bytes are refused, not misread', () => {
  const record = encodeCommand(perpQuoteLadder());
  const unknown = new RegExp(`format ${FORMATS.length} is unknown \\(written by a newer build\\?\\)`);
  assert.throws(() => decodeCommand(Buffer.from([FORMATS.length, 0x00])), unknown);
  assert.throws(() => decodeCommand(Buffer.from([0x00, 0x00])), /format 0 is unknown/);
  assert.throws(() => decodeCommand(Buffer.alloc(0)), /format none is unknown/);
  for (let length = 1; length < record.length; length += 7) {
    assert.throws(() => decodeCommand(record.subarray(0, length)), /truncated|referred to before|unknown tag/, `cut at ${length}`);
  }
  assert.throws(() => decodeCommand(Buffer.concat([record, Buffer.from([0])])), /bytes after its value/);
  assert.throws(() => decodeCommand(Buffer.from([1, 0x60])), /string 0 referred to before it was written/);
  assert.throws(() => decodeCommand(Buffer.from([1, 0x3f])), /shape 31 referred to before it was written/);
  assert.throws(() => decodeCommand(Buffer.from([1, 0x1f])), /unknown tag 0x1f/);
  assert.throws(() => decodeCommand(Buffer.from([1, 0x0f, 0x90, 0x01])), /format 1 has no string 144/);
  assert.deepStrictEqual(decodeCommand(new Uint8Array(record)), perpQuoteLadder(), 'a Uint8Array reads like a Buffer');
});

test('values that are not plain data are refused rather than written as something else', () => {
  assert.throws(() => encodeCommand({ at: new Date(0) }), /plain data only, not a Date/);
  assert.throws(() => encodeCommand({ m: new Map() }), /plain data only, not a Map/);
  assert.throws(() => encodeCommand({ f: () => 1 }), /plain data only, not a function/);
  assert.throws(() => encodeCommand([Symbol('s')]), /plain data only, not a symbol/);
});
