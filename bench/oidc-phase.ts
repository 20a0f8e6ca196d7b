// The OIDC figures (bench/README.md, "The OIDC figures"): (h) Tessera's full authorization code
// flow, and the code exchange alone on Tessera (i) and on oidc-provider (j: JWT access tokens, the
// same bundle as Tessera's; j′: its default opaque access tokens), each server one process, the
// exchanges measured in interleaved rounds. Shared by run.ts and oidc.ts.
import { readFileSync } from 'node:fs';
import { type Child, startChild } from './children.js';
import { combine, cpuPerOp, type LoadResult, type LoadSettings, window } from './load.js';
import {
  codeExchanges,
  type MintedCode,
  mintProviderCodes,
  mintTesseraCodes,
  tesseraFlows,
} from './oidc-flow.js';
import { REDIRECT_URI, SCOPE } from './oidc-shared.js';
import { freePort } from './tessera.js';

/** The code exchange's servers, in the order of a round's first windows. */
export const EXCHANGERS = ['tessera', 'provider', 'providerOpaque'] as const;
export type Exchanger = (typeof EXCHANGERS)[number];

export interface OidcFigures {
  /** (h) Tessera's full flow (5 requests), flows/s. */
  flows: LoadResult;
  /** (i), (j), (j′): every round's windows combined. */
  exchange: Record<Exchanger, LoadResult>;
  /** Each round's windows. */
  rounds: Array<Record<Exchanger, LoadResult>>;
  /** Codes minted for the warm-ups and the measured windows, per server. */
  minted: Record<Exchanger, number>;
  providerVersion: string;
}

/**
 * At most this many seconds of minting a round: a code lives 60 s on both servers, and the last
 * of a round's windows starts after the minting and the other two windows.
 */
const MINT_SECONDS_BUDGET = 25;
/** Codes per warm-up, on each server. */
const WARM_UP_CODES = 300;
const MIN_CODES = 300;
/** Requests of one full flow (tesseraFlows). */
const FLOW_REQUESTS = 5;

export const PROVIDER_VERSION = (
  JSON.parse(
    readFileSync(new URL('../node_modules/oidc-provider/package.json', import.meta.url), 'utf8'),
  ) as { version: string }
).version;

