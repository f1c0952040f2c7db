/**
 * Query-string schemas of the stream endpoints (validated by the app's strict validator before a
 * stream opens: out-of-range or unknown parameters are 400 VALIDATION_ERROR) and the OpenAPI
 * description of what a stream sends. Defaults are applied by the handlers (the validator does
 * not fill them in); they are listed here so the document shows them.
 */
import { Type, type TSchema } from 'typebox';
import { BoardView } from '../routes/options-board.ts';
import { ErrorBody, NullableString, OrNull, StringEnum } from '../schemas/common.ts';
import { RESUME_MAX_BYTES, RESUME_MAX_FRAMES, RESUME_WINDOW_MS } from './hub.ts';
import type { StreamErrorCode } from './sse.ts';

const STREAM_ERROR_CODES: readonly StreamErrorCode[] = [
  'INVALID_PARAMS',
  'UNAUTHENTICATED',
  'SLOW_CONSUMER',
  'UPSTREAM_UNAVAILABLE',
  'INTERNAL',
];

export const STREAM_BOUNDS = {
  book: { depth: { max: 100, default: 25 }, intervalMs: { min: 50, max: 2000, default: 100 } },
  events: { depth: { max: 250, default: 25 }, intervalMs: { min: 100, max: 5000, default: 500 } },
  user: { intervalMs: { min: 50, max: 5000, default: 250 } },
  options: { depth: { max: 250, default: 25 }, intervalMs: { min: 50, max: 2000, default: 100 } },
} as const;

const MarketId = Type.String({ minLength: 1, maxLength: 40, description: 'e.g. BTC-PERP' });
const depth = (b: { max: number; default: number }) =>
  Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: b.max,
      default: b.default,
      description: `levels per side, 1 to ${b.max}`,
    }),
  );
const interval = (b: { min: number; max: number; default: number }) =>
  Type.Optional(
    Type.Integer({
      minimum: b.min,
      maximum: b.max,
      default: b.default,
      description: `coalescing interval in ms, ${b.min} to ${b.max}`,
    }),
  );
const OpenOnly = Type.Optional(
  Type.Boolean({
    default: false,
    description: 'only open positions; positions that close are then sent as removedIds',
  }),
);

/** Cancel on disconnect (cancel-on-disconnect.ts), on every private stream of the caller's account. */
const CancelOnDisconnect = Type.Optional(
  Type.Boolean({
    default: false,
    description:
      'true: when this stream closes for any reason other than the server\'s clean shutdown (the client ' +
      'disconnects, or the server ends it), every live order of the account on every venue is cancelled, ' +
      'untriggered stops and TP/SL included; the first flagged stream to close cancels. Needs a session or ' +
      'an API key with scope trade (403 INSUFFICIENT_SCOPE otherwise); the head then carries ' +
      'X-Cancel-On-Disconnect: true. Best effort: a server crash or restart closes nothing the core sees ' +
      '(the orders stay), and a vanished peer is noticed only by TCP keep-alive or the heartbeat stall check; the dead-man switch ' +
      '(POST /orders/cancel-all-after) holds through both.',
  }),
);

/** Opt-in resume after a reconnect (hub.ts Group, open.ts resumePoint), on every stream route. */
export const Resume = Type.Optional(
  Type.Boolean({
    default: false,
    description:
      'true: on a reconnect carrying Last-Event-ID (the last eventSeq applied), the stream may resume: ' +
      'the frames after it instead of the snapshot (see the route description). false or absent: ' +
      'always a snapshot first, whatever Last-Event-ID says.',
  }),
);

/** How resume works, for the description of every route that offers it. */
export const RESUME_NOTE =
  'Resume: with resume=true and a Last-Event-ID header (EventSource sends the last id on its own ' +
  'reconnects) the stream starts with the frames after that eventSeq instead of the snapshot, when ' +
  'the server still keeps them: the same view is still followed by another connection (once its ' +
  'last one leaves, a view is numbered afresh, above every eventSeq used before) and the frames are ' +
  `at most ${RESUME_WINDOW_MS / 1000} s old (at most ${RESUME_MAX_FRAMES} frames and ` +
  `${RESUME_MAX_BYTES / (1 << 20)} MiB); a Last-Event-ID equal to the latest eventSeq resumes with ` +
  'nothing to catch up. Otherwise, or for an unknown or too old Last-Event-ID, the stream starts ' +
  'with the snapshot as usual, so a client that resumes must still take a snapshot (replace its ' +
  'state). eventSeq values start from the server\'s Unix time in ms, not from 1.';

/** For the routes whose frames are composed per connection: resume is accepted but not offered. */
export const NO_RESUME_NOTE =
  'resume=true is accepted but this stream does not resume (its frames are composed per ' +
  'connection): every connection starts with a snapshot. eventSeq values start from the server\'s ' +
  'Unix time in ms, not from 1.';

export const BookStreamQuery = Type.Object(
  {
    marketId: MarketId,
    depth: depth(STREAM_BOUNDS.book.depth),
    intervalMs: interval(STREAM_BOUNDS.book.intervalMs),
    resume: Resume,
  },
  { additionalProperties: false },
);

export const EventsStreamQuery = Type.Object(
  {
    marketId: MarketId,
    depth: depth(STREAM_BOUNDS.events.depth),
    openOnly: OpenOnly,
    intervalMs: interval(STREAM_BOUNDS.events.intervalMs),
    cancelOnDisconnect: CancelOnDisconnect,
    resume: Resume,
  },
  { additionalProperties: false },
);

