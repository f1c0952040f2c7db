/**
 * Certificates for the TLS tests, made with Debian's `openssl` (.ci/run installs it when missing):
 * a throwaway certificate authority, a server certificate for 127.0.0.1 and localhost, and a client
 * certificate, all signed by it, plus a second authority that signed nothing of the server's (a
 * client trusting only that one must refuse the server). Keys are EC P-256; files are 0600.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** An authority that signed neither certificate. */
  readonly otherCaFile: string;
  remove(): void;
}

function openssl(args: readonly string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

function authority(dir: string, name: string): { cert: string; key: string } {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`]);
  return { cert, key };
}

function signed(dir: string, name: string, ca: { cert: string; key: string }, extensions: string): { cert: string; key: string } {
  const key = join(dir, `${name}.key`);
  const request = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.pem`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, extensions);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', request, '-subj', `/CN=${name}`]);
  openssl(['x509', '-req', '-in', request, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
  return { cert, key };
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'exchange-tls-'));
  const ca = authority(dir, 'test-ca');
  const other = authority(dir, 'other-ca');
  const server = signed(dir, 'server', ca, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  const client = signed(dir, 'client', ca, 'extendedKeyUsage=clientAuth\n');
  for (const name of readdirSync(dir)) chmodSync(join(dir, name), 0o600);
  return {
    dir, caFile: ca.cert, serverCert: server.cert, serverKey: server.key, clientCert: client.cert, clientKey: client.key, otherCaFile: other.cert,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
