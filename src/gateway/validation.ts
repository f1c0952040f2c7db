/**
 * Strict request validation. Fastify's default Ajv setup coerces a JSON number into a string
 * and strips unknown fields (research/stack.md 2.1); we validate with TypeBox's compiler instead,
 * which refuses both. Decimal fields are typed with the `decimal` format: any failure on such a
 * field (wrong type, bad grammar) becomes 400 `INVALID_DECIMAL` rather than a generic schema
 * error, as decisions.md "Numbers" requires. Range, tick and step checks happen after parsing.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import { Value } from 'typebox/value';
import { MAX_INTEGER_DIGITS, parseDecimal, SCALE_DIGITS } from '../core/money.ts';
import { ApiError } from './errors.ts';

const DECIMAL_FORMAT = 'decimal';
Format.Set(DECIMAL_FORMAT, (value: string) => parseDecimal(value, { allowNegative: true }).ok);

/** A decimal string field (prices, sizes, amounts). */
export const Decimal = (description?: string) =>
  Type.String({
    format: DECIMAL_FORMAT,
    maxLength: MAX_INTEGER_DIGITS + SCALE_DIGITS + 2,
    description: description ?? 'decimal string, plain notation (e.g. "12.5"); never a JSON number',
    examples: ['12.5'],
  });

/** Collects the JSON-pointer schema paths of every decimal-format node in a schema. */
function decimalPaths(schema: unknown, path = '#', out = new Set<string>()): Set<string> {
  if (schema === null || typeof schema !== 'object') return out;
  const node = schema as Record<string, unknown>;
  if (node.format === DECIMAL_FORMAT) out.add(path);
  for (const [key, child] of Object.entries(node)) {
    if (key === 'properties' && child !== null && typeof child === 'object') {
      for (const [name, sub] of Object.entries(child)) decimalPaths(sub, `${path}/properties/${name}`, out);
    } else if (key === 'items' || key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      if (Array.isArray(child)) child.forEach((sub, i) => decimalPaths(sub, `${path}/${key}/${i}`, out));
      else decimalPaths(child, `${path}/${key}`, out);
    }
  }
  return out;
}

interface TypeBoxError {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  message: string;
  params: Record<string, unknown>;
}

/** Fastify validator compiler: TypeBox check, no coercion of bodies, decimal-aware errors. */
export const strictValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const decimals = decimalPaths(schema);
  const where = httpPart === 'body' ? 'body' : httpPart === 'querystring' ? 'query' : String(httpPart);
  const strictText = httpPart === 'body' ? null : textRules(schema);
  return (value: unknown) => {
    // Query strings and path params arrive as text: converting "10" to 10 there is expected, but
    // only from plain integer or boolean text ("1.5", "1e3", "0x10" and "" are refused).
    if (strictText !== null) {
      const bad = strictText(value);
      if (bad !== null) return { error: new ApiError('VALIDATION_ERROR', `${where}.${bad}`) };
    }
    const converted = httpPart === 'body' ? value : Value.Convert(schema, value);
    if (check.Check(converted)) return { value: converted };
    const errors = [...check.Errors(converted)] as unknown as TypeBoxError[];
    const decimal = errors.find((e) => decimals.has(e.schemaPath));
    if (decimal !== undefined) {
      const field = fieldName(where, decimal.instancePath);
      return { error: new ApiError('INVALID_DECIMAL', `${field} must be a decimal string in plain notation`) };
    }
    return { error: new ApiError('VALIDATION_ERROR', describe(where, errors)) };
  };
};

function fieldName(where: string, instancePath: string): string {
  return instancePath === '' ? where : `${where}${instancePath.replaceAll('/', '.')}`;
}

function describe(where: string, errors: TypeBoxError[]): string {
  const first = pickMostSpecific(errors);
  if (first === undefined) return `${where} is invalid`;
  const field = fieldName(where, first.instancePath);
  if (first.keyword === 'additionalProperties') {
    const extra = (first.params.additionalProperties as string[] | undefined)?.join(', ') ?? '';
    return `${field} has unknown field(s): ${extra}`;
  }
  if (first.keyword === 'required') return `${field} is missing required field(s): ${String(first.params.requiredProperties ?? '')}`;
  if (first.keyword === 'enum') {
    const options = (first.params.allowedValues as unknown[] | undefined) ?? [];
    return `${field} must be one of ${options.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  if (first.keyword === 'anyOf' || first.keyword === 'const') {
    const options = errors
      .filter((e) => e.instancePath === first.instancePath && e.keyword === 'const')
      .map((e) => JSON.stringify(e.params.allowedValue));
    if (options.length > 0) return `${field} must be one of ${options.join(', ')}`;
    const types = errors.filter((e) => e.instancePath === first.instancePath && e.keyword === 'type').map((e) => String(e.params.type));
    if (types.length > 0) return `${field} must be ${types.join(' or ')}`;
  }
  return `${field} ${first.message}`;
}

/**
 * Prefers the error that explains the field (enum options, types) over the wrapper errors. A union
 * whose branch failed inside a field (an optional body `{ marketId: 1 }` against object-or-null)
 * is explained by that field's error, not by "must match a schema in anyOf".
 */
function pickMostSpecific(errors: TypeBoxError[]): TypeBoxError | undefined {
  const union = errors.find((e) => e.keyword === 'anyOf');
  const inside = union === undefined ? undefined : errors.find((e) => e.keyword !== 'anyOf' && e.instancePath.startsWith(`${union.instancePath}/`));
  return (
    errors.find((e) => e.keyword === 'additionalProperties') ??
    errors.find((e) => e.keyword === 'required') ??
    errors.find((e) => e.keyword === 'enum') ??
    inside ??
    union ??
    errors.find((e) => e.keyword !== 'boolean') ??
    errors[0]
  );
}

/**
 * For a flat querystring/params object schema: a checker that refuses text which Value.Convert
 * would otherwise coerce loosely into an integer, number or boolean.
 */
function textRules(schema: unknown): ((value: unknown) => string | null) | null {
  const props = (schema as { properties?: Record<string, { type?: unknown; anyOf?: unknown }> }).properties;
  if (props === undefined) return null;
  const kinds = new Map<string, 'integer' | 'number' | 'boolean'>();
  for (const [name, p] of Object.entries(props)) {
    if (p.type === 'integer' || p.type === 'number' || p.type === 'boolean') kinds.set(name, p.type);
  }
  if (kinds.size === 0) return null;
  return (value) => {
    if (value === null || typeof value !== 'object') return null;
    for (const [name, kind] of kinds) {
      const v = (value as Record<string, unknown>)[name];
      if (typeof v !== 'string') continue;
      const ok = kind === 'boolean' ? v === 'true' || v === 'false' : /^-?(0|[1-9][0-9]{0,15})$/.test(v) || (kind === 'number' && /^-?(0|[1-9][0-9]{0,15})\.[0-9]{1,15}$/.test(v));
      if (!ok) return `${name} must be ${kind === 'boolean' ? 'true or false' : `a plain ${kind}`}`;
    }
    return null;
  };
}
