import { ErrorCodes, RESERVED_CLAIMS } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import { prepared } from '../../db/prepared.js';
import { badRequest, TesseraError } from '../../errors.js';
import type { ClaimsSource } from '../../tokens/token.service.js';

export const MAX_CLAIMS_BYTES = 1000;
const MAX_DEPTH = 4;
const NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

/** Depth of a JSON value: a scalar is 0, `{"a":1}` is 1. Throws for non-JSON values. */
function depth(value: unknown, path: string): number {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return 0;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw badRequest(`claim ${path} is not a finite number`, ErrorCodes.invalidClaims);
    return 0;
  }
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map((v, i) => depth(v, `${path}[${i}]`)));
  if (typeof value === 'object') {
    return (
      1 +
      Math.max(
        0,
        ...Object.entries(value as Record<string, unknown>).map(([k, v]) => depth(v, `${path}.${k}`)),
      )
    );
  }
  throw badRequest(`claim ${path} is not a JSON value`, ErrorCodes.invalidClaims);
}

/** Checks a custom-claims object: names, reserved names, JSON values, nesting and size. */
export function validateClaims(claims: unknown): Record<string, unknown> {
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) {
    throw badRequest('claims must be a JSON object', ErrorCodes.invalidClaims);
  }
  for (const [name, value] of Object.entries(claims)) {
    if (RESERVED_CLAIMS.has(name)) {
      throw badRequest(`"${name}" is a reserved claim name and cannot be set`, ErrorCodes.reservedClaim);
    }
    if (!NAME.test(name)) {
      throw badRequest(
        `"${name.slice(0, 64)}" is not a valid claim name (letters, digits, _ . : -)`,
        ErrorCodes.invalidClaims,
      );
    }
    if (depth(value, name) > MAX_DEPTH - 1) {
      throw badRequest(
        `claim ${name} is nested more than ${MAX_DEPTH} levels deep`,
        ErrorCodes.invalidClaims,
      );
    }
  }
  const size = Buffer.byteLength(JSON.stringify(claims));
  if (size > MAX_CLAIMS_BYTES) {
    throw new TesseraError(
      413,
      ErrorCodes.claimsTooLarge,
      `custom claims are ${size} bytes serialised; the limit is ${MAX_CLAIMS_BYTES}`,
    );
  }
  return claims as Record<string, unknown>;
}

/** The integrator's custom claims per user, merged into every access token issued afterwards. */
const claimsOf = prepared((db, projectId: string, userId: string) =>
  db
    .selectFrom('user_claims')
    .select('claims')
    .where('user_id', '=', userId)
    .where('project_id', '=', projectId),
);

export class ClaimsService implements ClaimsSource {
  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  async forUser(projectId: string, userId: string): Promise<Record<string, unknown>> {
    const [row] = (await claimsOf(this.db.kysely, projectId, userId)).rows;
    return row ? (JSON.parse(row.claims) as Record<string, unknown>) : {};
  }

  async put(projectId: string, userId: string, claims: unknown): Promise<Record<string, unknown>> {
    const valid = validateClaims(claims);
    const json = JSON.stringify(valid);
    const at = this.now();
    await this.db.kysely
      .insertInto('user_claims')
      .values({ user_id: userId, project_id: projectId, claims: json, updated_at: at })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ claims: json, updated_at: at }))
      .execute();
    return valid;
  }

  async remove(projectId: string, userId: string): Promise<void> {
    await this.db.kysely
      .deleteFrom('user_claims')
      .where('user_id', '=', userId)
      .where('project_id', '=', projectId)
      .execute();
  }
}
