/**
 * The whole journal as one sequence (docs/architecture.md "Segments and retention"): the records
 * archived in segment files, then those still in the database, with the checksum chain checked
 * across the seam. Recovery, the snapshot worker and the offline audit read the journal through it,
 * so none of them needs to know where a record lives.
 */
import type { JournalRecord } from '../../runtime/journal-port.ts';
import type { Journal } from './journal.ts';
import type { JournalSegments } from './journal-segments.ts';

export type LinkedRecord = JournalRecord & { readonly chain: number };

/**
 * The records from `fromSeq` on. `previousLink` is the link of the record before `fromSeq` when the
 * caller knows it (a snapshot's header); otherwise it is read where that record is. Throws, naming
 * the seq, when a record is neither in the database nor in a segment, or a link does not follow.
 */
export function* journalFrom(journal: Journal, segments: JournalSegments, fromSeq: number, previousLink?: number): Generator<LinkedRecord> {
  const firstLive = journal.firstSeq();
  let seq = fromSeq;
  let link = previousLink;
  if (seq < firstLive) {
    for (const file of segments.list()) {
      if (file.lastSeq < seq) continue;
      if (file.firstSeq > seq) break;
      // A segment that starts where the reading is must continue the chain read so far.
      for (const r of segments.records(file, file.firstSeq === seq ? link : undefined)) {
        if (r.seq >= firstLive) break;
        if (r.seq === seq - 1 && link !== undefined && r.chain !== link) {
          throw new Error(`the archived journal record at seq ${r.seq} does not match the link the snapshot recorded`);
        }
        if (r.seq < seq) continue;
        yield r;
        link = r.chain;
        seq = r.seq + 1;
      }
      if (seq >= firstLive) break;
    }
    if (seq < firstLive) {
      throw new Error(`the journal record at seq ${seq} is neither in the database (from seq ${firstLive}) nor in an archived segment (${segments.dir}); refusing to replay past it`);
    }
  }
  if (link === undefined && seq === firstLive && seq > 1) {
    // The record before the database's first is archived: its link is the segment header's.
    const file = segments.list().find((f) => f.lastSeq === seq - 1);
    if (file !== undefined) link = segments.header(file).lastLink;
  }
  yield* journal.replay(seq, link);
}
