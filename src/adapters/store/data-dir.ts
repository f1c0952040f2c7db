/**
 * The data folder holds the session signing secret and the market maker's key (unless they come from
 * the environment), every account's history and the journal: anyone who can read it can sign in as
 * anyone (docs/architecture.md "Threat model"). So it is private to the service's user: created 0700,
 * its files 0600 (the service runs with umask 077), and a start refuses a folder, or anything in it,
 * that group or others may read, write or enter, naming the path and the fix.
 */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bits a private folder or file must not have: any permission for group or others. */
const SHARED = 0o077;

export class DataDirError extends Error {
  override name = 'DataDirError';
}

/** Creates `dir` private (0700) when it is missing, then checks it and everything in it. */
export function preparePrivateDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  checkPrivate(dir);
}

/** Throws `DataDirError` naming the first path under `dir` (itself included) open to group or others. */
export function checkPrivate(dir: string): void {
  const open = firstShared(dir);
  if (open !== null) {
    throw new DataDirError(
      `${open.path} is open to group or others (mode ${open.mode.toString(8).padStart(4, '0')}): the data folder ` +
      `holds the session secret and every account's history; run chmod -R go-rwx ${dir}`,
    );
  }
}

function firstShared(path: string): { path: string; mode: number } | null {
  const stat = statSync(path);
  const mode = stat.mode & 0o7777;
  if ((mode & SHARED) !== 0) return { path, mode };
  if (!stat.isDirectory()) return null;
  for (const name of readdirSync(path)) {
    const found = firstShared(join(path, name));
    if (found !== null) return found;
  }
  return null;
}
