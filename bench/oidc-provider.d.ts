// The part of oidc-provider's API the bench's child uses (the package ships no types; see
// oidc-provider-entry.ts). Its full configuration is documented in lib/helpers/defaults.js.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface Configuration {
    clients?: Array<Record<string, unknown>>;
    jwks?: { keys: Array<Record<string, unknown>> };
    cookies?: { keys?: string[] };
    claims?: Record<string, string[]>;
    findAccount?: (
      ctx: unknown,
      sub: string,
    ) => { accountId: string; claims: () => Record<string, unknown> } | undefined;
    features?: Record<string, Record<string, unknown>>;
    [option: string]: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}

/** Its default adapter: one instance per model, over a store (an LRU) shared by the models. */
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  export default class MemoryAdapter {
    constructor(model: string, store?: unknown, clockTolerance?: number);
  }
}

/** The LRU its default adapter stores in (`new LRU({ maxSize: 1000 })` by default). */
declare module 'oidc-provider/lib/helpers/lru.js' {
  export default class LRU {
    constructor(options: { maxSize: number });
  }
}
