/**
 * Options of {@link protectedResourceMetadata} and of the adapters' `tesseraProtectedResource`.
 *
 * @example
 * ```ts
 * const resource: ProtectedResourceOptions = {
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com/projects/pk_live_1234'],
 *   scopesSupported: ['openid', 'email', 'offline_access'],
 *   resourceName: 'Example MCP server',
 * };
 * ```
 */
export interface ProtectedResourceOptions {
  /**
   * Your resource server's identifier (RFC 9728 §2), an https URL without a fragment, e.g.
   * `https://mcp.example.com/mcp`: the `resource` clients ask tokens for (RFC 8707), and so their
   * `aud`. Give the same value as the verifier's `resource` option.
   */
  resource: string;
  /**
   * The authorization servers' issuer URLs. For Tessera, the project's own URL
   * `${issuer}/projects/${apiKeyId}`: its metadata names the project's registration endpoint.
   */
  authorizationServers: readonly string[];
  /** Scopes clients should ask for (`scopes_supported`). */
  scopesSupported?: readonly string[];
  /** A human-readable name (`resource_name`). */
  resourceName?: string;
  /** A page of documentation for developers (`resource_documentation`). */
  resourceDocumentation?: string;
}

/**
 * RFC 9728 Protected Resource Metadata, as JSON members.
 *
 * @example
 * ```ts
 * import { protectedResourceMetadata } from '@tessera/verify';
 *
 * const body = protectedResourceMetadata({
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com/projects/pk_live_1234'],
 * });
 * // { resource, authorization_servers, bearer_methods_supported: ['header'] }
 * ```
 */
export function protectedResourceMetadata(options: ProtectedResourceOptions): Record<string, unknown> {
  const o = checkResourceOptions(options);
  return {
    resource: o.resource,
    authorization_servers: [...o.authorizationServers],
    bearer_methods_supported: ['header'],
    ...(o.scopesSupported ? { scopes_supported: [...o.scopesSupported] } : {}),
    ...(o.resourceName ? { resource_name: o.resourceName } : {}),
    ...(o.resourceDocumentation ? { resource_documentation: o.resourceDocumentation } : {}),
  };
}

/**
 * Where a resource's metadata is published (RFC 9728 §3.1): `/.well-known/oauth-protected-resource`
 * inserted between the host and the resource's path, e.g. `https://mcp.example.com/mcp` →
 * `https://mcp.example.com/.well-known/oauth-protected-resource/mcp`. The value of the
 * `resource_metadata` attribute of the middleware's challenges (the `resourceMetadata` option).
 *
 * @example
 * ```ts
 * const url = protectedResourceMetadataUrl('https://mcp.example.com/mcp');
 * app.use('/mcp', tesseraAuth(verifier, { resourceMetadata: url }));
 * ```
 */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(checkResource(resource));
  return `${url.origin}${metadataPaths(resource)[0]}`;
}

/**
 * The paths the metadata is served at: the path-inserted form first (RFC 9728 §3.1) and, for a
 * resource with a path, the root form too (clients that probe the root when the first is missing).
 */
export function metadataPaths(resource: string): string[] {
  const path = new URL(resource).pathname.replace(/\/$/, '');
  const root = '/.well-known/oauth-protected-resource';
  return path ? [`${root}${path}`, root] : [root];
}

function checkResource(resource: unknown): string {
  if (typeof resource !== 'string' || !URL.canParse(resource))
    throw new TypeError(
      '"resource" must be the absolute URL of your resource server, e.g. https://mcp.example.com/mcp',
    );
  const url = new URL(resource);
  if (!/^https?:$/.test(url.protocol) || url.hash || resource.includes('#'))
    throw new TypeError('"resource" must be an http(s) URL without a fragment (RFC 8707)');
  return resource;
}

/** Checks the options once, at start, with a message that says what to fix. */
export function checkResourceOptions(options: ProtectedResourceOptions): ProtectedResourceOptions {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('protected resource metadata needs an options object');
  checkResource(options.resource);
  const servers = options.authorizationServers;
  if (
    !Array.isArray(servers) ||
    servers.length === 0 ||
    !servers.every((s) => typeof s === 'string' && URL.canParse(s))
  )
    throw new TypeError('"authorizationServers" must be a non-empty array of issuer URLs');
  if (
    options.scopesSupported !== undefined &&
    (!Array.isArray(options.scopesSupported) || !options.scopesSupported.every((s) => typeof s === 'string'))
  )
    throw new TypeError('"scopesSupported" must be an array of strings');
  return options;
}

/** What every adapter serves: the paths, and the prepared answer (JSON, cacheable, any origin). */
export function metadataAnswer(options: ProtectedResourceOptions): {
  paths: string[];
  body: string;
  headers: Record<string, string>;
} {
  return {
    paths: metadataPaths(checkResourceOptions(options).resource),
    body: JSON.stringify(protectedResourceMetadata(options)),
    headers: {
      'Content-Type': 'application/json',
      'Cache-Control': 'public, max-age=3600',
      // Public metadata: browser-based clients read it too.
      'Access-Control-Allow-Origin': '*',
    },
  };
}
