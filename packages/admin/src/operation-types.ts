import type { components, operations } from './generated/openapi.js';
import type { OperationId } from './generated/operations.js';

export type { OperationId };

type Op<Id extends OperationId> = operations[Id];
type Defined<T> = Exclude<T, undefined>;

/** The path parameters of an operation (`{}` when it has none). */
export type PathParams<Id extends OperationId> = [Defined<Op<Id>['parameters']['path']>] extends [never]
  ? Record<string, never>
  : Defined<Op<Id>['parameters']['path']>;

/** The query parameters of an operation (`{}` when it has none). */
export type QueryParams<Id extends OperationId> = [Defined<Op<Id>['parameters']['query']>] extends [never]
  ? Record<string, never>
  : Defined<Op<Id>['parameters']['query']>;

/** The JSON body an operation takes (`never` when it takes none). */
export type RequestBody<Id extends OperationId> =
  Defined<Op<Id>['requestBody']> extends {
    content: { 'application/json': infer B };
  }
    ? B
    : never;

type SuccessStatus = 200 | 201 | 202 | 204;
type Success<R> = { [S in keyof R]: S extends SuccessStatus ? R[S] : never }[keyof R];
type ContentOf<R> = R extends { content: { 'application/json': infer T } }
  ? T
  : R extends { content: { 'text/csv': infer T } }
    ? T
    : undefined;

/** What an operation answers on success (`undefined` for 204 No Content). */
export type Result<Id extends OperationId> = ContentOf<Success<Op<Id>['responses']>>;

/** A schema of the document's components, by name. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];
