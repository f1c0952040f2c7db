/**
 * The exchange core: one object that owns all trading and money state and applies commands to it
 * one at a time. This file is the pipeline a reader starts from: `execute` stamps the time,
 * dispatches the command to the part of the domain that owns it, and on success returns the
 * result with the events it produced; on rejection it returns the reason and nothing changed.
 *
 * The core is pure and deterministic: no I/O, no clock (time arrives with each command), no
 * randomness. Replaying the same commands with the same times yields the same state and events,
 * which is how the service restarts after a crash (runtime/sequencer.ts journals every command
 * that succeeded before anyone is told it did).
 *
 * Fail-stop: an InvariantError thrown while applying a command means the state may be wrong; the
 * runtime stops the process rather than acknowledge anything further.
 */
import { fail } from './assert.ts';
import { Accounts } from './accounts.ts';
import { CANCEL_AFTER_MAX_MS, CANCEL_AFTER_MIN_MS, CancelAfter, validCancelAfter } from './cancel-after.ts';
import type { Command, CommandOf, CommandType } from './commands.ts';
import { isRejection, reject, type Rejection } from './errors.ts';
import type { ExchangeEvent, SettlementRecord } from './events.ts';
import { BUCKETS, Ledger, type Bucket } from './ledger/ledger.ts';
import type { LinearLimits } from './linear/checks.ts';
import { LinearEngine, type PerpPreview, type PlaceResult, type QuoteResult } from './linear/engine.ts';
import { LinearLifecycle, type LifecycleSettings } from './linear/lifecycle.ts';
import { MARK_SETTINGS } from './linear/market.ts';
import { PLAIN_ORDER, type OrderRequest } from './linear/order.ts';
import { listedExpiries } from './listings.ts';
import type { MarketSpec } from './markets.ts';
import { fromFloat, type Fixed } from './money.ts';
import { IndexBoard, type IndexSettings } from './prices/index-board.ts';
import type { OrderRecord } from './records.ts';
import { FeeSchedule, VolumeTracker, type FeeTier } from './risk/fees.ts';
import { Wallet, type Settlement } from './wallet/wallet.ts';
import { dispatchClob, type ClobResults } from './clob/commands.ts';
import type { ClobConfig } from './clob/config.ts';
import { ClobEngine } from './clob/engine.ts';
import { boardInstruments } from './clob/views.ts';
import { futureId } from './listings.ts';
import { OptionBoard } from './options/board.ts';
import { optionHolds, spotHolds } from './clob/holds.ts';

export interface CoreConfig {
  /** The asset every product settles in (USDC). */
  readonly settlementAsset: string;
  /** Decimals per asset: amounts with more fractional digits are refused at the edge. */
  readonly assetDecimals: Readonly<Record<string, number>>;
  /** Assets besides the settlement asset that the spot bucket can hold. */
  readonly spotAssets: readonly string[];
  readonly depositConfirmations: number;
  readonly withdrawalMaxAttempts: number;
  /** How long the client id of an accepted transfer or withdrawal stays refused. */
  readonly movementIdRetentionMs: number;
  readonly index: IndexSettings;
  readonly linear: {
    /** Perpetuals, listed from the first command on. */
    readonly perps: readonly MarketSpec[];
    /** The dated future of an underlying for an expiry on the listing calendar. */
    readonly futureSpec: (underlying: string, expiry: number) => MarketSpec;
    readonly feeTiers: readonly FeeTier[];
    readonly limits: LinearLimits;
    readonly lifecycle: LifecycleSettings;
  };
  /** Spot pairs and options (the CLOB engine). */
  readonly clob: ClobConfig;
}

/** Holds on a bucket kept by the engine that owns it (order reserves, margin in use). */
export interface BucketHolds {
  locked(accountId: number, asset: string): Fixed;
  /** What may leave the bucket now; at most balance minus locked. */
  transferable(accountId: number, asset: string): Fixed;
}

export type Outcome<R> = { readonly ok: true; readonly result: R; readonly events: ExchangeEvent[] } | Rejection;

