// What a build was made from (scripts/build.mjs for dist/, scripts/build-web.mjs for web/dist): each
// input's size, mtime and SHA-256, and the check that tells a build older than its sources. A module
// of its own so that both builds share it without importing each other.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, URL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function sha256(path) {
  return createHash('sha256').update(readFileSync(join(ROOT, path))).digest('hex');
}

/** An input's record, by its path from the repository's root. */
export function fingerprint(path) {
  const stat = statSync(join(ROOT, path));
  return { size: stat.size, mtimeMs: stat.mtimeMs, sha256: sha256(path) };
}

/**
 * The first recorded input that is gone or changed, in words, or null. An input whose size and
 * mtime are as recorded is taken as unchanged; one whose mtime moved is read and hashed (a `touch`
 * or a checkout back and forth needs no build).
 */
export function changedInput(inputs) {
  for (const [path, recorded] of Object.entries(inputs)) {
    let stat;
    try {
      stat = statSync(join(ROOT, path));
    } catch {
      return `${path} is gone`;
    }
    if (stat.size !== recorded.size) return `${path} changed`;
    if (stat.mtimeMs !== recorded.mtimeMs && sha256(path) !== recorded.sha256) return `${path} changed`;
  }
  return null;
}
