import { ErrorCodes, RESERVED_CLAIMS } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import { badRequest, TesseraError } from '../../errors.js';
import type { ClaimsSource } from '../../tokens/token.service.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { CustomClaims } from './claims.repository.js';
import * as claimsRepository from './claims.repository.js';

export const MAX_CLAIMS_BYTES = 1000;
const MAX_DEPTH = 4;
const NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

/**
 * True when a JSON value nests at most `levels` levels (a scalar is 0, `{"a":1}` is 1). It stops
 * at the first level too deep, so a value nested thousands deep (the body parser hands those
 * over) costs `levels` stack frames, never a stack overflow. Throws for non-JSON values.
 */
function nestsWithin(value: unknown, levels: number, path: string): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw badRequest(`claim ${path} is not a finite number`, ErrorCodes.invalidClaims);
    return true;
  }
  if (typeof value !== 'object') {
    throw badRequest(`claim ${path} is not a JSON value`, ErrorCodes.invalidClaims);
  }
  if (levels === 0) return false;
  if (Array.isArray(value)) return value.every((v, i) => nestsWithin(v, levels - 1, `${path}[${i}]`));
  return Object.entries(value).every(([k, v]) => nestsWithin(v, levels - 1, `${path}.${k}`));
}

/** Checks a custom-claims object: names, reserved names, JSON values, nesting and size. */
export function validateClaims(claims: unknown): CustomClaims {
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
    if (!nestsWithin(value, MAX_DEPTH - 1, name)) {
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
  return claims as CustomClaims;
}

/** The integrator's custom claims per user, merged into every access token issued afterwards. */
export class ClaimsService implements ClaimsSource {
  constructor(
    private readonly db: Db,
    private readonly audit: AuditLog,
    private readonly now: () => number = Date.now,
  ) {}

  async forUser(projectId: string, userId: string): Promise<CustomClaims> {
    return (await claimsRepository.find(this.db.kysely, projectId, userId)) ?? {};
  }

  /** Replaces the user's claims with valid ones (a 4xx says what is wrong) and records the change. */
  async put(projectId: string, userId: string, claims: unknown): Promise<CustomClaims> {
    const valid = validateClaims(claims);
    await claimsRepository.upsert(this.db.kysely, projectId, userId, valid, this.now());
    await this.#changed(projectId, userId, Object.keys(valid));
    return valid;
  }

  async remove(projectId: string, userId: string): Promise<void> {
    await claimsRepository.remove(this.db.kysely, projectId, userId);
    await this.#changed(projectId, userId, []);
  }

  #changed(projectId: string, userId: string, names: string[]): Promise<void> {
    return this.audit.record({
      projectId,
      userId,
      type: 'claims.changed',
      data: { names: names.join(',').slice(0, 500) },
    });
  }
}
