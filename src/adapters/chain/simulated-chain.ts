/**
 * A simulated USDC chain with blocks, a mempool, reorgs and a hot wallet, persisted in its own
 * SQLite file (it stands for a system outside the exchange, so it keeps its own state and survives
 * restarts independently of the exchange journal).
 *
 * - A block is mined every `blockMs` and includes every mempool transaction.
 * - `deposit` (the admin endpoint) queues a transfer from a user's wallet to the user's deposit
 *   address; `reorg(depth)` removes the newest `depth` blocks and drops their transactions (a
 *   dropped deposit never comes back, so it must never be credited).
 * - Withdrawals pay out of the hot wallet (all confirmed deposits minus payouts); a payout larger
 *   than the hot wallet is refused with `insufficient_liquidity`. Payouts are idempotent by `ref`.
 *
 * Amounts are stored as decimal strings of the core's fixed-point integer.
 */
import { createHash, randomBytes } from 'node:crypto';
import { migrate, openDatabase, type Db } from '../store/database.ts';
import type { ChainDeposit, ChainPort, ChainTxState, SendResult } from '../../runtime/chain-port.ts';

const MIGRATIONS = [
  {
    id: '0001_chain',
    sql: `
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE blocks (number INTEGER PRIMARY KEY, hash TEXT NOT NULL, parent_hash TEXT NOT NULL, ts INTEGER NOT NULL);
      CREATE TABLE txs (
        hash TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL, from_addr TEXT NOT NULL,
        to_addr TEXT NOT NULL, amount TEXT NOT NULL, ref TEXT, block_number INTEGER,
        dropped INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);
      CREATE INDEX txs_by_block ON txs (block_number);
      CREATE INDEX txs_by_ref ON txs (ref);
      CREATE TABLE deposit_addresses (address TEXT PRIMARY KEY, owner TEXT NOT NULL UNIQUE);`,
  },
];

export interface SimulatedChainOptions {
  readonly path: string;
  readonly chainId: number;
  readonly asset: string;
  readonly blockMs: number;
  readonly now?: () => number;
}