/** Registers the bench's client on Tessera through the integrator API (RFC 7591): public, first-party. */
export async function registerTesseraClient(tessera: Child): Promise<string> {
  const { url, apiKeyId, apiKeySecret } = tessera.ready;
  if (!apiKeyId || !apiKeySecret) throw new Error('the Tessera child gave no API key credentials');
  const response = await fetch(`${url}/v1/clients`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from(`${apiKeyId}:${apiKeySecret}`).toString('base64')}`,
    },
    body: JSON.stringify({
      client_name: 'Bench',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      scope: SCOPE,
      first_party: true,
    }),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST /v1/clients answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { client_id: string }).client_id;
}

async function startProvider(accessToken: 'jwt' | 'opaque'): Promise<Child> {
  return startChild(
    `oidc-provider ${PROVIDER_VERSION} (${accessToken} access tokens)`,
    new URL('./oidc-provider-entry.ts', import.meta.url),
    { BENCH_OP_PORT: String(await freePort()), BENCH_OP_ACCESS_TOKEN: accessToken },
  );
}

/**
 * Measures the OIDC figures against `tessera` (one process, made by server-entry.ts); starts and
 * stops the two oidc-provider children itself. The code exchange's windows are sized in codes, not
 * seconds (a code works once and lives 60 s on both servers): each round mints, through the real
 * sign-in pages of each server and all three at once, about `duration / rounds` seconds' worth of
 * codes at the rate seen so far, then measures one window per server, the order rotating.
 */
export async function measureOidc(
  tessera: Child,
  load: LoadSettings,
  log: (message: string) => void,
): Promise<OidcFigures> {
  const clientId = await registerTesseraClient(tessera);
  const url = tessera.ready.url;
  const [jwt, opaque] = await Promise.all([startProvider('jwt'), startProvider('opaque')]);
  try {
    log(
      `OIDC: Tessera client ${clientId}; ${jwt.name} on ${jwt.ready.url}, ${opaque.name} on ${opaque.ready.url}`,
    );

    // (h): a warm-up, whose rate sizes the window in whole flows: every connection runs the same
    // number of complete flows (5 requests each), so no flow is cut off by the window's end with
    // its CPU counted and its tokens not.
    const flowLoad = { ...tesseraFlows(url, clientId, 'flow'), server: tessera };
    const warmFlows = await window(flowLoad, load.connections, Math.max(1, load.warmup));
    const perConnection = Math.max(2, Math.round((warmFlows.rate * load.duration) / load.connections));
    const flows = await window(flowLoad, load.connections, {
      amount: FLOW_REQUESTS * perConnection * load.connections,
    });
    log(
      `(h) full flows: ${flows.rate.toFixed(0)} flows/s, ${cpuPerOp(flows).toFixed(0)} µs of server CPU a flow`,
    );

    const servers: Record<Exchanger, Child> = { tessera, provider: jwt, providerOpaque: opaque };
    const minted: Record<Exchanger, number> = { tessera: 0, provider: 0, providerOpaque: 0 };
    let batch = 0;
    const mintAll = async (counts: Record<Exchanger, number>) => {
      const started = performance.now();
      const tag = `x${batch++}`;
      const [t, p, o] = await Promise.all([
        mintTesseraCodes(url, clientId, counts.tessera, `code-${tag}`),
        mintProviderCodes(jwt.ready.url, counts.provider, `user-${tag}`),
        mintProviderCodes(opaque.ready.url, counts.providerOpaque, `user-${tag}`),
      ]);
      const seconds = (performance.now() - started) / 1000;
      const codes: Record<Exchanger, MintedCode[]> = { tessera: t, provider: p, providerOpaque: o };
      for (const name of EXCHANGERS) minted[name] += codes[name].length;
      return { codes, seconds };
    };
    const exchanges = (name: Exchanger, codes: MintedCode[]) => {
      const server = servers[name];
      return name === 'tessera'
        ? { ...codeExchanges(url, '/oauth/token', clientId, codes), server }
        : { ...codeExchanges(server.ready.url, '/token', 'bench-public', codes), server };
    };

    // Warm-ups, which also give the first rates to size the rounds by.
    const warm = await mintAll({
      tessera: WARM_UP_CODES,
      provider: WARM_UP_CODES,
      providerOpaque: WARM_UP_CODES,
    });
    /** Codes each minter made per second while all three ran. */
    const mintRate = Math.min(...EXCHANGERS.map((n) => warm.codes[n].length)) / warm.seconds;
    const rate: Record<Exchanger, number> = { tessera: 0, provider: 0, providerOpaque: 0 };
    for (const name of EXCHANGERS) {
      const result = await window(exchanges(name, warm.codes[name]), load.connections, {
        amount: warm.codes[name].length,
      });
      rate[name] = result.rate;
    }
    log(
      `OIDC warm-ups: ${EXCHANGERS.map((n) => `${n} ${rate[n].toFixed(0)}/s`).join(', ')}; ` +
        `minting ${mintRate.toFixed(0)} codes/s per server`,
    );

    const slice = load.duration / load.rounds;
    const rounds: OidcFigures['rounds'] = [];
    for (let r = 0; r < load.rounds; r++) {
      const counts = {} as Record<Exchanger, number>;
      for (const name of EXCHANGERS)
        counts[name] = Math.round(
          Math.min(Math.max(MIN_CODES, rate[name] * slice), mintRate * MINT_SECONDS_BUDGET),
        );
      const { codes } = await mintAll(counts);
      const round = {} as Record<Exchanger, LoadResult>;
      for (let i = 0; i < EXCHANGERS.length; i++) {
        const name = EXCHANGERS[(i + r) % EXCHANGERS.length]!;
        const workload = exchanges(name, codes[name]);
        round[name] = await window(workload, load.connections, { amount: codes[name].length });
        const failure = workload.firstFailure();
        if (failure) log(`OIDC round ${r + 1}, ${name}: the first refused exchange got ${failure}`);
        rate[name] = round[name].rate;
      }
      rounds.push(round);
      log(
        `OIDC round ${r + 1}: ` +
          EXCHANGERS.map(
            (n) =>
              `${n} ${round[n].rate.toFixed(0)}/s (${cpuPerOp(round[n]).toFixed(0)} µs, ${round[n].failed} failed)`,
          ).join(', '),
      );
    }
    const exchange = {} as Record<Exchanger, LoadResult>;
    for (const name of EXCHANGERS) exchange[name] = combine(rounds.map((round) => round[name]));
    return { flows, exchange, rounds, minted, providerVersion: PROVIDER_VERSION };
  } finally {
    await Promise.allSettled([jwt.stop(), opaque.stop()]);
  }
}

/** Requests per server core: how many exchanges a second one core would do (1,000,000 / µs per op). */
export const perCore = (r: LoadResult) => 1e6 / cpuPerOp(r);