export interface WalletBalances {
  readonly onchainDepositTotal: Fixed;
  readonly pendingDepositTotal: Fixed;
  readonly walletBalance: Fixed;
  readonly perpsBalance: Fixed;
  readonly optionsBalance: Fixed;
  readonly spotBalance: Fixed;
  readonly pendingWithdrawalTotal: Fixed;
}

export interface AssetBalance {
  readonly asset: string;
  readonly bucket: Bucket;
  readonly available: Fixed;
  readonly locked: Fixed;
  readonly total: Fixed;
}

export interface IndexQuote {
  readonly price: Fixed;
  readonly sourceTs: number;
  readonly receivedAt: number;
}

/** The dead-man switch after an arm or disarm (`deadline` null: disarmed). */
export interface CancelAfterResult {
  readonly timeoutMs: number;
  readonly deadline: number | null;
  /** Orders a switch already past its deadline cancelled before this command re-armed or disarmed it. */
  readonly cancelled: string[];
}

interface CommandResults extends ClobResults {
  'wallet.transfer': WalletBalances;
  'wallet.withdraw': SettlementRecord;
  'chain.deposit_observed': SettlementRecord;
  'chain.deposit_reorged': SettlementRecord | null;
  'withdrawal.move': SettlementRecord;
  'index.publish': IndexQuote;
  'prices.observe': null;
  'clock.tick': null;
  'perp.place': PlaceResult;
  'perp.cancel': OrderRecord;
  'perp.cancel_all': { cancelled: string[] };
  'perp.quote': QuoteResult;
  'perp.close': PlaceResult;
  'perp.modify': PlaceResult;
  'orders.cancel_all_after': CancelAfterResult;
  'orders.cancel_all': { cancelled: string[] };
}
export type ResultOf<T extends CommandType> = CommandResults[T];

export class Exchange {
  readonly accounts = new Accounts();
  readonly ledger: Ledger;
  readonly wallet: Wallet;
  readonly index: IndexBoard;
  readonly linear: LinearEngine;
  readonly lifecycle: LinearLifecycle;
  readonly clob: ClobEngine;
  /** Option marks, Greeks and DVOL, recomputed on every clock tick. */
  readonly board: OptionBoard;
  readonly perpFees: FeeSchedule;
  private readonly holds = new Map<Bucket, BucketHolds>();
  private readonly creditedDeposits = new Map<number, Fixed>();
  /** The accounts' dead-man switches (cancel-after.ts). */
  private readonly cancelAfter = new CancelAfter();
  private events: ExchangeEvent[] = [];
  private clock = 0;
  private nextOrderId = 1;
  private nextTradeId = 1;

