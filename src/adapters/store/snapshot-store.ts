/**
 * The core's snapshots on disk (docs/architecture.md "Snapshots"): recovery's `SnapshotSource`
 * (the newest snapshot that passes every check, restored into the fresh core; a refused one is
 * reported and the one before it tried, down to a full replay) and the writing side used by the
 * snapshot worker (the state image of a core, hashed and written atomically).
 */
import { createHash } from 'node:crypto';
import type { Exchange } from '../../core/exchange.ts';
import { STATE_REVISION, STATE_SCHEMA } from '../../core/snapshot/state-classes.ts';
import { encodeState, restoreState } from '../../core/snapshot/state-image.ts';
import type { RestoredSnapshot, SnapshotSource } from '../../runtime/sequencer.ts';
import { SnapshotFiles, SnapshotRefused, type SnapshotHeader } from './snapshot-files.ts';

/** The state layout the running code writes and reads (class layouts and the state revision). */
export const LAYOUT_FINGERPRINT = createHash('sha256')
  .update(JSON.stringify({ revision: STATE_REVISION, layout: STATE_SCHEMA.layouts }))
  .digest('hex');

export interface RestoredFrom extends RestoredSnapshot {
  readonly ts: number;
  readonly link: number;
  readonly stateHash: string;
}

export class SnapshotStore implements SnapshotSource {
  readonly files: SnapshotFiles;
  /** The snapshot the last `restoreNewest` used (null: none, full replay). */
  restored: RestoredFrom | null = null;

  constructor(dataDir: string, private readonly report: (message: string) => void = () => undefined) {
    this.files = new SnapshotFiles(dataDir);
  }

  restoreNewest(exchange: Exchange, maxSeq: number): RestoredFrom | null {
    for (const seq of this.files.seqs()) {
      if (seq > maxSeq) {
        this.report(`snapshot at seq ${seq} is past what the journal's history holds (seq ${maxSeq}); not used`);
        continue;
      }
      let header: SnapshotHeader;
      let image: Uint8Array;
      try {
        ({ header, image } = this.files.read(seq, LAYOUT_FINGERPRINT));
      } catch (error) {
        this.report(refusal(seq, error));
        continue;
      }
      restoreChecked(exchange, seq, image, `move ${this.files.dir} away to replay the whole journal`);
      this.restored = { seq, ts: header.ts, link: header.link, stateHash: header.stateHash };
      return this.restored;
    }
    this.restored = null;
    return null;
  }
}

/** Why snapshot `seq` is not used: its check's reason, or why it could not be read. */
export function refusal(seq: number, error: unknown): string {
  return error instanceof SnapshotRefused ? error.message : `snapshot at seq ${seq} unreadable: ${(error as Error).message}`;
}

/**
 * Restores the `image` of snapshot `seq`, which passed its checks, into `exchange` (a fresh core).
 * If the code cannot restore what it wrote, the core may be half-filled now, so the start stops
 * rather than replay on top of it; `remedy` says how to start without that snapshot.
 */
export function restoreChecked(exchange: Exchange, seq: number, image: Uint8Array, remedy: string): void {
  try {
    restoreState(exchange, image, STATE_SCHEMA);
  } catch (error) {
    throw new Error(`snapshot at seq ${seq} passed its checks but could not be restored (${(error as Error).message}); ${remedy}`, { cause: error });
  }
}

/** The state image of `exchange`; `fresh` builds an empty core with the same configuration. */
export function stateImage(exchange: Exchange, fresh: () => Exchange): Uint8Array {
  return encodeState(exchange, fresh(), STATE_SCHEMA);
}
