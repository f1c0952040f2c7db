/**
 * The schema of the exchange's state for snapshots (state-image.ts, docs/architecture.md
 * "Snapshots"): every class whose instances may be part of the core's state, under a stable name;
 * the fields that are wiring rather than state; the interned values. A class missing here is
 * refused when a snapshot is written, so adding a class to the core's state means adding it here
 * and regenerating the layout manifest (`node --import tsx scripts/state-layout.ts --write`).
 */
import { Accounts } from '../accounts.ts';
import { BookSide } from '../book/book-side.ts';
import { CancelAfter } from '../cancel-after.ts';
import { Level, NIL } from '../book/level.ts';
import { OrderBook } from '../book/order-book.ts';
import { ClientIds } from '../client-ids.ts';
import { ClobAccount } from '../clob/account.ts';
import { ClobEngine } from '../clob/engine.ts';
import { ClobMarket } from '../clob/market.ts';
import { MmpRegistry } from '../clob/mmp.ts';
import { AccountMargin, ContractMargin, InstrumentMargin, UnderlyingMargin } from '../clob/option-margin.ts';
import { OptionFeeSchedule } from '../clob/option-fees.ts';
import { ClobOrder } from '../clob/order.ts';
import { OptionPosition } from '../clob/position.ts';
import { CommandChanges } from '../command-changes.ts';
import { Exchange } from '../exchange.ts';
import { Ledger, systemAccount, userAccount, type Bucket, type LedgerAccount, type SystemAccountName } from '../ledger/ledger.ts';
import { LinearAccount, OrderTotals } from '../linear/account.ts';
import { LinearCash } from '../linear/cash.ts';
import { LinearEngine } from '../linear/engine.ts';
import { FundingState } from '../linear/funding.ts';
import { LinearLifecycle } from '../linear/lifecycle.ts';
import { MakerChecks } from '../linear/maker-checks.ts';
import { LinearMarket } from '../linear/market.ts';
import { LinearOrder } from '../linear/order.ts';
import { Position } from '../linear/position.ts';
import { ReduceOnlyLosses } from '../linear/reduce-only-losses.ts';
import { MarketUnits } from '../markets.ts';
import { OptionBoard } from '../options/board.ts';
import { IndexBoard } from '../prices/index-board.ts';
import { MarginSchedule } from '../risk/margin-tiers.ts';
import { AccountVolume, FeeSchedule, VolumeTracker } from '../risk/fees.ts';
import { PendingSums, TouchedSet } from '../touched.ts';
import { MovementIds } from '../wallet/movement-ids.ts';
import { Wallet } from '../wallet/wallet.ts';
import { IqmSmoother } from '../../pricing/dvol.ts';
import { TwapAccumulator } from '../../pricing/twap.ts';
import type { Interner, StateSchema } from './state-image.ts';
import { STATE_LAYOUT } from './state-layout.ts';

type StateClass = abstract new (...args: never[]) => unknown;

/**
 * Bumped by hand when the meaning of state changes without a class's fields changing (a plain
 * record's fields, what a field holds): snapshots written before are then refused, and recovery
 * replays the journal from an older snapshot or from the start.
 */
export const STATE_REVISION = 1;

/** Stable names: a bundler may rename classes, the snapshot format may not. */
const CLASSES: Record<string, StateClass> = {
  Exchange, Accounts, Ledger, Wallet, MovementIds, IndexBoard, TwapAccumulator,
  LinearEngine, LinearLifecycle, LinearCash, MakerChecks, ReduceOnlyLosses, LinearAccount, OrderTotals,
  LinearMarket, LinearOrder, Position, FundingState, MarginSchedule, FeeSchedule, VolumeTracker, AccountVolume,
  ClobEngine, ClobAccount, ClobMarket, ClobOrder, OptionPosition, MmpRegistry, OptionFeeSchedule,
  AccountMargin, UnderlyingMargin, InstrumentMargin, ContractMargin,
  OptionBoard, IqmSmoother, OrderBook, BookSide, Level, MarketUnits,
  CommandChanges, TouchedSet, PendingSums, ClientIds, CancelAfter,
};

/**
 * Interned ledger accounts: the same (owner, bucket, asset) is always the same frozen object
 * (ledger.ts), so a restored one goes back through the intern table.
 */
const LEDGER_ACCOUNTS: Interner = {
  name: 'ledger-account',
  parts(o) {
    if (!Object.isFrozen(o)) return null;
    const a = o as LedgerAccount;
    if (a.kind === 'user') return userAccount(a.accountId, a.bucket, a.asset) === o ? ['user', a.accountId, a.bucket, a.asset] : null;
    if (a.kind === 'system') return systemAccount(a.name, a.asset) === o ? ['system', a.name, a.asset] : null;
    return null;
  },
  make(parts) {
    return parts[0] === 'user'
      ? userAccount(parts[1] as number, parts[2] as Bucket, parts[3] as string)
      : systemAccount(parts[1] as SystemAccountName, parts[2] as string);
  },
};

export const STATE_SCHEMA: StateSchema = {
  classes: new Map(Object.entries(CLASSES)),
  layouts: STATE_LAYOUT,
  // The exchange's bucket holds are closures over its engines, set up by its constructor.
  wiring: { Exchange: ['holds'] },
  interners: [LEDGER_ACCOUNTS],
  // The books' red-black trees end in one shared sentinel level, compared by identity.
  constants: new Map([['book.NIL', NIL]]),
  configField: 'config',
};
