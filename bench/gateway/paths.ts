/**
 * Where order entry's time goes, by request path: the same service and the same signed-in client
 * (autocannon, 50 connections) on three routes of increasing depth, each run after the other:
 *   GET  /perps/balances        Fastify, session check, rate limit, a small view (no core command)
 *   POST /perps/orders/preview  the same plus body validation, decimal parsing, every pre-trade
 *                               check and the margin gate, with no side effect (no journal)
 *   POST /perps/orders          a durable IOC order that fills: the core, the group commit in the
 *                               journal worker, the stream mirrors and the order response
 * The gap between the last two is what durability, execution and the response cost on top of the
 * framework path. The venue is bench/gateway/orders.ts's (bench/shared/order-venue.ts).
 *
 * Run: node --import tsx bench/gateway/paths.ts [--connections 50 --duration 6 --warmup 2]
 */
import { parseArgs } from 'node:util';
import autocannon, { type RequestSpec } from 'autocannon';
import { marketOrderBody, startOrderVenue } from '../shared/order-venue.ts';

const { values: args } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '6' },
    warmup: { type: 'string', default: '2' },
  },
});

const venue = await startOrderVenue();
try {
  const { url, taker } = venue;
  const headers = { authorization: `Bearer ${taker.token}`, 'content-type': 'application/json' };
  const paths: [string, RequestSpec[]][] = [
    ['GET /perps/balances', [{ method: 'GET', path: '/perps/balances', headers }]],
    ['POST /perps/orders/preview', [{ method: 'POST', path: '/perps/orders/preview', headers, body: marketOrderBody('buy') }]],
    ['POST /perps/orders (durable)', [
      { method: 'POST', path: '/perps/orders', headers, body: marketOrderBody('buy') },
      { method: 'POST', path: '/perps/orders', headers, body: marketOrderBody('sell') },
    ]],
  ];
  const connections = Number(args.connections);
  for (const [name, requests] of paths) {
    await autocannon({ url, connections, duration: Number(args.warmup), requests });
    const r = await autocannon({ url, connections, duration: Number(args.duration), requests });
    const perSecond = Math.round(r['2xx'] / r.duration);
    console.log(`${name.padEnd(30)} ${String(perSecond).padStart(6)} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  non-2xx ${r.non2xx}`);
  }
} finally {
  venue.close();
}
