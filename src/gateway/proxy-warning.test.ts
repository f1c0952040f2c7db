/** The proxy warning: once, for a forwarding header from a peer TRUST_PROXY does not list. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { proxyWarning } from './proxy-warning.ts';

const request = (headers: Record<string, string>, peer: string, ip = peer) => ({ headers, ip, socket: { remoteAddress: peer } }) as never;

test('warns once when a request carries X-Forwarded-For and TRUST_PROXY is not set', async () => {
  const warnings: string[] = [];
  const hook = proxyWarning([], (m) => warnings.push(m));
  await hook(request({}, '10.0.0.5'));
  assert.equal(warnings.length, 0, 'no forwarding header, no warning');
  await hook(request({ 'x-forwarded-for': '203.0.113.9' }, '10.0.0.5'));
  await hook(request({ forwarded: 'for=203.0.113.10' }, '10.0.0.5'));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /10\.0\.0\.5 carries x-forwarded-for but TRUST_PROXY is not set/);
});

test('a trusted proxy is quiet; an untrusted peer beside it warns', async () => {
  const warnings: string[] = [];
  const hook = proxyWarning(['10.0.0.5'], (m) => warnings.push(m));
  await hook(request({ 'x-forwarded-for': '203.0.113.9' }, '10.0.0.5', '203.0.113.9'));
  assert.equal(warnings.length, 0);
  await hook(request({ 'x-real-ip': '203.0.113.9' }, '10.0.0.6'));
  assert.match(warnings[0]!, /TRUST_PROXY does not list that peer/);
});
