/**
 * clientNetwork: IPv4 as is, IPv4-mapped IPv6 as its IPv4, IPv6 by its /64 prefix in one spelling
 * whatever the address's own (compressed, upper-case, zone index); checked against node:net's
 * BlockList on random addresses.
 */
import assert from 'node:assert/strict';
import { BlockList } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import { clientNetwork } from './client-network.ts';

test('examples', () => {
  assert.equal(clientNetwork('203.0.113.5'), '203.0.113.5');
  assert.equal(clientNetwork('::ffff:203.0.113.5'), '203.0.113.5');
  assert.equal(clientNetwork('2001:db8:1:2:3:4:5:6'), '2001:0db8:0001:0002::/64');
  assert.equal(clientNetwork('2001:DB8:1:2::9'), '2001:0db8:0001:0002::/64', 'one /64, any host, any case');
  assert.equal(clientNetwork('2001:db8::1'), '2001:0db8:0000:0000::/64');
  assert.equal(clientNetwork('::1'), '0000:0000:0000:0000::/64');
  assert.equal(clientNetwork('fe80::1%eth0'), 'fe80:0000:0000:0000::/64');
  assert.notEqual(clientNetwork('2001:db8:1:2::1'), clientNetwork('2001:db8:1:3::1'), 'another /64 is another client');
});

test('every spelling of an IPv6 address maps to the /64 that contains it', () => {
  const group = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
  fc.assert(
    fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), fc.boolean(), (groups, upper) => {
      const full = groups.map((g) => g.toString(16)).join(':');
      // the longest run of zero groups compressed to '::', as an address is usually written
      let best = { at: -1, len: 0 };
      for (let i = 0; i < 8; i++) {
        let j = i;
        while (j < 8 && groups[j] === 0) j++;
        if (j - i > best.len) best = { at: i, len: j - i };
      }
      const hex = groups.map((g) => g.toString(16));
      const short = best.len < 2 ? full : `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
      const spelled = upper ? short.toUpperCase() : short;
      if (/^::ffff:/i.test(spelled)) return; // IPv4-mapped forms are their IPv4
      const network = clientNetwork(spelled);
      assert.equal(network, clientNetwork(full));
      const list = new BlockList();
      list.addSubnet(network.slice(0, -'/64'.length), 64, 'ipv6');
      assert.ok(list.check(full, 'ipv6'), `${spelled} -> ${network}`);
    }),
    { numRuns: 500 },
  );
});