export const UserStreamQuery = Type.Object(
  {
    openOnly: OpenOnly,
    intervalMs: interval(STREAM_BOUNDS.user.intervalMs),
    cancelOnDisconnect: CancelOnDisconnect,
    resume: Resume,
  },
  { additionalProperties: false },
);

export const OptionsEventsQuery = Type.Object(
  {
    marketId: Type.String({ minLength: 1, maxLength: 40, description: 'an option: BTC-25DEC26-100000-C' }),
    depth: depth(STREAM_BOUNDS.options.depth),
    intervalMs: interval(STREAM_BOUNDS.options.intervalMs),
    includeReference: Type.Optional(
      Type.Boolean({ default: false, description: 'add the board\'s reference overlay (never tradable)' }),
    ),
    cancelOnDisconnect: CancelOnDisconnect,
    resume: Resume,
  },
  { additionalProperties: false },
);

export const BoardStreamQuery = Type.Object(
  {
    underlying: Type.Optional(
      Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'BTC (primary, the default) or ETH' }),
    ),
    resume: Resume,
  },
  { additionalProperties: false },
);

export const NoQuery = Type.Object({}, { additionalProperties: false });

export const BalancesStreamQuery = Type.Object(
  { cancelOnDisconnect: CancelOnDisconnect, resume: Resume },
  { additionalProperties: false },
);

const Envelope = (payload: TSchema, extra: Record<string, TSchema> = {}) =>
  Type.Object({
    ...extra,
    eventId: Type.String({ description: 'unique id of this message' }),
    eventType: Type.String(),
    eventSeq: Type.Integer({ description: 'strictly increasing per connection; equals the SSE id' }),
    engineTs: Type.Integer({ description: 'Unix ms: engine time of the latest change in the message' }),
    sourceTs: Type.Integer({
      description: 'Unix ms: time of the input behind it (the engine\'s own time for these streams)',
    }),
    payload,
  });

const Level = Type.Object({
  price: Type.String(),
  size: Type.String({ description: '"0": the level was removed' }),
  total: Type.String({ description: 'running size from the top of the book' }),
});
const Book = { bids: Type.Array(Level), asks: Type.Array(Level) };
const Fill = Type.Object({
  tradeId: Type.String(),
  orderId: Type.String(),
  marketId: Type.String(),
  side: Type.String(),
  price: Type.String(),
  quantity: Type.String(),
  liquidity: Type.String(),
  fee: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
});
const Position = Type.Object({
  id: Type.String(),
  marketId: Type.String(),
  marginMode: Type.String(),
  side: Type.String(),
  quantity: Type.String(),
  entryPrice: NullableString,
  realizedPnl: Type.String(),
  status: Type.String(),
});
const PositionsDelta = Type.Union([
  Type.Array(Position),
  Type.Object({ upserts: Type.Array(Position), removedIds: Type.Array(Type.String()) }),
]);
const Bucket = Type.Object({ available: Type.String(), locked: Type.String(), total: Type.String() });

export const BookMessage = Envelope(Type.Object({ marketId: Type.String(), ...Book }));
export const EventsMessage = Envelope(
  Type.Object({
    marketId: Type.String(),
    orderbook: Type.Object(Book),
    trades: Type.Array(Fill),
    positions: PositionsDelta,
  }),
);
export const UserMessage = Envelope(Type.Object({ trades: Type.Array(Fill), positions: PositionsDelta }));
export const BalancesMessage = Envelope(
  Type.Object({
    wallet: Bucket,
    perps: Bucket,
    options: Bucket,
    spot: Bucket,
    pendingWithdrawalTotal: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
  }),
  { type: StringEnum(['snapshot', 'update']) },
);

const TapeEntry = Type.Object({
  side: Type.String({ description: 'the taker\'s (aggressor\'s) side' }),
  price: Type.String(),
  quantity: Type.String(),
  liquidity: Type.Literal('taker'),
  createdAt: Type.String({ format: 'date-time' }),
});
const Reference = Type.Object({
  markPrice: OrNull(Type.String(), { description: 'null: the board has no fresh mark' }),
  source: OrNull(StringEnum(['svi-fit'])),
  tradable: Type.Literal(false),
});
export const OptionsEventsMessage = Envelope(
  Type.Object({
    marketId: Type.String(),
    orderbook: Type.Object(Book),
    trades: Type.Array(TapeEntry),
    reference: Type.Optional(Reference),
  }),
);
export const BoardMessage = Envelope(BoardView);

/** `event: error` data. */
export const StreamError = Type.Object({
  code: StringEnum(STREAM_ERROR_CODES),
  message: Type.String(),
  retryable: Type.Boolean(),
});

const STATUS_TEXT: Record<number, string> = {
  400: 'a parameter is missing, unknown or out of range (before any stream opens)',
  401: 'no valid session or API key (private streams)',
  403: 'cookie session from another Origin, or an API key used outside its allowedIps',
  404: 'unknown market or underlying',
  429: 'rate limited, or too many open streams for this IP address or account',
  503: 'the server holds its maximum number of streams, or the core is unavailable',
};

const DIFF_STREAM =
  'text/event-stream: `snapshot`, then diffs; `event: error` carries { code, message, retryable }';

/** Responses of a stream route: 200 text/event-stream carrying `message` as data, and the errors. */
export function streamResponses(
  message: TSchema,
  statuses: readonly number[],
  description = DIFF_STREAM,
): Record<number, unknown> {
  const out: Record<number, unknown> = {
    200: { description, content: { 'text/event-stream': { schema: message } } },
  };
  for (const s of statuses) out[s] = { ...ErrorBody, description: STATUS_TEXT[s] };
  return out;
}
