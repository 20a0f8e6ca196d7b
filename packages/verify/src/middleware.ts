// The steps every adapter runs, written once: the adapters only read the request and write the
// answer in their framework's terms.
import { parseBearer } from './bearer.js';
import type { AccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';
import {
  type ErrorAnswer,
  type MiddlewareOptions,
  type ResolvedOptions,
  rejection,
  resolveMiddlewareOptions,
  toVerifier,
} from './http.js';
import type { ClaimRequirement } from './requirements.js';
import type { Verifier, VerifierOptions } from './verifier.js';

/** What an adapter tells the shared steps about a request. */
export interface RequestView<Req> {
  request: Req;
  method: string;
  header(name: 'authorization' | 'access-control-request-method'): string | undefined;
}

/** Go on (with claims, or none: optional mode, a preflight) or answer with `answer`. */
export type Outcome = { claims: AccessTokenClaims | undefined } | { answer: ErrorAnswer };

/** Builds the request → outcome function of `tesseraAuth`, options checked once. */
export function authenticator<Req>(
  verifierOrOptions: Verifier | VerifierOptions,
  options?: MiddlewareOptions<Req>,
): (view: RequestView<Req>) => Promise<Outcome> {
  const verifier = toVerifier(verifierOrOptions);
  const settings = resolveMiddlewareOptions(options);
  return async (view) => {
    if (settings.skipPreflight && isPreflight(view)) return { claims: undefined };
    try {
      const token = await tokenOf(view, settings);
      if (token === undefined) {
        if (settings.optional) return { claims: undefined };
        const where = settings.getToken ? 'in the request' : 'in the Authorization header';
        throw new TesseraVerifyError('missing_token', `No bearer token ${where}`);
      }
      const claims = await verifier.verify(token);
      check(claims, settings.requirements);
      return { claims };
    } catch (err) {
      return { answer: refuse(err, view.request, settings) };
    }
  };
}

/**
 * Builds the request → outcome function of `tesseraGuard`: the claims an earlier `tesseraAuth`
 * attached must pass `requirements`; none attached is `missing_token`.
 */
export function guard<Req>(
  requirements: readonly ClaimRequirement[],
  options?: Omit<MiddlewareOptions<Req>, 'optional' | 'getToken' | 'requirements'>,
): (request: Req, claims: AccessTokenClaims | undefined) => Outcome {
  if (requirements.length === 0) throw new TypeError('tesseraGuard needs at least one requirement');
  const settings = resolveMiddlewareOptions<Req>({ ...options, requirements });
  return (request, claims) => {
    try {
      if (claims === undefined) {
        throw new TesseraVerifyError('missing_token', 'This route needs a signed-in user');
      }
      check(claims, settings.requirements);
      return { claims };
    } catch (err) {
      return { answer: refuse(err, request, settings) };
    }
  };
}

function isPreflight(view: RequestView<unknown>): boolean {
  return view.method === 'OPTIONS' && view.header('access-control-request-method') !== undefined;
}

/** The token, or undefined when the request carries none (Authorization without Bearer: none). */
async function tokenOf<Req>(
  view: RequestView<Req>,
  settings: ResolvedOptions<Req>,
): Promise<string | undefined> {
  if (settings.getToken) {
    const token = await settings.getToken(view.request);
    if (token === undefined || token === null || token === '') return undefined;
    if (typeof token !== 'string') throw new TypeError('getToken must return a string, null or undefined');
    return token;
  }
  try {
    return parseBearer(view.header('authorization'));
  } catch (err) {
    if (err instanceof TesseraVerifyError && err.code === 'missing_token') return undefined;
    throw err;
  }
}

function check(claims: AccessTokenClaims, requirements: readonly ClaimRequirement[]): void {
  for (const requirement of requirements) requirement(claims);
}

// Only TesseraVerifyError becomes an answer; anything else (a bug, a throwing getToken) goes to the
// framework's error handling.
function refuse<Req>(err: unknown, request: Req, settings: ResolvedOptions<Req>): ErrorAnswer {
  if (!(err instanceof TesseraVerifyError)) throw err;
  settings.onError(err, request);
  const answer = rejection(err, settings.realm, settings.resourceMetadata);
  if (!settings.errorResponse) return answer;
  const custom = settings.errorResponse(err, request, answer);
  const status = (custom as ErrorAnswer | undefined)?.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    throw new TypeError('errorResponse must return { status: 400–599, headers?, body }');
  }
  return custom;
}