  constructor(readonly config: CoreConfig) {
    this.ledger = new Ledger((entry) => {
      this.events.push({ type: 'ledger', entry });
      if (entry.type === 'deposit' && entry.account.kind === 'user') {
        const id = entry.account.accountId;
        this.creditedDeposits.set(id, (this.creditedDeposits.get(id) ?? 0n) + entry.amount);
      }
    });
    this.wallet = new Wallet(
      {
        ledger: this.ledger,
        now: () => this.clock,
        emitSettlement: (s) => this.events.push({ type: 'settlement', settlement: settlementRecord(s) }),
        emitAlarm: (kind, message) => this.events.push({ type: 'alarm', kind, message, at: this.clock }),
        transferable: (accountId, bucket) => this.transferable(accountId, bucket, config.settlementAsset),
      },
      config,
    );
    this.index = new IndexBoard(config.index);
    const settlementDecimals = config.assetDecimals[config.settlementAsset] ?? 6;
    this.perpFees = new FeeSchedule(config.linear.feeTiers, settlementDecimals);
    this.linear = new LinearEngine({
      ledger: this.ledger,
      index: this.index,
      fees: this.perpFees,
      volumes: new VolumeTracker(),
      settlementAsset: config.settlementAsset,
      settlementDecimals,
      limits: config.linear.limits,
      nextOrderId: () => this.nextOrderId++,
      nextTradeId: () => this.nextTradeId++,
      now: () => this.clock,
      emit: (event) => this.events.push(event),
    });
    this.lifecycle = new LinearLifecycle(
      this.linear,
      {
        ledger: this.ledger,
        index: this.index,
        settlementAsset: config.settlementAsset,
        settlementDecimals,
        now: () => this.clock,
      },
      config.linear.lifecycle,
    );
    for (const spec of config.linear.perps) this.linear.listMarket(spec);
    this.registerHolds('perps', this.linear.holds());
    this.clob = new ClobEngine({
      ledger: this.ledger,
      index: this.index,
      config: config.clob,
      settlementAsset: config.settlementAsset,
      settlementDecimals,
      nextOrderId: () => this.nextOrderId++,
      nextTradeId: () => this.nextTradeId++,
      now: () => this.clock,
      emit: (event) => this.events.push(event),
      // Option marks and Greeks come from the option board once it is wired in; until then none
      // (the engine then margins on its conservative risk price and MMP counts quantity only).
      optionMark: () => null,
      heldMark: () => null,
      optionGreeks: () => null,
    });
    this.registerHolds('spot', spotHolds(this.clob));
    this.registerHolds('options', optionHolds(this.clob));
    this.board = new OptionBoard({
      instruments: (underlying) => boardInstruments(this.clob, underlying),
      index: (underlying, now) => this.index.index(underlying, now),
      futureMark: (underlying, expiry, now) => {
        const id = futureId(underlying, expiry);
        const market = this.linear.markets.get(id);
        const mark = market === undefined ? null : this.linear.markAt(market, now);
        return mark === null ? null : { price: mark, marketId: id };
      },
      futureId,
    });
    this.clob.usePricing({
      optionMark: (id, now) => this.board.mark(id, now)?.mark ?? null,
      heldMark: (id) => this.board.heldMark(id),
      optionGreeks: (id, now) => {
        const row = this.board.mark(id, now);
        if (row === null || row.delta === null || row.vega === null) return null;
        const delta = fromFloat(row.delta, 8, 'halfUp');
        const vega = fromFloat(row.vega, 8, 'halfUp');
        return delta === null || vega === null ? null : { delta, vega };
      },
    });
  }

  /** The time of the command being applied (or of the last one applied). */
  now(): number {
    return this.clock;
  }

  /** Registers the engine that keeps holds on a bucket (perps: margin; spot/options: reserves). */
  registerHolds(bucket: Bucket, holds: BucketHolds): void {
    if (this.holds.has(bucket)) fail(`holds for ${bucket} registered twice`);
    this.holds.set(bucket, holds);
  }

  /**
   * Applies one command at time `now` (ms). Time never runs backwards: a command stamped earlier
   * than the previous one is applied at the previous time.
   */
  execute<T extends CommandType>(command: CommandOf<T>, now: number): Outcome<ResultOf<T>> {
    this.clock = Math.max(this.clock, now);
    // Normally empty (a success hands its array to the outcome); tests that seed the ledger directly leave events behind.
    if (this.events.length !== 0) this.events = [];
    const accountsBefore = this.accounts.count();
    const result = this.dispatch(command as Command);
    this.linear.flush();
    this.clob.flush();
    if (isRejection(result)) {
      if (this.events.length !== 0) fail(`command ${command.type} was rejected after it changed state`);
      this.accounts.truncate(accountsBefore);
      this.ledger.forgetTouched();
      return result;
    }
    this.ledger.assertTouchedNonNegative();
    const events = this.events;
    this.events = [];
    return { ok: true, result: result as ResultOf<T>, events };
  }

  private dispatch(command: Command): unknown {
    switch (command.type) {
      case 'wallet.transfer':
        return this.transfer(command);
      case 'wallet.withdraw':
        return this.withdraw(command);
      case 'chain.deposit_observed':
        return this.observeDeposit(command);
      case 'chain.deposit_reorged': {
        const s = this.wallet.depositReorged(command.txHash);
        return s === null ? null : settlementRecord(s);
      }
      case 'withdrawal.move': {
        const s = this.wallet.withdrawalMove(command.id, command.move);
        return isRejection(s) ? s : settlementRecord(s);
      }
      case 'index.publish':
        return this.publishIndex(command);
      case 'prices.observe':
        this.index.observe(command.underlying, command.observations, this.clock);
        this.lifecycle.expireDue(this.clock);
        this.linear.updateMarks(command.underlying, this.clock);
        this.lifecycle.checkLiquidations(command.underlying);
        return null;
      case 'clock.tick':
        return this.tick();
      default:
        return this.dispatchTrading(command);
    }
  }

