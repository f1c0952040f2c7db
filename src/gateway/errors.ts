/**
 * The one error envelope `{ error, message }` and the HTTP status of every code (decisions.md
 * "Errors"). Handlers throw `ApiError` or return a core rejection through `fail`; anything else
 * that escapes a handler is an internal error and reaches the client as 500 `INTERNAL` with no
 * detail (the log keeps the detail).
 */
import type { RejectCode, Rejection } from '../core/errors.ts';

/** Codes the gateway itself adds to the core's registry (additive, documented in OpenAPI). */
export type GatewayCode = 'UNSUPPORTED_MEDIA_TYPE' | 'PAYLOAD_TOO_LARGE';
export type ErrorCode = RejectCode | GatewayCode;

export const STATUS_OF: Readonly<Record<ErrorCode, number>> = {
  VALIDATION_ERROR: 400,
  INVALID_DECIMAL: 400,
  INVALID_TICK: 400,
  INVALID_STEP: 400,
  INSUFFICIENT_BALANCE: 400,
  RANGE_TOO_LARGE: 400,
  UNAUTHENTICATED: 401,
  INSUFFICIENT_SCOPE: 403,
  IP_NOT_ALLOWED: 403,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  DUPLICATE_CLIENT_ORDER_ID: 409,
  CONFLICT: 409,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  MARKET_CLOSED: 422,
  PRICE_OUT_OF_BAND: 422,
  SIZE_OUT_OF_RANGE: 422,
  POST_ONLY_WOULD_CROSS: 422,
  REDUCE_ONLY_REJECTED: 422,
  INSUFFICIENT_MARGIN: 422,
  NO_LIQUIDITY: 422,
  FOK_NOT_FILLED: 422,
  STRATEGY_NOT_FILLED: 422,
  MMP_TRIGGERED: 422,
  TOO_MANY_OPEN_ORDERS: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.status = STATUS_OF[code];
  }
}

export function apiError(code: ErrorCode, message: string): ApiError {
  return new ApiError(code, message);
}

/** Throws a core rejection as the matching API error. */
export function fail(rejection: Rejection): never {
  throw new ApiError(rejection.code, rejection.message);
}

export interface ErrorBody {
  error: string;
  message: string;
}