export class SimulatedChain implements ChainPort {
  readonly chainId: number;
  readonly asset: string;
  private readonly db: Db;
  private readonly salt: string;
  private readonly listeners: ((head: number) => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  /** Every statement, prepared once: blocks are mined on a timer on the event loop, and a prepare costs more than its query. */
  private readonly sql;

  constructor(private readonly options: SimulatedChainOptions) {
    this.chainId = options.chainId;
    this.asset = options.asset;
    this.now = options.now ?? Date.now;
    // A block commit survives kill -9 without an fsync of its own (WAL, synchronous=NORMAL): the
    // simulator runs on the event loop and must not stall order entry once per block.
    this.db = openDatabase(options.path, 'NORMAL');
    migrate(this.db, MIGRATIONS);
    this.db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('salt', ?)").run(randomBytes(16).toString('hex'));
    this.salt = (this.db.prepare("SELECT value FROM meta WHERE key = 'salt'").get() as { value: string }).value;
    const db = this.db;
    this.sql = {
      addressOf: db.prepare('SELECT address FROM deposit_addresses WHERE owner = ?'),
      insertAddress: db.prepare('INSERT INTO deposit_addresses (address, owner) VALUES (?, ?)'),
      head: db.prepare('SELECT COALESCE(MAX(number), 0) AS n FROM blocks'),
      depositsFrom: db.prepare(
        `SELECT t.hash, t.amount, t.block_number, d.owner FROM txs t JOIN deposit_addresses d ON d.address = t.to_addr
         WHERE t.kind = 'deposit' AND t.dropped = 0 AND t.block_number >= ? ORDER BY t.block_number, t.seq`,
      ),
      blockHash: db.prepare('SELECT hash FROM blocks WHERE number = ?'),
      insertBlock: db.prepare('INSERT INTO blocks (number, hash, parent_hash, ts) VALUES (?, ?, ?, ?)'),
      includeMempool: db.prepare('UPDATE txs SET block_number = ? WHERE block_number IS NULL AND dropped = 0'),
      txState: db.prepare('SELECT block_number, dropped FROM txs WHERE hash = ?'),
      payoutByRef: db.prepare('SELECT hash FROM txs WHERE ref = ? AND dropped = 0'),
      hotWalletMoves: db.prepare(`SELECT kind, amount FROM txs WHERE dropped = 0 AND (kind = 'withdrawal' OR block_number IS NOT NULL)`),
      dropAbove: db.prepare('UPDATE txs SET dropped = 1, block_number = NULL WHERE block_number > ?'),
      deleteBlocksAbove: db.prepare('DELETE FROM blocks WHERE number > ?'),
      nextSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS s FROM txs'),
      insertTx: db.prepare('INSERT INTO txs (hash, seq, kind, from_addr, to_addr, amount, ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    };
  }

  depositAddress(owner: string): string {
    const existing = this.sql.addressOf.get(owner) as
      | { address: string }
      | undefined;
    if (existing !== undefined) return existing.address;
    const address = `0x${sha256(`deposit:${this.salt}:${owner}`).slice(0, 40)}`;
    this.sql.insertAddress.run(address, owner);
    return address;
  }

  /** Queues a deposit from `owner`'s wallet to their deposit address; returns the tx hash. */
  deposit(owner: string, amount: bigint): string {
    return this.addTx('deposit', owner, this.depositAddress(owner), amount, null);
  }

  head(): number {
    return (this.sql.head.get() as { n: number }).n;
  }

  depositsSince(fromBlock: number): ChainDeposit[] {
    const head = this.head();
    const rows = this.sql.depositsFrom.all(fromBlock) as { hash: string; amount: string; block_number: number; owner: string }[];
    return rows.map((r) => ({
      txHash: r.hash,
      owner: r.owner,
      amount: BigInt(r.amount),
      blockNumber: r.block_number,
      confirmations: head - r.block_number + 1,
    }));
  }

  txState(txHash: string): ChainTxState {
    const row = this.sql.txState.get(txHash) as
      | { block_number: number | null; dropped: number }
      | undefined;
    if (row === undefined) return { state: 'unknown' };
    if (row.dropped === 1) return { state: 'dropped' };
    if (row.block_number === null) return { state: 'mempool' };
    return { state: 'mined', blockNumber: row.block_number, confirmations: this.head() - row.block_number + 1 };
  }

  sendWithdrawal(ref: string, to: string, amount: bigint): SendResult {
    const existing = this.sql.payoutByRef.get(ref) as
      | { hash: string }
      | undefined;
    if (existing !== undefined) return { ok: true, txHash: existing.hash };
    if (this.hotWalletBalance() < amount) return { ok: false, reason: 'insufficient_liquidity' };
    return { ok: true, txHash: this.addTx('withdrawal', 'hot-wallet', to, amount, ref) };
  }

  /** Confirmed deposits minus every payout that has not been dropped (mempool included). */
  hotWalletBalance(): bigint {
    const rows = this.sql.hotWalletMoves.all() as { kind: string; amount: string }[];
    let balance = 0n;
    for (const r of rows) balance += r.kind === 'deposit' ? BigInt(r.amount) : -BigInt(r.amount);
    return balance;
  }

  mineBlock(): number {
    const number = this.head() + 1;
    const parent = this.sql.blockHash.get(number - 1) as { hash: string } | undefined;
    const parentHash = parent?.hash ?? '0x' + '0'.repeat(64);
    const hash = `0x${sha256(`block:${this.salt}:${number}:${parentHash}:${this.now()}`)}`;
    this.db.transaction(() => {
      this.sql.insertBlock.run(number, hash, parentHash, this.now());
      this.sql.includeMempool.run(number);
    })();
    this.notify(number);
    return number;
  }

  /** Rolls back the newest `depth` blocks; their transactions are dropped for good. */
  reorg(depth: number): { head: number; droppedTxs: number } {
    const head = this.head();
    const keep = Math.max(0, head - depth);
    let dropped = 0;
    this.db.transaction(() => {
      dropped = this.sql.dropAbove.run(keep).changes;
      this.sql.deleteBlocksAbove.run(keep);
    })();
    this.notify(keep);
    return { head: keep, droppedTxs: dropped };
  }

  onBlock(listener: (head: number) => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.mineBlock(), this.options.blockMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  close(): void {
    this.stop();
    this.db.close();
  }

  private addTx(kind: 'deposit' | 'withdrawal', from: string, to: string, amount: bigint, ref: string | null): string {
    const seq = (this.sql.nextSeq.get() as { s: number }).s;
    const hash = `0x${sha256(`tx:${this.salt}:${seq}:${kind}:${from}:${to}:${amount}`)}`;
    this.sql.insertTx.run(hash, seq, kind, from, to, amount.toString(), ref, this.now());
    return hash;
  }

  private notify(head: number): void {
    for (const listener of this.listeners) listener(head);
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
