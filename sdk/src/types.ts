/**
 * Types derived from the generated schema (schema.ts): for any path and method of the served
 * OpenAPI document, what a request takes (path parameters, query, JSON body, each required
 * exactly when the document says so) and what a 200/201 answers; and, for the Server-Sent Events
 * routes (those whose 200 is `text/event-stream`), the message each frame carries. Nothing here is
 * written by hand per endpoint, so a route added to the service is typed after `npm run sdk:generate`.
 */
import type { paths } from './schema.ts';

export type { paths };
export type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';
export type Path = keyof paths;

/** The paths that serve `M`. */
export type PathOf<M extends Method> = {
  [P in Path]: M extends keyof paths[P] ? ([NonNullable<paths[P][M]>] extends [never] ? never : P) : never;
}[Path];

export type Operation<P extends Path, M extends Method> = M extends keyof paths[P] ? NonNullable<paths[P][M]> : never;

type Json<C> = C extends { content: { 'application/json': infer B } } ? B : never;
type Params<O> = O extends { parameters: infer X } ? X : never;

/** The JSON body of a 200 (or 201) answer. */
export type ResponseOf<P extends Path, M extends Method> = Operation<P, M> extends { responses: infer R }
  ? R extends { 200: infer S }
    ? Json<S>
    : R extends { 201: infer S }
      ? Json<S>
      : undefined
  : never;

export type BodyOf<P extends Path, M extends Method> = Json<NonNullable<Operation<P, M> extends { requestBody?: infer B } ? B : never>>;
export type QueryOf<P extends Path, M extends Method> = NonNullable<Params<Operation<P, M>> extends { query?: infer Q } ? Q : never>;
export type PathParamsOf<P extends Path, M extends Method> = NonNullable<Params<Operation<P, M>> extends { path?: infer Q } ? Q : never>;

/** `{ K?: never }` when the operation has no such part, `{ K?: T }` when it is optional, `{ K: T }` when required. */
type Slot<K extends string, T, Optional> = [T] extends [never]
  ? { [k in K]?: never }
  : true extends Optional
    ? { [k in K]?: T }
    : { [k in K]: T };

type QueryOptional<O> = Params<O> extends { query: infer Q } ? ({} extends Q ? true : false) : true; // eslint-disable-line @typescript-eslint/no-empty-object-type
type BodyOptional<O> = O extends { requestBody: unknown } ? false : true;

/** What `request(method, path, args)` takes for one operation. */
export type RequestArgs<P extends Path, M extends Method> = Slot<'params', PathParamsOf<P, M>, false> &
  Slot<'query', QueryOf<P, M>, QueryOptional<Operation<P, M>>> &
  Slot<'body', BodyOf<P, M>, BodyOptional<Operation<P, M>>>;

type EventStream<O> = O extends { responses: { 200: { content: { 'text/event-stream': infer E } } } } ? E : never;

/** The Server-Sent Events routes of the document. */
export type StreamPath = {
  [P in PathOf<'get'>]: [EventStream<Operation<P, 'get'>>] extends [never] ? never : P;
}[PathOf<'get'>];

/** The JSON message of one frame of stream `P` (the envelope `{ eventId, eventType, eventSeq, ..., payload }`). */
export type StreamMessage<P extends StreamPath> = EventStream<Operation<P, 'get'>>;
export type StreamQuery<P extends StreamPath> = QueryOf<P, 'get'>;