  private dispatchTrading(command: Command): unknown {
    switch (command.type) {
      case 'perp.place':
        return this.linear.place(this.accountId(command.account), command.request);
      case 'perp.cancel':
        return this.linear.cancel(this.accountId(command.account), command.orderId);
      case 'perp.cancel_all':
        return { cancelled: this.linear.cancelAll(this.accountId(command.account), command.filter) };
      case 'perp.quote':
        return this.linear.quote(this.accountId(command.account), command.quote);
      case 'perp.close':
        return this.closePosition(command);
      case 'perp.modify':
        return this.linear.amend(this.accountId(command.account), command.orderId, command.price, command.quantity);
      case 'orders.cancel_all_after':
        return this.cancelAllAfter(command);
      case 'orders.cancel_all': {
        const account = this.accounts.find(command.account);
        return { cancelled: account === undefined ? [] : this.cancelEverything(account.id) };
      }
      default:
        return dispatchClob(this.clob, command, (address) => this.accountId(address));
    }
  }

  /** Time passes: list what the calendar wants listed, sample the index, re-mark, fire triggers. */
  private tick(): null {
    // Dead-man switches first: their deadline passed before anything else this tick does (triggers, expiry).
    for (const accountId of this.cancelAfter.takeDue(this.clock)) this.cancelEverything(accountId);
    this.ensureListings();
    for (const underlying of this.index.underlyingNames()) this.index.sample(underlying, this.clock);
    this.lifecycle.expireDue(this.clock);
    this.linear.updateMarks(null, this.clock);
    this.lifecycle.onTick(this.clock);
    this.clob.onTick(this.clock);
    this.wallet.onTick(this.clock);
    for (const underlying of new Set(this.config.linear.perps.map((p) => p.underlying))) {
      const board = this.board.recompute(underlying, this.clock);
      const dvol = board.dvol === null ? null : fromFloat(board.dvol.dvol, 2, 'halfUp');
      this.events.push({ type: 'board', underlying, at: this.clock, dvol });
    }
    this.keepSettlementWindows();
    return null;
  }

  /**
   * Pins the index history every unsettled expiry still needs. Settlement averages the index over
   * the window before expiry; after downtime past the history's retention, the first command would
   * otherwise prune that window away and the expiry would settle at the last price in force.
   * Listings and settlements happen on ticks, so the pin is kept current at the end of each.
   */
  private keepSettlementWindows(): void {
    const from = new Map<string, number>();
    const keep = (underlying: string, windowStart: number) => {
      const earliest = from.get(underlying);
      if (earliest === undefined || windowStart < earliest) from.set(underlying, windowStart);
    };
    for (const m of this.linear.markets.values()) {
      if (m.spec.expiry !== null && !m.settled) keep(m.spec.underlying, m.spec.expiry - MARK_SETTINGS.settlementWindowMs);
    }
    for (const [expiry, markets] of this.clob.byExpiry) {
      for (const m of markets) keep(m.underlying, expiry - this.clob.limits.settlementWindowMs);
    }
    for (const underlying of this.index.underlyingNames()) this.index.keepFrom(underlying, from.get(underlying) ?? null);
  }

  private ensureListings(): void {
    const underlyings = new Set(this.config.linear.perps.map((p) => p.underlying));
    for (const expiry of listedExpiries(this.clock)) {
      for (const underlying of underlyings) {
        const spec = this.config.linear.futureSpec(underlying, expiry);
        if (!this.linear.markets.has(spec.id)) this.linear.listMarket(spec);
      }
    }
  }

