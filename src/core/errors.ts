/**
 * The registry of rejection codes the core can return, grouped by subsystem and listed in the
 * order validation checks them (cheap to expensive, first failure wins). A rejection is a value,
 * never an exception: the command changed nothing. HTTP statuses are the gateway's business
 * (gateway/error-codes.ts maps every code here to one status); the core only names the reason.
 */

export const REJECT_CODES = [
  // input (400)
  'VALIDATION_ERROR',
  'INVALID_DECIMAL',
  'INVALID_TICK',
  'INVALID_STEP',
  'INSUFFICIENT_BALANCE',
  'RANGE_TOO_LARGE',
  // access (401/403)
  'UNAUTHENTICATED',
  'INSUFFICIENT_SCOPE',
  'IP_NOT_ALLOWED',
  'FORBIDDEN',
  // lookup (404) and conflicts (409)
  'NOT_FOUND',
  'DUPLICATE_CLIENT_ORDER_ID',
  'CONFLICT',
  // business rejections (422): market state, order checks, risk, matching
  'MARKET_CLOSED',
  'PRICE_OUT_OF_BAND',
  'SIZE_OUT_OF_RANGE',
  'POST_ONLY_WOULD_CROSS',
  'REDUCE_ONLY_REJECTED',
  'INSUFFICIENT_MARGIN',
  'NO_LIQUIDITY',
  'FOK_NOT_FILLED',
  'STRATEGY_NOT_FILLED',
  'MMP_TRIGGERED',
  'TOO_MANY_OPEN_ORDERS',
  // operational (429/5xx)
  'RATE_LIMITED',
  'INTERNAL',
  'UNAVAILABLE',
] as const;

export type RejectCode = (typeof REJECT_CODES)[number];

export interface Rejection {
  readonly ok: false;
  readonly code: RejectCode;
  readonly message: string;
}

export function reject(code: RejectCode, message: string): Rejection {
  return { ok: false, code, message };
}

export function isRejection(value: unknown): value is Rejection {
  return typeof value === 'object' && value !== null && (value as { ok?: unknown }).ok === false;
}
