/**
 * A process's NATS connection against a real nats-server that asks for a token and speaks TLS only,
 * verifying client certificates (test/support/nats.ts, certificates.ts; docs/deploy.md "What each
 * server must provide"): with every credential a request goes through; without the token, without
 * TLS, without a client certificate, or trusting another authority, the connection is refused and
 * the error names the URL.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { makeCertificates, type TestCertificates } from '../../../test/support/certificates.ts';
import { NatsServer } from '../../../test/support/nats.ts';
import { closeNats, connectNats, type NatsConnectOptions } from './connection.ts';

const TOKEN = 'a-token-of-the-deployment';
let certificates: TestCertificates;
let server: NatsServer;

before(async () => {
  certificates = makeCertificates();
  server = await NatsServer.start({ token: TOKEN, tls: { cert: certificates.serverCert, key: certificates.serverKey, verifyClientsWith: certificates.caFile } });
});
after(async () => {
  await server?.destroy();
  certificates?.remove();
});

const full = (): NonNullable<NatsConnectOptions['security']> => ({
  token: TOKEN, user: null, password: null,
  tls: { caFile: certificates.caFile, certFile: certificates.clientCert, keyFile: certificates.clientKey },
});

test('with the token, the authority and a client certificate, a request goes through', async () => {
  const service = await connectNats(server.url, 'test-responder', { security: full() });
  const client = await connectNats(server.url, 'test-requester', { security: full() });
  try {
    const sub = service.subscribe('secure.echo', { callback: (_error, msg) => void msg.respond(msg.data) });
    await service.flush();
    const reply = await client.request('secure.echo', 'over tls', { timeout: 2_000 });
    assert.equal(reply.string(), 'over tls');
    assert.equal(client.info?.tls_required, true, 'the server speaks TLS only');
    sub.unsubscribe();
  } finally {
    await closeNats(client);
    await closeNats(service);
  }
});

for (const [what, security] of [
  ['without the token', () => ({ ...full(), token: null })],
  ['with a wrong token', () => ({ ...full(), token: 'guessed' })],
  ['without TLS', () => ({ ...full(), tls: null })],
  ['without a client certificate', () => ({ ...full(), tls: { caFile: certificates.caFile, certFile: null, keyFile: null } })],
  ['trusting another authority', () => ({ ...full(), tls: { ...full().tls!, caFile: certificates.otherCaFile } })],
] as const) {
  test(`${what}, the connection is refused and the error names the server`, async () => {
    await assert.rejects(connectNats(server.url, 'test-refused', { security: security() }), (error: Error) => {
      assert.match(error.message, new RegExp(`cannot connect to NATS at ${server.url.replaceAll('.', '\\.')}`));
      return true;
    });
  });
}