  private closePosition(c: CommandOf<'perp.close'>): PlaceResult | Rejection {
    const accountId = this.accountId(c.account);
    const market = this.linear.markets.get(c.close.marketId);
    if (market === undefined) return reject('NOT_FOUND', `market ${c.close.marketId} not found`);
    const position = this.linear.findAccount(accountId)?.position(market, c.close.marginMode);
    if (position === undefined || position.size === 0) {
      return reject('NOT_FOUND', `no open ${c.close.marginMode} position in ${c.close.marketId}`);
    }
    // A close is one order: at most the whole position, and at most the market's largest order
    // (a position built from several orders may be larger; the rest is closed by another request).
    const full = market.units.size(Math.abs(position.size));
    const wanted = c.close.quantity === null || c.close.quantity > full ? full : c.close.quantity;
    const quantity = wanted > market.spec.maxSize ? market.spec.maxSize : wanted;
    const request: OrderRequest = {
      marketId: c.close.marketId,
      side: position.size > 0 ? 1 : 0,
      type: c.close.type,
      quantity,
      price: c.close.price,
      timeInForce: c.close.timeInForce,
      postOnly: false,
      reduceOnly: true,
      marginMode: c.close.marginMode,
      ...PLAIN_ORDER,
    };
    return this.linear.place(accountId, request);
  }

  /**
   * Arms (timeoutMs > 0) or disarms (0) the account's dead-man switch. A switch whose deadline
   * passed before this command (the tick that fires it not yet come) fires first: its orders are
   * cancelled as the tick would have, so being late is never rescued by the tick's granularity.
   */
  private cancelAllAfter(c: CommandOf<'orders.cancel_all_after'>): CancelAfterResult | Rejection {
    if (!validCancelAfter(c.timeoutMs)) {
      return reject('VALIDATION_ERROR', `timeoutMs must be 0 (disarm) or an integer from ${CANCEL_AFTER_MIN_MS} to ${CANCEL_AFTER_MAX_MS}`);
    }
    const known = this.accounts.find(c.account);
    if (c.timeoutMs === 0 && known === undefined) return { timeoutMs: 0, deadline: null, cancelled: [] };
    const accountId = known?.id ?? this.accountId(c.account);
    const cancelled = this.cancelAfter.isDue(accountId, this.clock) ? this.cancelEverything(accountId) : [];
    if (c.timeoutMs === 0) {
      this.cancelAfter.disarm(accountId);
      return { timeoutMs: 0, deadline: null, cancelled };
    }
    const deadline = this.clock + c.timeoutMs;
    this.cancelAfter.arm(accountId, deadline);
    return { timeoutMs: c.timeoutMs, deadline, cancelled };
  }

  /** Cancels every live order of the account on both engines (untriggered conditional orders too). */
  private cancelEverything(accountId: number): string[] {
    return [...this.linear.cancelAll(accountId, {}), ...this.clob.cancelAll(accountId, {})];
  }

  /** The id of the account with this address, opened now if new (ids follow command order). */
  private accountId(address: string): number {
    return this.accounts.open(address, this.clock).id;
  }

  /** Dry run of a perp order at `now` (no command, no journal, no change). */
  previewPerpOrder(address: string, request: OrderRequest, now: number): PerpPreview {
    const saved = this.clock;
    this.clock = Math.max(this.clock, now);
    try {
      const account = this.accounts.find(address);
      return this.linear.preview(account?.id ?? -1, request);
    } finally {
      this.clock = saved;
    }
  }

  private transfer(c: CommandOf<'wallet.transfer'>): WalletBalances | Rejection {
    const account = this.accounts.find(c.account);
    if (account === undefined) return reject('INSUFFICIENT_BALANCE', `insufficient ${c.from} balance: available 0`);
    const rejected = this.wallet.transfer(account.id, c.from, c.to, c.amount, c.clientId ?? null);
    return rejected ?? this.walletBalances(c.account);
  }

  private withdraw(c: CommandOf<'wallet.withdraw'>): SettlementRecord | Rejection {
    const account = this.accounts.find(c.account);
    if (account === undefined) return reject('INSUFFICIENT_BALANCE', 'insufficient wallet balance: available 0');
    const s = this.wallet.withdraw(account.id, account.address, c.amount, c.clientId ?? null);
    return isRejection(s) ? s : settlementRecord(s);
  }

