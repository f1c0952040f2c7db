/**
 * Schemas shared by many routes: the error envelope, timestamps, pagination, and the helper that
 * attaches the documented error responses to a route so OpenAPI lists them.
 */
import { Type, type Static, type TSchema, type TSchemaOptions } from 'typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'stable machine-readable code, e.g. INSUFFICIENT_MARGIN' }),
    message: Type.String({ description: 'human-readable detail' }),
  },
  { description: 'Every error response has this shape.' },
);

/**
 * A string from a fixed set, as `{ type: 'string', enum }`. Not `anyOf` of constants: the
 * response serializer (fast-json-stringify) resolves an `anyOf` by running a validator per branch
 * on every value it writes, and request validation tries each branch in turn.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: TSchemaOptions = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * `schema` or null, as a JSON Schema type list (`type: ['string', 'null']`, valid OpenAPI 3.1),
 * for the same reason as StringEnum. `schema` must have a single `type` (an enum also admits null).
 */
export function OrNull<S extends TSchema>(schema: S, options: TSchemaOptions = {}) {
  const { type, enum: values } = schema as { type?: unknown; enum?: unknown[] };
  if (typeof type !== 'string') throw new Error('OrNull needs a schema with one type');
  const nullable = values === undefined ? {} : { enum: [...values, null] };
  return Type.Unsafe<Static<S> | null>({ ...schema, ...options, ...nullable, type: [type, 'null'] });
}

export const IsoTime = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
export const NullableIsoTime = OrNull(IsoTime);
export const NullableString = OrNull(Type.String());

/** `/{id}` of an order: a decimal integer of at most 15 digits (a safe integer, so `Number` is exact). */
export const OrderIdParams = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,15}$' }) });

/** The query of a read that takes no parameters: an unknown one is refused, not silently ignored. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

/** The body of an action that takes none: absent, `null` or `{}` (anything else is refused, not ignored). */
export const EmptyBody = Type.Union([Type.Object({}, { additionalProperties: false }), Type.Null()]);

export const Address = Type.String({
  pattern: '^0x[0-9a-fA-F]{40}$',
  description: 'Ethereum address (0x + 40 hex digits)',
});

/** Page size for list endpoints that are not bounded by the contract. */
export const listLimit = (max: number, fallback: number) =>
  Type.Optional(Type.Integer({ minimum: 1, maximum: max, default: fallback, description: `1 to ${max}, default ${fallback}` }));

const ERROR_STATUSES = {
  400: 'malformed body, invalid enum or decimal, insufficient balance',
  401: 'missing or expired session or key',
  403: 'wrong scope, IP not allowed, or action not permitted',
  404: 'unknown market, order or record',
  409: 'duplicate clientOrderId or conflicting state',
  422: 'business rejection by the engine',
  429: 'rate limited',
  500: 'internal error',
  503: 'the core is unavailable',
} as const;
type ErrorStatus = keyof typeof ERROR_STATUSES;

/** `{ 200: ok, 400: ErrorBody, ... }` for the statuses the route can return. */
export function responses<S extends Record<number, TSchema>>(ok: S, statuses: readonly ErrorStatus[] = [400, 401, 403, 429]) {
  const out: Record<number, TSchema> = { ...ok };
  for (const status of statuses) out[status] = { ...ErrorBody, description: ERROR_STATUSES[status] };
  return out as S & Record<ErrorStatus, TSchema>;
}