  private observeDeposit(c: CommandOf<'chain.deposit_observed'>): SettlementRecord {
    const account = this.accounts.open(c.account, this.clock);
    const s = this.wallet.observeDeposit({
      txHash: c.txHash,
      accountId: account.id,
      walletAddress: account.address,
      amount: c.amount,
      confirmations: c.confirmations,
    });
    return settlementRecord(s);
  }

  private publishIndex(c: CommandOf<'index.publish'>): IndexQuote {
    const quote: IndexQuote = { price: c.price, sourceTs: c.sourceTs, receivedAt: this.clock };
    this.index.publish(c.underlying, c.price, c.sourceTs, this.clock);
    this.events.push({ type: 'index', underlying: c.underlying, price: c.price, sourceTs: c.sourceTs, at: this.clock });
    this.lifecycle.expireDue(this.clock);
    this.linear.updateMarks(c.underlying, this.clock);
    this.lifecycle.checkLiquidations(c.underlying);
    return quote;
  }

  // ---- reads (the gateway calls these directly; they never change state) ----

  transferable(accountId: number, bucket: Bucket, asset: string): Fixed {
    const holds = this.holds.get(bucket);
    if (holds !== undefined) return holds.transferable(accountId, asset);
    return this.ledger.userBalance(accountId, bucket, asset);
  }

  walletBalances(address: string): WalletBalances {
    const account = this.accounts.find(address);
    const asset = this.config.settlementAsset;
    if (account === undefined) {
      return {
        onchainDepositTotal: 0n,
        pendingDepositTotal: 0n,
        walletBalance: 0n,
        perpsBalance: 0n,
        optionsBalance: 0n,
        spotBalance: 0n,
        pendingWithdrawalTotal: 0n,
      };
    }
    const id = account.id;
    let pendingDeposits = 0n;
    for (const s of this.wallet.openDeposits()) if (s.accountId === id) pendingDeposits += s.amount;
    return {
      onchainDepositTotal: this.creditedDeposits.get(id) ?? 0n,
      pendingDepositTotal: pendingDeposits,
      walletBalance: this.ledger.userBalance(id, 'wallet', asset),
      perpsBalance: this.ledger.userBalance(id, 'perps', asset),
      optionsBalance: this.ledger.userBalance(id, 'options', asset),
      spotBalance: this.ledger.userBalance(id, 'spot', asset),
      pendingWithdrawalTotal: this.wallet.pendingWithdrawalTotal(id),
    };
  }

  /** One entry per bucket for the settlement asset, plus the spot bucket's other assets. */
  assetBalances(address: string): AssetBalance[] {
    const account = this.accounts.find(address);
    const out: AssetBalance[] = [];
    const rows: [Bucket, string][] = BUCKETS.map((b) => [b, this.config.settlementAsset]);
    for (const asset of this.config.spotAssets) rows.push(['spot', asset]);
    for (const [bucket, asset] of rows) {
      const total = account === undefined ? 0n : this.ledger.userBalance(account.id, bucket, asset);
      const holds = this.holds.get(bucket);
      const locked = account === undefined || holds === undefined ? 0n : holds.locked(account.id, asset);
      out.push({ asset, bucket, total, locked, available: total - locked });
    }
    return out;
  }

  /** The deadline of the account's armed dead-man switch (core time, ms), or null. */
  cancelAfterDeadline(address: string): number | null {
    const account = this.accounts.find(address);
    return account === undefined ? null : this.cancelAfter.deadline(account.id);
  }

  settlement(id: string): SettlementRecord | undefined {
    const s = this.wallet.get(id);
    return s === undefined ? undefined : settlementRecord(s);
  }

  indexPrice(underlying: string, now: number): Fixed | null {
    return this.index.index(underlying, now)?.price ?? null;
  }
}

export function settlementRecord(s: Settlement): SettlementRecord {
  return {
    id: s.id,
    accountId: s.accountId,
    kind: s.kind,
    status: s.status,
    amount: s.amount,
    asset: s.asset,
    walletAddress: s.walletAddress,
    txHash: s.txHash,
    confirmations: s.confirmations,
    failureReason: s.failureReason,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}
